/**
 * Token lifetimes as ISO-8601 durations (createAccessToken's durationIso, ACCESS_TOKEN_ALLOWED_DURATIONS). Calendar
 * units are fixed lengths, as DataHub's duration enum counts them: a month is 30 days, a year 365, a week 7 days.
 */
const ISO_DURATION =
  /^P(?:(\d{1,4})Y)?(?:(\d{1,5})M)?(?:(\d{1,5})W)?(?:(\d{1,6})D)?(?:T(?:(\d{1,7})H)?(?:(\d{1,9})M)?(?:(\d{1,10})S)?)?$/;
const DAY = 86_400;
const UNIT_SECONDS = [365 * DAY, 30 * DAY, 7 * DAY, DAY, 3600, 60, 1] as const;

/** The duration in seconds, or null when `text` is not a whole-unit ISO-8601 duration longer than zero. */
export function isoDurationSeconds(text: string): number | null {
  const match = ISO_DURATION.exec(text.trim().toUpperCase());
  // "P" and "PT" alone match the pattern but say nothing.
  if (!match || match.slice(1).every((part) => part === undefined)) return null;
  const seconds = UNIT_SECONDS.reduce((sum, unit, i) => sum + Number(match[i + 1] ?? 0) * unit, 0);
  return seconds > 0 && Number.isSafeInteger(seconds) ? seconds : null;
}
