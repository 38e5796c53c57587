/**
 * `mdp login`'s prompt in a real pseudo-terminal (util-linux's `script`): the prompt stays on the screen, nothing
 * typed is echoed, backspace edits, and Ctrl-C abandons. The server is unreachable: only the prompt is under test.
 */
import { spawn } from "node:child_process";
import path from "node:path";

const MDP = path.join(__dirname, "..", "bin", "mdp.cjs");

/** Runs `mdp login` in a pty, typing `keys` once the prompt shows; resolves to everything the terminal showed. */
function loginInPty(keys: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env };
    delete env.MDP_TOKEN;
    const child = spawn("script", ["-qfec", `${process.execPath} ${MDP} login http://127.0.0.1:9`, "/dev/null"], {
      env,
    });
    let screen = "";
    let typed = false;
    child.stdout.on("data", (chunk: Buffer) => {
      screen += chunk.toString("utf8");
      if (!typed && screen.includes("access token: ")) {
        typed = true;
        child.stdin.write(keys);
      }
    });
    child.on("error", reject);
    child.on("close", () => resolve(screen));
  });
}

describe("mdp login's prompt", () => {
  it("keeps the prompt, echoes nothing typed, and takes the token with its corrections", async () => {
    const screen = await loginInPty("secret-to\u007f\u007fken\r");
    expect(screen.startsWith("access token: ")).toBe(true);
    // No line erase or cursor move after the prompt: the terminal shows "access token: " until Enter.
    const afterPrompt = screen.slice("access token: ".length).split("\r\n")[0];
    expect(afterPrompt).toBe("");
    expect(screen).not.toContain("secret");
    expect(screen).toContain("cannot reach http://127.0.0.1:9"); // the token was taken, and sent
  }, 20_000);

  it("abandons the login on Ctrl-C", async () => {
    const screen = await loginInPty("abc\u0003");
    expect(screen).toContain("login abandoned");
    expect(screen).not.toContain("abc");
  }, 20_000);
});
