// Server-sent events, both ways. Decoding is eventsource-parser in a stream pipeline (never regexes over
// concatenated text); encoding writes one event per call. Both keep no state beyond the stream.
import { EventSourceParserStream } from "eventsource-parser/stream";

export interface SseEvent {
  /** The `event:` name, when the sender gave one (Anthropic does; OpenAI does not). */
  readonly event?: string;
  readonly data: string;
}

/** Upstream bytes -> SSE events, as they arrive. */
export function sseDecoder(): { readable: ReadableStream<SseEvent>; writable: WritableStream<Uint8Array> } {
  const text = new TextDecoderStream();
  const parsed = text.readable.pipeThrough(new EventSourceParserStream());
  const events = parsed.pipeThrough(
    new TransformStream<{ event?: string; data: string }, SseEvent>({
      transform(message, controller) {
        controller.enqueue(message.event ? { event: message.event, data: message.data } : { data: message.data });
      },
    }),
  );
  return { readable: events, writable: text.writable as WritableStream<Uint8Array> };
}

const encoder = new TextEncoder();

/** One SSE event as bytes. `data` is written as is: callers pass single-line JSON. */
export function sseEvent(data: string, event?: string): Uint8Array {
  return encoder.encode(event ? `event: ${event}\ndata: ${data}\n\n` : `data: ${data}\n\n`);
}

export const SSE_HEADERS = { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive" } as const;
