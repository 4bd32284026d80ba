// AWS event-stream framing (`application/vnd.amazon.eventstream`), both ways: the binary frames Bedrock's
// ConverseStream (and Transcribe, S3 Select, Lex, ...) stream in. Written from AWS's "Event stream
// encoding" page (https://docs.aws.amazon.com/lexv2/latest/dg/event-stream-encoding.html, the same text
// as Transcribe's) and checked against the AWS SDK's own codec and test vectors
// (tests/unit/eventstream.test.ts).
//
// A message: prelude = total length (uint32 BE) + headers length (uint32 BE), then the prelude's CRC32,
// the headers, the payload, and a CRC32 of everything before it. 16 bytes of overhead. A header: name
// length (1 byte), name (UTF-8), value type (1 byte), value. CRC32 is zlib's (IEEE), Bun.hash.crc32.
//
// The decoder trusts no length before its CRC has vouched for it, and no length beyond MAX_MESSAGE_BYTES
// even then: the prelude CRC exists so a reader can reject a corrupt length before buffering for it.

export type EventStreamHeaderValue = string | number | boolean | Uint8Array | Date;

export interface EventStreamMessage {
  headers: Record<string, EventStreamHeaderValue>;
  payload: Uint8Array;
}

/** aws-c-event-stream's limit on one message, and the most this decoder ever buffers. */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
/** aws-c-event-stream's limit on the headers section. */
const MAX_HEADERS_BYTES = 128 * 1024;
/** The largest header value the AWS SDKs write (a signed 16-bit length). */
const MAX_HEADER_VALUE_BYTES = 32_767;
const PRELUDE_BYTES = 8;
const CRC_BYTES = 4;
const OVERHEAD_BYTES = PRELUDE_BYTES + 2 * CRC_BYTES;

/** Header value types (aws-c-event-stream `aws_event_stream_header_value_type`). */
const enum ValueType {
  BoolTrue = 0,
  BoolFalse = 1,
  Byte = 2,
  Int16 = 3,
  Int32 = 4,
  Int64 = 5,
  Bytes = 6,
  String = 7,
  Timestamp = 8,
  Uuid = 9,
}

/** A frame this decoder refuses: bad CRC, impossible lengths, a cut-off stream. */
export class EventStreamError extends Error {
  override readonly name = "EventStreamError";
}

const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

// ---- encoding --------------------------------------------------------------------------------------

/** One header's type byte and value bytes. Numbers that fit are int32, other safe integers int64. */
function encodeValue(name: string, value: EventStreamHeaderValue): Uint8Array {
  if (typeof value === "boolean") return Uint8Array.of(value ? ValueType.BoolTrue : ValueType.BoolFalse);
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value)) throw new RangeError(`event stream header ${name}: ${value} is not an integer`);
    const int32 = value >= -0x8000_0000 && value <= 0x7fff_ffff;
    const out = new Uint8Array(int32 ? 5 : 9);
    const view = new DataView(out.buffer);
    out[0] = int32 ? ValueType.Int32 : ValueType.Int64;
    if (int32) view.setInt32(1, value);
    else view.setBigInt64(1, BigInt(value));
    return out;
  }
  if (value instanceof Date) {
    const out = new Uint8Array(9);
    out[0] = ValueType.Timestamp;
    new DataView(out.buffer).setBigInt64(1, BigInt(value.getTime()));
    return out;
  }
  const bytes = typeof value === "string" ? utf8.encode(value) : value;
  if (bytes.length > MAX_HEADER_VALUE_BYTES) throw new RangeError(`event stream header ${name}: value of ${bytes.length} bytes exceeds ${MAX_HEADER_VALUE_BYTES}`);
  const out = new Uint8Array(3 + bytes.length);
  out[0] = typeof value === "string" ? ValueType.String : ValueType.Bytes;
  new DataView(out.buffer).setUint16(1, bytes.length);
  out.set(bytes, 3);
  return out;
}

/**
 * One message as bytes. Header values: strings (type 7), booleans, integers (int32, or int64 beyond),
 * byte arrays and Dates (timestamps, milliseconds).
 */
export function encodeEventStreamMessage(headers: Record<string, EventStreamHeaderValue>, payload: Uint8Array): Uint8Array {
  const parts: Uint8Array[] = [];
  let headersLength = 0;
  for (const [name, value] of Object.entries(headers)) {
    const nameBytes = utf8.encode(name);
    if (nameBytes.length === 0 || nameBytes.length > 255) throw new RangeError(`event stream header name must be 1 to 255 bytes: ${JSON.stringify(name)}`);
    const valueBytes = encodeValue(name, value);
    parts.push(Uint8Array.of(nameBytes.length), nameBytes, valueBytes);
    headersLength += 1 + nameBytes.length + valueBytes.length;
  }
  const total = OVERHEAD_BYTES + headersLength + payload.length;
  if (headersLength > MAX_HEADERS_BYTES) throw new RangeError(`event stream headers of ${headersLength} bytes exceed ${MAX_HEADERS_BYTES}`);
  if (total > MAX_MESSAGE_BYTES) throw new RangeError(`event stream message of ${total} bytes exceeds ${MAX_MESSAGE_BYTES}`);
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  view.setUint32(0, total);
  view.setUint32(4, headersLength);
  view.setUint32(8, Bun.hash.crc32(out.subarray(0, PRELUDE_BYTES)));
  let at = PRELUDE_BYTES + CRC_BYTES;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  out.set(payload, at);
  view.setUint32(total - CRC_BYTES, Bun.hash.crc32(out.subarray(0, total - CRC_BYTES)));
  return out;
}

// ---- decoding --------------------------------------------------------------------------------------

const hex = (n: number) => `0x${n.toString(16).padStart(8, "0")}`;

/** Reads one header section, every read bounds-checked against the section. */
function parseHeaders(bytes: Uint8Array): Record<string, EventStreamHeaderValue> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headers: Record<string, EventStreamHeaderValue> = {};
  let at = 0;
  const need = (n: number, what: string) => {
    if (at + n > bytes.length) throw new EventStreamError(`event stream header ${what} runs past the headers section`);
  };
  const text = (start: number, length: number, what: string): string => {
    try {
      return strictUtf8.decode(bytes.subarray(start, start + length));
    } catch {
      throw new EventStreamError(`event stream header ${what} is not valid UTF-8`);
    }
  };
  while (at < bytes.length) {
    const nameLength = bytes[at++] ?? 0;
    if (nameLength === 0) throw new EventStreamError("event stream header with an empty name");
    need(nameLength + 1, "name");
    const name = text(at, nameLength, "name");
    at += nameLength;
    const type = bytes[at++];
    const label = `${JSON.stringify(name)}`;
    switch (type) {
      case ValueType.BoolTrue:
      case ValueType.BoolFalse:
        headers[name] = type === ValueType.BoolTrue;
        break;
      case ValueType.Byte:
        need(1, label);
        headers[name] = view.getInt8(at);
        at += 1;
        break;
      case ValueType.Int16:
        need(2, label);
        headers[name] = view.getInt16(at);
        at += 2;
        break;
      case ValueType.Int32:
        need(4, label);
        headers[name] = view.getInt32(at);
        at += 4;
        break;
      case ValueType.Int64:
      case ValueType.Timestamp: {
        need(8, label);
        // Beyond 2^53 an int64 loses precision as a number; no AWS header carries one that large.
        const value = Number(view.getBigInt64(at));
        headers[name] = type === ValueType.Timestamp ? new Date(value) : value;
        at += 8;
        break;
      }
      case ValueType.Bytes:
      case ValueType.String: {
        need(2, label);
        const length = view.getUint16(at);
        at += 2;
        need(length, label);
        headers[name] = type === ValueType.String ? text(at, length, label) : bytes.slice(at, at + length);
        at += length;
        break;
      }
      case ValueType.Uuid: {
        need(16, label);
        const h = Array.from(bytes.subarray(at, at + 16), (b) => b.toString(16).padStart(2, "0")).join("");
        headers[name] = `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
        at += 16;
        break;
      }
      default:
        throw new EventStreamError(`event stream header ${label} has unknown value type ${type}`);
    }
  }
  return headers;
}

/** Checks a prelude's CRC and lengths; returns the total length it vouches for. */
function checkPrelude(prelude: Uint8Array): number {
  const view = new DataView(prelude.buffer, prelude.byteOffset, PRELUDE_BYTES + CRC_BYTES);
  const total = view.getUint32(0);
  const headersLength = view.getUint32(4);
  const expected = view.getUint32(8);
  const actual = Bun.hash.crc32(prelude.subarray(0, PRELUDE_BYTES));
  if (expected !== actual) throw new EventStreamError(`event stream prelude CRC mismatch: frame says ${hex(expected)}, bytes give ${hex(actual)}`);
  if (total < OVERHEAD_BYTES) throw new EventStreamError(`event stream message length ${total} is below the 16-byte minimum`);
  if (total > MAX_MESSAGE_BYTES) throw new EventStreamError(`event stream message length ${total} exceeds the ${MAX_MESSAGE_BYTES}-byte limit`);
  if (headersLength > total - OVERHEAD_BYTES) throw new EventStreamError(`event stream headers length ${headersLength} does not fit in a ${total}-byte message`);
  if (headersLength > MAX_HEADERS_BYTES) throw new EventStreamError(`event stream headers length ${headersLength} exceeds ${MAX_HEADERS_BYTES}`);
  return total;
}

/** One whole message (exactly `total` bytes, prelude already checked) -> headers and payload. */
function parseMessage(frame: Uint8Array): EventStreamMessage {
  const view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
  const headersLength = view.getUint32(4);
  const expected = view.getUint32(frame.length - CRC_BYTES);
  const actual = Bun.hash.crc32(frame.subarray(0, frame.length - CRC_BYTES));
  if (expected !== actual) throw new EventStreamError(`event stream message CRC mismatch: frame says ${hex(expected)}, bytes give ${hex(actual)}`);
  const headersStart = PRELUDE_BYTES + CRC_BYTES;
  return {
    headers: parseHeaders(frame.subarray(headersStart, headersStart + headersLength)),
    payload: frame.slice(headersStart + headersLength, frame.length - CRC_BYTES),
  };
}

/**
 * The incremental reader under the decoder stream, for callers that turn frames into something else in
 * the same stage (Bedrock's stream decoder). `push` hands each message a chunk completes to `onMessage`,
 * in order, and throws an EventStreamError at the first bad frame (the messages before it are already
 * out); `end` throws if the stream stopped inside a message.
 */
export class EventStreamReader {
  /** The prelude (12 bytes) of the message being read, while it is incomplete. */
  private readonly prelude = new Uint8Array(PRELUDE_BYTES + CRC_BYTES);
  private preludeFill = 0;
  /** The message being assembled once its prelude checked out, and how much of it has arrived. */
  private frame: Uint8Array | undefined;
  private frameFill = 0;

  push(chunk: Uint8Array, onMessage: (message: EventStreamMessage) => void): void {
    let at = 0;
    while (at < chunk.length) {
      if (!this.frame) {
        // Common case: a whole message inside the chunk is read in place, without copying the frame.
        if (this.preludeFill === 0 && chunk.length - at >= PRELUDE_BYTES + CRC_BYTES) {
          const total = checkPrelude(chunk.subarray(at, at + PRELUDE_BYTES + CRC_BYTES));
          if (chunk.length - at >= total) {
            onMessage(parseMessage(chunk.subarray(at, at + total)));
            at += total;
            continue;
          }
          this.frame = new Uint8Array(total);
          continue;
        }
        const take = Math.min(this.prelude.length - this.preludeFill, chunk.length - at);
        this.prelude.set(chunk.subarray(at, at + take), this.preludeFill);
        this.preludeFill += take;
        at += take;
        if (this.preludeFill < this.prelude.length) break;
        this.frame = new Uint8Array(checkPrelude(this.prelude));
        this.frame.set(this.prelude);
        this.frameFill = this.prelude.length;
        this.preludeFill = 0;
        continue;
      }
      const take = Math.min(this.frame.length - this.frameFill, chunk.length - at);
      this.frame.set(chunk.subarray(at, at + take), this.frameFill);
      this.frameFill += take;
      at += take;
      if (this.frameFill === this.frame.length) {
        const frame = this.frame;
        this.frame = undefined;
        this.frameFill = 0;
        onMessage(parseMessage(frame));
      }
    }
  }

  end(): void {
    const have = this.frame ? this.frameFill : this.preludeFill;
    if (have === 0) return;
    const of = this.frame ? ` of ${this.frame.length}` : "";
    throw new EventStreamError(`event stream ended inside a message (${have}${of} bytes received)`);
  }
}

/**
 * Bytes -> messages, buffering partial frames across chunks. A bad frame (CRC, lengths, a cut-off
 * stream) errors the stream with an EventStreamError saying what was wrong.
 */
export function createEventStreamDecoder(): TransformStream<Uint8Array, EventStreamMessage> {
  const reader = new EventStreamReader();
  return new TransformStream<Uint8Array, EventStreamMessage>({
    transform(chunk, controller) {
      reader.push(chunk, (message) => controller.enqueue(message));
    },
    flush() {
      reader.end();
    },
  });
}
