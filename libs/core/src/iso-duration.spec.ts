import { isoDurationSeconds } from "./iso-duration";

describe("isoDurationSeconds", () => {
  it.each([
    ["PT1H", 3600],
    ["P1D", 86_400],
    ["P1W", 7 * 86_400],
    ["P1M", 30 * 86_400],
    ["P1Y", 365 * 86_400],
    ["p30d", 30 * 86_400],
    ["P1DT12H", 36 * 3600],
    ["PT90M", 5400],
  ])("reads %s as %i seconds (a month 30 days, a year 365)", (text, seconds) => {
    expect(isoDurationSeconds(text)).toBe(seconds);
  });

  it.each(["", "P", "PT", "P0D", "30 days", "P1.5D", "-P1D", "P1H", "PT1D"])("refuses %p", (text) => {
    expect(isoDurationSeconds(text)).toBeNull();
  });
});
