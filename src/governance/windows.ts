// Limit windows, calendar-aligned in UTC (gaps.md): a minute starts at :00, a day at 00:00 UTC, a month
// on the 1st. `total` never rolls over. Times are epoch milliseconds.

export const WINDOWS = ["minute", "hour", "day", "month", "total"] as const;
export type LimitWindow = (typeof WINDOWS)[number];

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Start of the window that holds `nowMs`. */
export function windowStart(window: LimitWindow, nowMs: number): number {
  switch (window) {
    case "minute":
      return nowMs - mod(nowMs, MINUTE);
    case "hour":
      return nowMs - mod(nowMs, HOUR);
    case "day":
      return nowMs - mod(nowMs, DAY);
    case "month": {
      const d = new Date(nowMs);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    }
    case "total":
      return 0;
  }
}

/** First instant after the window that holds `nowMs` (Infinity for `total`). */
export function windowEnd(window: LimitWindow, nowMs: number): number {
  switch (window) {
    case "minute":
      return windowStart(window, nowMs) + MINUTE;
    case "hour":
      return windowStart(window, nowMs) + HOUR;
    case "day":
      return windowStart(window, nowMs) + DAY;
    case "month": {
      // Date.UTC carries month 12 into January of the next year, and knows each month's length.
      const d = new Date(nowMs);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
    }
    case "total":
      return Infinity;
  }
}

/** Whole seconds until the window rolls over, at least 1 (a Retry-After). */
export function secondsUntilEnd(window: LimitWindow, nowMs: number): number {
  const end = windowEnd(window, nowMs);
  if (end === Infinity) return 0;
  return Math.max(1, Math.ceil((end - nowMs) / 1000));
}

/** Floor modulo, so instants before 1970 still align. */
const mod = (a: number, b: number) => ((a % b) + b) % b;
