// Server-sent events, both ways. Decoding is eventsource-parser fed piece by piece (never regexes over
// concatenated text); encoding writes one event per call. Both keep no state beyond the stream.
import { createParser } from "eventsource-parser";
import { Made, parserTransform, type PushParser } from "./push-parser.ts";

export interface SseEvent {
  /** The `event:` name, when the sender gave one (Anthropic does; OpenAI does not). */
  readonly event?: string;
  readonly data: string;
}

/** What a protocol's stream decoder does with each SSE event, and at the end of the stream. */
export interface SseSteps<T> {
  onEvent(event: SseEvent): readonly T[];
  onEnd(): readonly T[];
}

/**
 * The most one upstream SSE event may hold, in characters (bytes, for the ASCII JSON events carry), the
 * same bound as a Bedrock event-stream message (eventstream.ts): the parser holds an event until its blank
 * line, so one that never ended (500 MB with no newline, or a gzip bomb) grew memory without bound on a
 * translated stream. eventsource-parser counts what it holds and stops there.
 */
export const MAX_SSE_EVENT_BYTES = 16 * 1024 * 1024;

/** The stream error past MAX_SSE_EVENT_BYTES; its message is the client's (in its protocol's shape). */
export class SseEventTooLarge extends Error {
  constructor() {
    super(`the upstream sent a stream event larger than ${MAX_SSE_EVENT_BYTES} bytes`);
  }
}

/**
 * Upstream bytes -> whatever `steps` makes of each SSE event, in one synchronous pass: a streaming UTF-8
 * decoder feeding eventsource-parser, whose events go straight to the steps. The data plane pushes each
 * piece of the upstream's body through this as it arrives (transport/push-parser.ts): a stream stage
 * instead cost a promise and a scheduling turn per piece.
 */
export function sseParser<T>(steps: SseSteps<T>): PushParser<T> {
  const text = new TextDecoder();
  const made = new Made<T>();
  let tooLarge = false;
  const parser = createParser({
    maxBufferSize: MAX_SSE_EVENT_BYTES,
    // The parser's own message is handed on (steps read it there and then): a copy per event cost more than the step.
    onEvent(message) {
      made.add(steps.onEvent(message));
    },
    onError(error) {
      if (error.type === "max-buffer-size-exceeded") tooLarge = true;
    },
  });
  return {
    push(bytes) {
      if (tooLarge) throw new SseEventTooLarge();
      parser.feed(text.decode(bytes, { stream: true }));
      if (tooLarge) {
        made.take();
        throw new SseEventTooLarge();
      }
      return made.take();
    },
    end() {
      if (tooLarge) throw new SseEventTooLarge();
      const rest = text.decode();
      if (rest) parser.feed(rest);
      made.add(steps.onEnd());
      return made.take();
    },
  };
}

/** Upstream bytes -> SSE events, as they arrive. */
export const sseDecoder = (): TransformStream<Uint8Array, SseEvent> =>
  parserTransform(sseParser<SseEvent>({ onEvent: (e) => [e.event ? { event: e.event, data: e.data } : { data: e.data }], onEnd: () => [] }));

const encoder = new TextEncoder();

/** One SSE event as text. `data` is written as is: callers pass single-line JSON. */
export const sseText = (data: string, event?: string): string => (event ? `event: ${event}\ndata: ${data}\n\n` : `data: ${data}\n\n`);

/** An SSE event's text before its data, and after it: `sseText(data, event)` is `sseHead(event) + data + SSE_END`. */
export const sseHead = (event?: string): string => (event ? `event: ${event}\ndata: ` : "data: ");
export const SSE_END = "\n\n";

/** One SSE event as bytes. */
export function sseEvent(data: string, event?: string): Uint8Array {
  return encoder.encode(sseText(data, event));
}

/** Whether bytes sent so far end between two SSE events (a blank line), so another event may follow. */
export function endsAtEventBoundary(last: Uint8Array): boolean {
  const n = last.length;
  const lf = 0x0a;
  const cr = 0x0d;
  return n >= 2 && last[n - 1] === lf && (last[n - 2] === lf || (n >= 4 && last[n - 2] === cr && last[n - 3] === lf && last[n - 4] === cr));
}

export const SSE_HEADERS = { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive" } as const;
