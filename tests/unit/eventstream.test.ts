// AWS event-stream framing: AWS's published test vectors both ways, the official SDK's codec as the
// other end (every header type), chunking at every split point, and each kind of bad frame erroring
// the stream with a message that says what was wrong (never a hang, never a buffer sized by the frame).
import { describe, expect, test } from "bun:test";
import { EventStreamCodec, Int64 } from "@smithy/core/event-streams";
import { fromUtf8, toUtf8 } from "@smithy/core/serde";
import { crc32Short, createEventStreamDecoder, encodeEventStreamMessage, EventStreamError, EventStreamReader, MAX_MESSAGE_BYTES, type EventStreamMessage } from "../../src/transport/eventstream.ts";
import { pieces, streamOf } from "../support/streams.ts";

// ---- helpers ---------------------------------------------------------------------------------------

const bytes = (text: string) => new TextEncoder().encode(text);
const concat = (...parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
};
/** Splits bytes into pieces of `size` (the last may be shorter). */

async function decodeChunks(chunks: readonly Uint8Array[]): Promise<EventStreamMessage[]> {
  const out: EventStreamMessage[] = [];
  const reader = streamOf(chunks).pipeThrough(createEventStreamDecoder()).getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return out;
    out.push(value);
  }
}

/** What decoding rejected with: the reader's read() rejects (the stream is errored, not hung). */
async function decodeError(chunks: readonly Uint8Array[]): Promise<Error> {
  try {
    await decodeChunks(chunks);
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected the decoder to error");
}

/** Sets a uint32 (big-endian) and recomputes the prelude CRC, so only the length itself is wrong. */
function withPrelude(frame: Uint8Array, total: number, headersLength: number): Uint8Array {
  const out = frame.slice();
  const view = new DataView(out.buffer);
  view.setUint32(0, total);
  view.setUint32(4, headersLength);
  view.setUint32(8, Bun.hash.crc32(out.subarray(0, 8)));
  return out;
}

/** A frame around a raw header section (no payload), both CRCs right: only the headers can be wrong. */
function frameWith(headers: Uint8Array): Uint8Array {
  const total = 16 + headers.length;
  const frame = new Uint8Array(total);
  const view = new DataView(frame.buffer);
  view.setUint32(0, total);
  view.setUint32(4, headers.length);
  view.setUint32(8, Bun.hash.crc32(frame.subarray(0, 8)));
  frame.set(headers, 12);
  view.setUint32(total - 4, Bun.hash.crc32(frame.subarray(0, total - 4)));
  return frame;
}

const smithy = new EventStreamCodec(toUtf8, fromUtf8);

// ---- CRC and AWS's test vectors -----------------------------------------------------------------------

// aws/aws-sdk-js-v3, packages/eventstream-marshaller/src/TestVectors.fixture.ts (AWS's event-stream vectors).
const FOO_BAR = [123, 39, 102, 111, 111, 39, 58, 39, 98, 97, 114, 39, 125]; // {'foo':'bar'}
const VECTORS = {
  empty_message: [0, 0, 0, 16, 0, 0, 0, 0, 5, 194, 72, 235, 125, 152, 200, 255],
  int32_header: [0, 0, 0, 43, 0, 0, 0, 14, 52, 139, 236, 123, 8, 101, 118, 101, 110, 116, 45, 105, 100, 4, 0, 0, 160, 12, ...FOO_BAR, 211, 137, 2, 133],
  payload_no_headers: [0, 0, 0, 29, 0, 0, 0, 0, 253, 82, 140, 90, ...FOO_BAR, 195, 101, 57, 54],
  payload_one_str_header: [
    0, 0, 0, 61, 0, 0, 0, 32, 7, 253, 131, 150, 12, 99, 111, 110, 116, 101, 110, 116, 45, 116, 121, 112, 101, 7, 0, 16, 97, 112, 112, 108, 105, 99, 97, 116, 105, 111, 110, 47, 106, 115, 111, 110, ...FOO_BAR, 141, 156, 8, 177,
  ],
  corrupted_headers: [
    0, 0, 0, 61, 0, 0, 0, 32, 7, 253, 131, 150, 12, 99, 111, 110, 116, 101, 110, 116, 43, 116, 121, 112, 101, 7, 0, 16, 97, 112, 112, 108, 105, 99, 97, 116, 105, 111, 110, 47, 106, 115, 111, 110, ...FOO_BAR, 141, 156, 8, 177,
  ],
  corrupted_header_len: [
    0, 0, 0, 61, 0, 0, 1, 32, 7, 253, 131, 150, 12, 99, 111, 110, 116, 101, 110, 116, 45, 116, 121, 112, 101, 7, 0, 16, 97, 112, 112, 108, 105, 99, 97, 116, 105, 111, 110, 47, 106, 115, 111, 110, ...FOO_BAR, 141, 156, 8, 177,
  ],
  corrupted_length: [1, 0, 0, 29, 0, 0, 0, 0, 253, 82, 140, 90, ...FOO_BAR, 195, 101, 57, 54],
  corrupted_payload: [0, 0, 0, 29, 0, 0, 0, 0, 253, 82, 140, 90, 123, 39, 102, 111, 111, 39, 58, 39, 98, 97, 114, 39, 141, 195, 101, 57, 54],
} as const;
const vector = (name: keyof typeof VECTORS) => Uint8Array.from(VECTORS[name]);

describe("CRC32 and AWS's test vectors", () => {
  test("Bun.hash.crc32 is zlib's CRC-32 (check value of '123456789')", () => {
    expect(Bun.hash.crc32("123456789")).toBe(0xcbf43926);
  });

  test("the prelude's CRC (a table written out) is Bun.hash.crc32 over every table entry", () => {
    // 20,000 random 8-byte preludes read each of the 256 entries ~600 times; one wrong entry fails this.
    let state = 1;
    const bytes = new Uint8Array(8);
    for (let i = 0; i < 20_000; i++) {
      for (let j = 0; j < 8; j++) bytes[j] = (state = (state * 1103515245 + 12345) % 2147483648) >>> 16;
      if (crc32Short(bytes, 0, 8) !== Bun.hash.crc32(bytes)) expect({ bytes: [...bytes], crc: crc32Short(bytes, 0, 8) }).toEqual({ bytes: [...bytes], crc: Bun.hash.crc32(bytes) });
    }
    for (let b = 0; b < 256; b++) expect(crc32Short(Uint8Array.of(b), 0, 1)).toBe(Bun.hash.crc32(Uint8Array.of(b)));
  });

  const good: [keyof typeof VECTORS, EventStreamMessage][] = [
    ["empty_message", { headers: {}, payload: new Uint8Array() }],
    ["int32_header", { headers: { "event-id": 40972 }, payload: Uint8Array.from(FOO_BAR) }],
    ["payload_no_headers", { headers: {}, payload: Uint8Array.from(FOO_BAR) }],
    ["payload_one_str_header", { headers: { "content-type": "application/json" }, payload: Uint8Array.from(FOO_BAR) }],
  ];
  for (const [name, message] of good) {
    test(`${name}: decodes to its stated message`, async () => {
      expect(await decodeChunks([vector(name)])).toEqual([message]);
    });
    test(`${name}: encodes to the published bytes exactly`, () => {
      expect(encodeEventStreamMessage(message.headers, message.payload)).toEqual(vector(name));
    });
  }

  const bad: [keyof typeof VECTORS, RegExp][] = [
    ["corrupted_headers", /message CRC mismatch/],
    ["corrupted_header_len", /prelude CRC mismatch/],
    ["corrupted_length", /prelude CRC mismatch/],
    ["corrupted_payload", /message CRC mismatch/],
  ];
  for (const [name, reason] of bad) {
    test(`${name}: errors the stream (${reason.source})`, async () => {
      const error = await decodeError([vector(name)]);
      expect(error).toBeInstanceOf(EventStreamError);
      expect(error.message).toMatch(reason);
    });
  }
});

// ---- the official SDK's codec at the other end -----------------------------------------------------------

describe("against the AWS SDK's codec (@smithy/core event-streams)", () => {
  test("every header value type the SDK writes (0-9) decodes to its value", async () => {
    const payload = bytes('{"x":1}');
    const frame = smithy.encode({
      headers: {
        yes: { type: "boolean", value: true },
        no: { type: "boolean", value: false },
        byte: { type: "byte", value: -7 },
        short: { type: "short", value: -300 },
        integer: { type: "integer", value: 2_000_000_000 },
        long: { type: "long", value: Int64.fromNumber(-5_000_000_000) },
        binary: { type: "binary", value: Uint8Array.of(0, 255, 1) },
        string: { type: "string", value: "héllo ☃" },
        timestamp: { type: "timestamp", value: new Date(1_700_000_000_123) },
        uuid: { type: "uuid", value: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0" },
      },
      body: payload,
    });
    expect(await decodeChunks(pieces(frame, 3))).toEqual([
      {
        headers: {
          yes: true,
          no: false,
          byte: -7,
          short: -300,
          integer: 2_000_000_000,
          long: -5_000_000_000,
          binary: Uint8Array.of(0, 255, 1),
          string: "héllo ☃",
          timestamp: new Date(1_700_000_000_123),
          uuid: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
        },
        payload,
      },
    ]);
  });

  test("what the encoder writes (string, bool, int32, int64, bytes, timestamp) the SDK reads back", () => {
    const payload = bytes('{"text":"Hi"}');
    const frame = encodeEventStreamMessage(
      { ":message-type": "event", ":event-type": "contentBlockDelta", ok: true, off: false, n: -12, big: 2 ** 40, raw: Uint8Array.of(9, 8), at: new Date(1_700_000_000_000) },
      payload,
    );
    const decoded = smithy.decode(frame);
    expect(decoded.body).toEqual(payload);
    expect(decoded.headers[":message-type"]).toEqual({ type: "string", value: "event" });
    expect(decoded.headers[":event-type"]).toEqual({ type: "string", value: "contentBlockDelta" });
    expect(decoded.headers.ok).toEqual({ type: "boolean", value: true });
    expect(decoded.headers.off).toEqual({ type: "boolean", value: false });
    expect(decoded.headers.n).toEqual({ type: "integer", value: -12 });
    expect(decoded.headers.big?.type).toBe("long");
    expect((decoded.headers.big?.value as Int64).valueOf()).toBe(2 ** 40);
    expect(decoded.headers.raw?.value).toEqual(Uint8Array.of(9, 8));
    expect(decoded.headers.at).toEqual({ type: "timestamp", value: new Date(1_700_000_000_000) });
  });

  test("the encoder refuses what cannot be written", () => {
    expect(() => encodeEventStreamMessage({ n: 1.5 }, new Uint8Array())).toThrow(/not an integer/);
    expect(() => encodeEventStreamMessage({ ["x".repeat(256)]: "v" }, new Uint8Array())).toThrow(/1 to 255 bytes/);
    expect(() => encodeEventStreamMessage({ v: "x".repeat(40_000) }, new Uint8Array())).toThrow(/exceeds 32767/);
    expect(() => encodeEventStreamMessage({}, new Uint8Array(MAX_MESSAGE_BYTES))).toThrow(/exceeds/);
  });
});

// ---- chunking ------------------------------------------------------------------------------------------

describe("frames split across chunks", () => {
  const first = encodeEventStreamMessage({ ":event-type": "messageStart", ":content-type": "application/json", ":message-type": "event" }, bytes('{"role":"assistant"}'));
  const second = encodeEventStreamMessage({ ":event-type": "contentBlockDelta", ":message-type": "event" }, bytes('{"contentBlockIndex":0,"delta":{"text":"¡Hola! 👋"}}'));
  const both = concat(first, second);
  const expected: EventStreamMessage[] = [
    { headers: { ":event-type": "messageStart", ":content-type": "application/json", ":message-type": "event" }, payload: bytes('{"role":"assistant"}') },
    { headers: { ":event-type": "contentBlockDelta", ":message-type": "event" }, payload: bytes('{"contentBlockIndex":0,"delta":{"text":"¡Hola! 👋"}}') },
  ];

  for (const size of [1, 3, 7, 64]) {
    test(`round trip with the bytes arriving ${size} at a time`, async () => {
      expect(await decodeChunks(pieces(both, size))).toEqual(expected);
    });
  }

  test("the same two messages at every split point of the buffer", async () => {
    for (let cut = 0; cut <= both.length; cut += 1) {
      expect(await decodeChunks([both.slice(0, cut), both.slice(cut)])).toEqual(expected);
    }
  });

  test("three cuts: every pair of split points inside the first message", async () => {
    for (let a = 1; a < first.length; a += 5) {
      for (let b = a; b < both.length; b += 11) {
        expect(await decodeChunks([both.slice(0, a), both.slice(a, b), both.slice(b)])).toEqual(expected);
      }
    }
  });

  test("a message is delivered as soon as its last byte arrives, before the stream ends", async () => {
    const decoder = createEventStreamDecoder();
    const writer = decoder.writable.getWriter();
    const reader = decoder.readable.getReader();
    void writer.write(first.slice(0, 10));
    void writer.write(first.slice(10));
    expect((await reader.read()).value).toEqual(expected[0]);
    void writer.write(second);
    expect((await reader.read()).value).toEqual(expected[1]);
    void writer.close();
    expect((await reader.read()).done).toBe(true);
  });

  test("a chunk's bytes are copied: reusing the chunk buffer does not change an emitted payload", () => {
    const reader = new EventStreamReader();
    const chunk = first.slice();
    const messages: EventStreamMessage[] = [];
    reader.push(chunk, (m) => messages.push(m));
    chunk.fill(0);
    expect(messages[0]?.payload).toEqual(bytes('{"role":"assistant"}'));
  });

  test("headers that repeat the last message's bytes read the same (one frozen record, even after the chunk is reused); a header that differs in one byte is read anew", () => {
    const delta = (event: string, text: string) => encodeEventStreamMessage({ ":event-type": event, ":message-type": "event" }, bytes(`{"t":"${text}"}`));
    const reader = new EventStreamReader();
    const messages: EventStreamMessage[] = [];
    const chunk = concat(delta("contentBlockDelta", "a"), delta("contentBlockDelta", "b"));
    reader.push(chunk, (m) => messages.push(m));
    chunk.fill(0);
    reader.push(concat(delta("contentBlockDelta", "c"), delta("contentBlockDeltb", "d"), delta("contentBlockDelta", "e")), (m) => messages.push(m));
    expect(messages.map((m) => m.headers[":event-type"])).toEqual(["contentBlockDelta", "contentBlockDelta", "contentBlockDelta", "contentBlockDeltb", "contentBlockDelta"]);
    expect(messages.map((m) => new TextDecoder().decode(m.payload))).toEqual(["a", "b", "c", "d", "e"].map((t) => `{"t":"${t}"}`));
    expect(messages[1]!.headers).toBe(messages[0]!.headers);
    expect(Object.isFrozen(messages[0]!.headers)).toBe(true);
  });
});

// ---- bad frames --------------------------------------------------------------------------------------------

describe("bad frames error the stream clearly", () => {
  const good = encodeEventStreamMessage({ ":event-type": "messageStop" }, bytes('{"stopReason":"end_turn"}'));

  test("a corrupted prelude CRC", async () => {
    const frame = good.slice();
    frame[9] = (frame[9] ?? 0) ^ 0xff;
    expect((await decodeError([frame])).message).toMatch(/^event stream prelude CRC mismatch: frame says 0x[0-9a-f]{8}, bytes give 0x[0-9a-f]{8}$/);
  });

  test("a corrupted message CRC", async () => {
    const frame = good.slice();
    frame[frame.length - 1] = (frame[frame.length - 1] ?? 0) ^ 1;
    expect((await decodeError(pieces(frame, 7))).message).toMatch(/^event stream message CRC mismatch/);
  });

  test("a corrupted payload byte (the message CRC catches it)", async () => {
    const frame = good.slice();
    frame[frame.length - 8] = 0x41;
    expect((await decodeError([frame])).message).toMatch(/message CRC mismatch/);
  });

  test("a truncated frame: the stream ends inside a message", async () => {
    expect((await decodeError([good.slice(0, good.length - 3)])).message).toBe(`event stream ended inside a message (${good.length - 3} of ${good.length} bytes received)`);
    expect((await decodeError([good, good.slice(0, 5)])).message).toBe("event stream ended inside a message (5 bytes received)");
  });

  test("an oversized length with a valid prelude CRC is refused before any buffering", async () => {
    const huge = withPrelude(good, 0xffff_fff0, 20);
    const error = await decodeError([huge.slice(0, 12)]);
    expect(error.message).toBe(`event stream message length ${0xffff_fff0} exceeds the ${MAX_MESSAGE_BYTES}-byte limit`);
    expect((await decodeError([withPrelude(good, MAX_MESSAGE_BYTES + 1, 0)])).message).toMatch(/exceeds the 16777216-byte limit/);
  });

  test("lengths that cannot be: below the 16-byte minimum, headers longer than the message", async () => {
    expect((await decodeError([withPrelude(good, 15, 0)])).message).toBe("event stream message length 15 is below the 16-byte minimum");
    expect((await decodeError([withPrelude(good, good.length, good.length)])).message).toMatch(/^event stream headers length \d+ does not fit in a \d+-byte message$/);
  });

  test("a header that runs past its section, and an unknown value type", async () => {
    const name = bytes("x");
    // A string header claiming 200 bytes inside a 6-byte header section.
    const overrun = Uint8Array.of(1, ...name, 7, 0, 200, 65);
    const unknown = Uint8Array.of(1, ...name, 42);
    for (const [headers, reason] of [
      [overrun, /header "x" runs past the headers section/],
      [unknown, /header "x" has unknown value type 42/],
    ] as const) {
      expect((await decodeError([frameWith(headers)])).message).toMatch(reason);
    }
  });

  test("header strings are read exactly: a look-alike of one seen before (same length, first, middle and last byte) is its own string, and one that is not UTF-8 is refused", async () => {
    /** One frame whose only header is a string named `name` with the value `value` (raw bytes). */
    const frameOf = (name: Uint8Array, value: Uint8Array) => frameWith(Uint8Array.of(name.length, ...name, 7, value.length >> 8, value.length & 0xff, ...value));
    const messages = await decodeChunks([frameOf(bytes(":event-type"), bytes("contentBlockDelta")), frameOf(bytes(":evXnt-tYpe"), bytes("contentXlockDelta"))]);
    expect(messages.map((m) => m.headers)).toEqual([{ ":event-type": "contentBlockDelta" }, { ":evXnt-tYpe": "contentXlockDelta" }]);
    const notUtf8 = bytes("contentBlockDelta");
    notUtf8[3] = 0xff;
    expect((await decodeError([frameOf(bytes(":event-type"), bytes("contentBlockDelta")), frameOf(bytes(":event-type"), notUtf8)])).message).toMatch(/header ":event-type" is not valid UTF-8/);
  });

  test("messages before a bad frame are delivered; nothing after it", async () => {
    const frame = good.slice();
    frame[frame.length - 1] = 0;
    // All three in one chunk, and apart: either way the good one arrives, then the error.
    for (const chunks of [[concat(good, frame, good)], [good, frame, good]]) {
      const reader = streamOf(chunks).pipeThrough(createEventStreamDecoder()).getReader();
      expect((await reader.read()).value?.headers).toEqual({ ":event-type": "messageStop" });
      await expect(reader.read()).rejects.toThrow(/message CRC mismatch/);
    }
  });
});
