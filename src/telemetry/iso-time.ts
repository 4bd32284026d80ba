// RFC 3339 UTC timestamps with milliseconds, as Date#toISOString writes them, for lines written per
// request (the request-log record, log lines): the date and time up to the second are formatted once per
// second and reused, which costs a fraction of a Date and its formatting on every line.

let second = Number.NaN;
let prefix = "";

/** `2026-11-26T23:45:12.123Z` for epoch milliseconds `ms`; the same text as new Date(ms).toISOString(). */
export function isoTime(ms: number): string {
  const whole = Math.floor(ms);
  const s = Math.floor(whole / 1000);
  if (s !== second) {
    const iso = new Date(whole).toISOString();
    // Years past 9999 (or before 0) are written with a sign and six digits; the cached form does not apply.
    if (iso.length !== 24) return iso;
    second = s;
    prefix = iso.slice(0, 20);
  }
  const milli = whole - s * 1000;
  return `${prefix}${milli < 10 ? "00" : milli < 100 ? "0" : ""}${milli}Z`;
}
