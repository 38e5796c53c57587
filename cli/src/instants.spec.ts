import { parseInstant } from "./instants";
import { CliError, EXIT } from "./exit-codes";

describe("parseInstant (--older-than, --created-after)", () => {
  const now = Date.UTC(2024, 0, 31, 12);

  it("takes epoch milliseconds, ISO dates and instants, and ages counted back from now", () => {
    expect(parseInstant("--older-than", "1700000000000", now)).toBe(1_700_000_000_000);
    expect(parseInstant("--older-than", "2024-01-01", now)).toBe(Date.UTC(2024, 0, 1));
    expect(parseInstant("--older-than", "2023-11-14T22:13:20Z", now)).toBe(1_700_000_000_000);
    expect(parseInstant("--older-than", "90d", now)).toBe(now - 90 * 86_400_000);
    expect(parseInstant("--older-than", "2w", now)).toBe(now - 14 * 86_400_000);
    expect(parseInstant("--older-than", "12h", now)).toBe(now - 12 * 3_600_000);
    expect(parseInstant("--older-than", "30m", now)).toBe(now - 30 * 60_000);
    expect(parseInstant("--older-than", "45s", now)).toBe(now - 45_000);
  });

  it("refuses anything else as a usage error naming the option and the forms it takes", () => {
    for (const text of ["last tuesday", "90 days", "-5", "2024-13-45", "1y", ""]) {
      let error: unknown;
      try {
        parseInstant("--older-than", text, now);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(CliError);
      expect((error as CliError).exitCode).toBe(EXIT.USAGE);
      expect((error as CliError).message).toContain(`--older-than '${text}' is not epoch milliseconds`);
    }
  });

  it("refuses an age reaching before 1970", () => {
    expect(() => parseInstant("--older-than", "100000d", now)).toThrow("before 1970-01-01");
  });
});
