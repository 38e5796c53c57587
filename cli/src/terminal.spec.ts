/** The confirmation destructive commands ask for (the terminal itself: test/e2e/cli-login-and-tokens.e2e.spec.ts). */
import { confirmationStep, isYes } from "./terminal";

describe("a destructive command's confirmation", () => {
  it("goes ahead with --yes, asks on a terminal, and refuses without either", () => {
    expect(confirmationStep({ yes: true, terminal: false })).toBe("proceed");
    expect(confirmationStep({ yes: true, terminal: true })).toBe("proceed");
    expect(confirmationStep({ terminal: true })).toBe("ask");
    expect(confirmationStep({ terminal: false })).toBe("refuse");
  });

  it("takes y or yes, in any case, and nothing else: no is the default", () => {
    for (const answer of ["y", "Y", "yes", " YES "]) expect([answer, isYes(answer)]).toEqual([answer, true]);
    for (const answer of ["", "n", "no", "yep", "sure", undefined])
      expect([answer, isYes(answer)]).toEqual([answer, false]);
  });
});
