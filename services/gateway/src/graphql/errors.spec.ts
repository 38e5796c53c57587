import { abbreviateEchoes, ECHO_LIMIT } from "./errors";

describe("abbreviateEchoes", () => {
  const long = "x".repeat(5_000);

  it("cuts quoted values and long unquoted runs to the limit, leaving the rest of the message", () => {
    expect(abbreviateEchoes(`Unknown operation named "${long}".`)).toBe(
      `Unknown operation named "${"x".repeat(ECHO_LIMIT)}…".`,
    );
    expect(abbreviateEchoes(`got invalid value { ${long}: 1 }; Field "${long}" is not defined`)).toBe(
      `got invalid value { ${"x".repeat(ECHO_LIMIT)}… 1 }; Field "${"x".repeat(ECHO_LIMIT)}…" is not defined`,
    );
    const words = "a long message of many short words ".repeat(10);
    expect(abbreviateEchoes(words)).toBe(words);
  });

  it("is idempotent, caps the whole message at 1,000 characters and keeps surrogate pairs whole", () => {
    const once = abbreviateEchoes(`"${long}" ${"word ".repeat(1_000)}`);
    expect(once.length).toBeLessThanOrEqual(1_000);
    expect(abbreviateEchoes(once)).toBe(once);
    const emoji = abbreviateEchoes(`"${"x".repeat(ECHO_LIMIT - 1)}${"😀".repeat(100)}"`);
    expect(emoji).toBe(`"${"x".repeat(ECHO_LIMIT - 1)}…"`);
    expect(abbreviateEchoes(emoji)).toBe(emoji);
  });
});
