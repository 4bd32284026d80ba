// A bound on JSON nesting, checked on the raw bytes before any parse. Deeply nested input (10^5
// levels in 200 KB) made JSON.parse and the recursive walks after it block the event loop for
// seconds and end in a stack overflow (a 500); one linear pass over the bytes refuses it first.

/** Deepest nesting of objects and arrays a client body may have, on either plane. */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/**
 * True when the JSON text nests objects/arrays deeper than `max`. Brackets inside strings do not count.
 * Malformed text is not judged here (JSON.parse refuses it after); only its depth is.
 */
export function jsonTooDeep(bytes: Uint8Array, max: number = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  const length = bytes.length;
  for (let i = 0; i < length; i++) {
    const byte = bytes[i]!;
    if (byte === QUOTE) {
      // Skip the string: a backslash escapes the next byte, whatever it is.
      for (i++; i < length; i++) {
        const inner = bytes[i]!;
        if (inner === BACKSLASH) i++;
        else if (inner === QUOTE) break;
      }
    } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
      depth--;
    }
  }
  return false;
}

const encoder = new TextEncoder();

/** The same check on text already decoded (the admin plane reads bodies as text). */
export function jsonTextTooDeep(text: string, max: number = MAX_JSON_DEPTH): boolean {
  // Fast path: a text with fewer brackets than the bound cannot exceed it.
  if (text.length <= max) return false;
  return jsonTooDeep(encoder.encode(text), max);
}

/** The error message both planes answer with, naming the rule. */
export const TOO_DEEP_MESSAGE = `The request body nests JSON objects or arrays deeper than ${MAX_JSON_DEPTH} levels.`;
