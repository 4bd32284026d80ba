// Same-protocol streams: OpenAI streams usage only when asked (`stream_options.include_usage`; the SDK
// does not ask by default), so a metered stream asks on the client's behalf and takes what that added
// back out of the relayed bytes. Per the API reference, asking adds a last chunk with `choices: []` and
// the usage before `data: [DONE]`, and a `"usage":null` member on every other chunk; both are cut, so
// the client reads the bytes it would have read had the gateway not asked.
import type { ByteFilter } from "../types.ts";

/**
 * Asks for usage in `body` (in place, other stream_options kept) unless the client asked already;
 * the filter that restores the client's own stream, or undefined when the body was left as it was.
 */
export function askForStreamUsage(body: Record<string, unknown>): ByteFilter | undefined {
  const options = body.stream_options;
  const given = typeof options === "object" && options !== null && !Array.isArray(options) ? (options as Record<string, unknown>) : undefined;
  if (given?.include_usage === true) return undefined;
  body.stream_options = { ...given, include_usage: true };
  return usageCutter();
}

// Byte patterns, in OpenAI's compact JSON (and with a space after the colon, as some compatible servers write).
const NULL_USAGE = [Buffer.from(',"usage":null'), Buffer.from(', "usage": null')];
const EMPTY_CHOICES = [Buffer.from('"choices":[]'), Buffer.from('"choices": []')];
const USAGE_OBJECT = [Buffer.from('"usage":{'), Buffer.from('"usage": {')];
// An event ends at a blank line, in any of SSE's three line endings (some compatible servers write CRLF).
const EVENT_ENDS = [Buffer.from("\n\n"), Buffer.from("\r\n\r\n"), Buffer.from("\r\r")];
const EMPTY = new Uint8Array(0);
const MAX_CARRY = 65536;

/**
 * Whole events only pass (a partial one waits for its end, up to MAX_CARRY bytes): the cut is done
 * with native byte searches on each chunk, never by decoding or parsing the stream.
 */
function usageCutter(): ByteFilter {
  let carry: Buffer | undefined;
  return {
    push(chunk) {
      const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      const all = carry ? Buffer.concat([carry, bytes]) : bytes;
      const end = endBefore(all, all.length);
      if (end === 0) {
        // No event end in sight (a huge event): relayed as it is rather than held.
        if (all.length > MAX_CARRY) return ((carry = undefined), all);
        carry = all;
        return EMPTY;
      }
      carry = end < all.length ? all.subarray(end) : undefined;
      return cutEvents(all.subarray(0, end));
    },
    flush() {
      const rest = carry;
      carry = undefined;
      return rest ? cutEvents(rest) : EMPTY;
    },
  };
}

/**
 * Whole events with the usage chunk and each `"usage":null` member taken out. An event with empty
 * choices and no usage object (Azure's first chunk, with its prompt_filter_results) stays. The spans to
 * drop are found by native searches and what is kept is copied once into one new buffer: the bytes are
 * the relay's (it keeps a stream's edges for the usage), so they are not cut in place, and joining the
 * ~20 kept pieces of a stream cost a view object each.
 */
function cutEvents(events: Buffer): Uint8Array {
  /** [from, to) spans to drop, not in order. */
  let drops: number[] | undefined;
  for (const pattern of EMPTY_CHOICES) {
    for (let at = events.indexOf(pattern); at !== -1; ) {
      const from = endBefore(events, at);
      const to = endAfter(events, at);
      if (USAGE_OBJECT.some((usage) => within(events, usage, from, to))) (drops ??= []).push(from, to);
      at = events.indexOf(pattern, to);
    }
  }
  for (const pattern of NULL_USAGE) {
    for (let at = events.indexOf(pattern); at !== -1; at = events.indexOf(pattern, at + pattern.length)) {
      if (!dropped(drops, at)) (drops ??= []).push(at, at + pattern.length);
    }
  }
  if (drops === undefined) return events;
  const order = Array.from({ length: drops.length / 2 }, (_, i) => i * 2).sort((a, b) => drops[a]! - drops[b]!);
  let size = events.length;
  for (const i of order) size -= drops[i + 1]! - drops[i]!;
  const out = Buffer.allocUnsafe(size);
  let written = 0;
  let read = 0;
  for (const i of order) {
    written += events.copy(out, written, read, drops[i]!);
    read = drops[i + 1]!;
  }
  events.copy(out, written, read);
  return out;
}

/** Whether `pattern` occurs wholly within [from, to) of `bytes`. */
function within(bytes: Buffer, pattern: Buffer, from: number, to: number): boolean {
  const at = bytes.indexOf(pattern, from);
  return at !== -1 && at + pattern.length <= to;
}

/** Whether `at` falls in one of the spans already dropped. */
function dropped(drops: number[] | undefined, at: number): boolean {
  if (drops === undefined) return false;
  for (let i = 0; i < drops.length; i += 2) if (at >= drops[i]! && at < drops[i + 1]!) return true;
  return false;
}

/** Just past the last event end that starts before `at`; 0 when there is none. */
function endBefore(bytes: Buffer, at: number): number {
  let found = 0;
  for (const end of EVENT_ENDS) {
    const i = bytes.lastIndexOf(end, at - 1);
    if (i !== -1 && i + end.length <= at) found = Math.max(found, i + end.length);
  }
  return found;
}

/** Just past the first event end at or after `at`; the length when there is none. */
function endAfter(bytes: Buffer, at: number): number {
  let found = bytes.length;
  for (const end of EVENT_ENDS) {
    const i = bytes.indexOf(end, at);
    if (i !== -1) found = Math.min(found, i + end.length);
  }
  return found;
}
