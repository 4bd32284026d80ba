// The bound on one upstream SSE event (transport/sse.ts): the parser holds an event until its blank line,
// so an event that never ends must stop the stream at MAX_SSE_EVENT_BYTES instead of growing memory.
import { describe, expect, test } from "bun:test";
import { MAX_SSE_EVENT_BYTES, sseDecoder, SseEventTooLarge } from "../../src/transport/sse.ts";

const MIB = 1 << 20;
const encoder = new TextEncoder();

/** Feeds `chunks` through a decoder; resolves with the events read and the stream's error, if any. */
async function decode(chunks: Iterable<Uint8Array>): Promise<{ events: number; error?: unknown }> {
  const iterator = chunks[Symbol.iterator]();
  const source = new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = iterator.next();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
  });
  let events = 0;
  try {
    for await (const _ of source.pipeThrough(sseDecoder())) events += 1;
    return { events };
  } catch (error) {
    return { events, error };
  }
}

function* repeat(head: string, piece: Uint8Array, times: number, tail = ""): Generator<Uint8Array> {
  yield encoder.encode(head);
  for (let i = 0; i < times; i++) yield piece;
  if (tail) yield encoder.encode(tail);
}

describe("one SSE event is capped", () => {
  test("an event with no line end past the cap errors the stream with SseEventTooLarge", async () => {
    const { events, error } = await decode(repeat('data: {"a":"', new Uint8Array(MIB).fill(0x61), MAX_SSE_EVENT_BYTES / MIB + 2));
    expect(events).toBe(0);
    expect(error).toBeInstanceOf(SseEventTooLarge);
    expect((error as Error).message).toBe("the upstream sent a stream event larger than 16777216 bytes");
  });

  test("so do data lines that never reach a blank line", async () => {
    const line = encoder.encode(`data: ${"b".repeat(64 * 1024 - 8)}\n`);
    const { error } = await decode(repeat("", line, (MAX_SSE_EVENT_BYTES / line.byteLength) * 1.2));
    expect(error).toBeInstanceOf(SseEventTooLarge);
  });

  test("a long stream of small events and comments is not an enormous event", async () => {
    const event = encoder.encode(`: keep-alive\n\ndata: ${"c".repeat(64 * 1024)}\n\n`);
    const times = Math.ceil((MAX_SSE_EVENT_BYTES * 2) / event.byteLength);
    const { events, error } = await decode(repeat("", event, times));
    expect(error).toBeUndefined();
    expect(events).toBe(times);
  });

  test("an event just under the cap passes whole", async () => {
    const { events, error } = await decode(repeat("data: ", new Uint8Array(MIB).fill(0x64), MAX_SSE_EVENT_BYTES / MIB - 1, "\n\n"));
    expect(error).toBeUndefined();
    expect(events).toBe(1);
  });
});
