// A stream writer's text deltas as JSON string literals. Most deltas need no escaping, and under load a
// JSON.stringify call per delta cost more than testing for the characters it would escape.

/** What JSON.stringify escapes in a string: the quote, the backslash, controls, and surrogates (lone ones; a pair is left to it). */
const ESCAPED = /["\\\u0000-\u001f\ud800-\udfff]/;

/** The string as JSON.stringify writes it, byte for byte. */
export const jsonString = (text: string): string => (ESCAPED.test(text) ? JSON.stringify(text) : `"${text}"`);

/**
 * The fixed text of a delta's wire event around its JSON string (SSE framing and every member but the
 * delta), serialised once per block. `open` and `close` hold the string's quotes, for a delta with nothing
 * to escape; `before` and `after` are without them, for one JSON.stringify writes.
 */
export interface TextAround {
  readonly open: string;
  readonly close: string;
  readonly before: string;
  readonly after: string;
}

/**
 * JavaScriptCore keeps a concatenation as a rope of its pieces until it is read. A rope kept as a piece of
 * every delta's event would be walked again each time one of them is written: resolved here, once.
 */
const resolved = (text: string): string => (text.charCodeAt(0), text);

export const textAround = (before: string, after: string): TextAround => ({ open: resolved(`${before}"`), close: resolved(`"${after}`), before: resolved(before), after: resolved(after) });

/**
 * A delta's event: the same bytes as `before + jsonString(text) + after`, in three pieces rather than
 * seven (the string's quotes are in the fixed text), so writing a stream's events walks fewer of them.
 */
export const aroundText = (around: TextAround, text: string): string =>
  ESCAPED.test(text) ? `${around.before}${JSON.stringify(text)}${around.after}` : `${around.open}${text}${around.close}`;
