// A stream writer's text deltas as JSON string literals. Most deltas need no escaping, and under load a
// JSON.stringify call per delta cost more than testing for the characters it would escape.

/** What JSON.stringify escapes in a string: the quote, the backslash, controls, and surrogates (lone ones; a pair is left to it). */
const ESCAPED = /["\\\u0000-\u001f\ud800-\udfff]/;

/** The string as JSON.stringify writes it, byte for byte. */
export const jsonString = (text: string): string => (ESCAPED.test(text) ? JSON.stringify(text) : `"${text}"`);
