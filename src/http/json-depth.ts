// A bound on JSON nesting, checked on the text before any parse. Deeply nested input (10^5
// levels in 200 KB) made JSON.parse and the recursive walks after it block the event loop for
// seconds and end in a stack overflow (a 500); one linear pass over the text refuses it first.

/** Deepest nesting of objects and arrays a client body may have, on either plane. */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/**
 * True when the JSON text nests objects/arrays deeper than `max`; brackets inside strings do not count.
 * One pass over its UTF-16 code units (the brackets, quote and backslash are single units). Malformed
 * text is not judged here (JSON.parse refuses it after); only its depth is.
 */
export function jsonTextTooDeep(text: string, max: number = MAX_JSON_DEPTH): boolean {
  // A text with fewer characters than the bound cannot exceed it.
  if (text.length <= max) return false;
  let depth = 0;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const unit = text.charCodeAt(i);
    if (unit === QUOTE) {
      for (i++; i < length; i++) {
        const inner = text.charCodeAt(i);
        if (inner === BACKSLASH) i++;
        else if (inner === QUOTE) break;
      }
    } else if (unit === OPEN_BRACE || unit === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (unit === CLOSE_BRACE || unit === CLOSE_BRACKET) {
      depth--;
    }
  }
  return false;
}

/** The error message both planes answer with, naming the rule. */
export const TOO_DEEP_MESSAGE = `The request body nests JSON objects or arrays deeper than ${MAX_JSON_DEPTH} levels.`;
