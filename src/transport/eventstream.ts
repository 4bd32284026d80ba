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
  /** Frozen: messages of one reader whose header bytes are the same share one record (HeaderCache). */
  headers: Readonly<Record<string, EventStreamHeaderValue>>;
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

/**
 * Short ASCII header strings seen before, by a key of their length and three of their bytes: header
 * names and the values AWS sends (`:event-type`, `contentBlockDelta`, `application/json`, ...) repeat on
 * every message, so most are found here and compared, not built. Bounded: past INTERNED_MAX entries
 * nothing more is kept (and two strings with one key are built each time, not kept).
 */
const interned = new Map<number, string>();
const INTERNED_MAX = 512;
const INTERN_BYTES = 64;

/**
 * UTF-8 bytes as a string; undefined when they are not UTF-8. Short ASCII runs are looked up or built
 * byte by byte: a TextDecoder call and the subarray view it needs cost more than the rest of a message.
 * A hit reads each byte once: equal to a known ASCII string, the bytes are ASCII.
 */
function utf8At(bytes: Uint8Array, start: number, length: number): string | undefined {
  const end = start + length;
  if (length === 0) return "";
  if (length <= INTERN_BYTES) {
    const key = (length | (bytes[start]! << 8) | (bytes[start + (length >> 1)]! << 16) | (bytes[end - 1]! << 24)) >>> 0;
    const known = interned.get(key);
    if (known !== undefined && sameAscii(known, bytes, start, length)) return known;
    let i = start;
    while (i < end && bytes[i]! <= 0x7f) i++;
    if (i === end) {
      let out = "";
      for (let j = start; j < end; j++) out += String.fromCharCode(bytes[j]!);
      if (known === undefined && interned.size < INTERNED_MAX) interned.set(key, out);
      return out;
    }
  }
  try {
    return strictUtf8.decode(bytes.subarray(start, end));
  } catch {
    return undefined;
  }
}

function sameAscii(text: string, bytes: Uint8Array, start: number, length: number): boolean {
  if (text.length !== length) return false;
  for (let i = 0; i < length; i++) if (text.charCodeAt(i) !== bytes[start + i]) return false;
  return true;
}

const overrun = (what: string) => new EventStreamError(`event stream header ${what} runs past the headers section`);
const notUtf8 = (what: string) => new EventStreamError(`event stream header ${what} is not valid UTF-8`);

/** Reads the header section at [start, end) of a frame, every read bounds-checked against the section. */
function parseHeaders(bytes: Uint8Array, start: number, end: number): Record<string, EventStreamHeaderValue> {
  const headers: Record<string, EventStreamHeaderValue> = {};
  // Only numeric values need one (strings are the common case).
  let numbers: DataView | undefined;
  const view = () => (numbers ??= viewOf(bytes));
  let at = start;
  while (at < end) {
    const nameLength = bytes[at++]!;
    if (nameLength === 0) throw new EventStreamError("event stream header with an empty name");
    if (at + nameLength + 1 > end) throw overrun("name");
    const name = utf8At(bytes, at, nameLength);
    if (name === undefined) throw notUtf8("name");
    at += nameLength;
    const type = bytes[at++];
    // The value's size: fixed by its type, or a 2-byte length first.
    let size = 0;
    if (type === ValueType.Byte) size = 1;
    else if (type === ValueType.Int16) size = 2;
    else if (type === ValueType.Int32) size = 4;
    else if (type === ValueType.Int64 || type === ValueType.Timestamp) size = 8;
    else if (type === ValueType.Uuid) size = 16;
    else if (type === ValueType.Bytes || type === ValueType.String) {
      if (at + 2 > end) throw overrun(JSON.stringify(name));
      size = (bytes[at]! << 8) | bytes[at + 1]!;
      at += 2;
    } else if (type !== ValueType.BoolTrue && type !== ValueType.BoolFalse) throw new EventStreamError(`event stream header ${JSON.stringify(name)} has unknown value type ${type}`);
    if (at + size > end) throw overrun(JSON.stringify(name));
    switch (type) {
      case ValueType.BoolTrue:
      case ValueType.BoolFalse:
        headers[name] = type === ValueType.BoolTrue;
        break;
      case ValueType.Byte:
        headers[name] = view().getInt8(at);
        break;
      case ValueType.Int16:
        headers[name] = view().getInt16(at);
        break;
      case ValueType.Int32:
        headers[name] = view().getInt32(at);
        break;
      case ValueType.Int64:
      case ValueType.Timestamp: {
        // Beyond 2^53 an int64 loses precision as a number; no AWS header carries one that large.
        const value = Number(view().getBigInt64(at));
        headers[name] = type === ValueType.Timestamp ? new Date(value) : value;
        break;
      }
      case ValueType.String: {
        const value = utf8At(bytes, at, size);
        if (value === undefined) throw notUtf8(JSON.stringify(name));
        headers[name] = value;
        break;
      }
      case ValueType.Bytes:
        headers[name] = bytes.slice(at, at + size);
        break;
      case ValueType.Uuid: {
        const h = Array.from(bytes.subarray(at, at + 16), (b) => b.toString(16).padStart(2, "0")).join("");
        headers[name] = `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
        break;
      }
    }
    at += size;
  }
  return headers;
}

const viewOf = (bytes: Uint8Array) => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);

/**
 * The big-endian uint32 at `at`. Read from the bytes, not through a DataView: a view per piece, and the
 * ArrayBuffer it makes JavaScriptCore materialise, cost more than the reads (issue 15).
 */
const u32 = (bytes: Uint8Array, at: number) => ((bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!) >>> 0;

/** zlib's CRC-32 (Bun.hash.crc32's) by table, for the 8-byte prelude: a subarray and a native call cost more. */
const CRC_TABLE = Int32Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c;
});
function crc32Short(bytes: Uint8Array, start: number, end: number): number {
  let c = -1;
  for (let i = start; i < end; i++) c = CRC_TABLE[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ -1) >>> 0;
}

/** Checks the prelude at `at` (12 bytes there) for its CRC and lengths; returns the total length it vouches for. */
function checkPrelude(bytes: Uint8Array, at: number): number {
  const total = u32(bytes, at);
  const headersLength = u32(bytes, at + 4);
  const expected = u32(bytes, at + 8);
  const actual = crc32Short(bytes, at, at + PRELUDE_BYTES);
  if (expected !== actual) throw new EventStreamError(`event stream prelude CRC mismatch: frame says ${hex(expected)}, bytes give ${hex(actual)}`);
  if (total < OVERHEAD_BYTES) throw new EventStreamError(`event stream message length ${total} is below the 16-byte minimum`);
  if (total > MAX_MESSAGE_BYTES) throw new EventStreamError(`event stream message length ${total} exceeds the ${MAX_MESSAGE_BYTES}-byte limit`);
  if (headersLength > total - OVERHEAD_BYTES) throw new EventStreamError(`event stream headers length ${headersLength} does not fit in a ${total}-byte message`);
  if (headersLength > MAX_HEADERS_BYTES) throw new EventStreamError(`event stream headers length ${headersLength} exceeds ${MAX_HEADERS_BYTES}`);
  return total;
}

/**
 * The last header section a reader parsed, as bytes, and what it parsed to. A stream's messages mostly
 * repeat their headers byte for byte (every contentBlockDelta names the same event and content type):
 * comparing the bytes cost less than reading the headers again, and the same bytes read the same.
 */
class HeaderCache {
  private bytes = new Uint8Array(0);
  private headers: Readonly<Record<string, EventStreamHeaderValue>> | undefined;

  read(bytes: Uint8Array, start: number, length: number): Readonly<Record<string, EventStreamHeaderValue>> {
    if (this.headers && this.same(bytes, start, length)) return this.headers;
    const headers = Object.freeze(parseHeaders(bytes, start, start + length));
    this.bytes = bytes.slice(start, start + length);
    this.headers = headers;
    return headers;
  }

  private same(bytes: Uint8Array, start: number, length: number): boolean {
    const known = this.bytes;
    if (length !== known.length) return false;
    for (let i = 0; i < length; i++) if (bytes[start + i] !== known[i]) return false;
    return true;
  }
}

/**
 * One whole message (the `total` bytes at `at`, prelude already checked) -> headers and payload. Read
 * in place: a typed-array view per message cost more than parsing it.
 */
function parseMessage(bytes: Uint8Array, at: number, total: number, headers: HeaderCache): EventStreamMessage {
  const end = at + total;
  const headersLength = u32(bytes, at + 4);
  const expected = u32(bytes, end - CRC_BYTES);
  const actual = Bun.hash.crc32(bytes.subarray(at, end - CRC_BYTES));
  if (expected !== actual) throw new EventStreamError(`event stream message CRC mismatch: frame says ${hex(expected)}, bytes give ${hex(actual)}`);
  const headersStart = at + PRELUDE_BYTES + CRC_BYTES;
  return {
    headers: headers.read(bytes, headersStart, headersLength),
    payload: bytes.slice(headersStart + headersLength, end - CRC_BYTES),
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
  private readonly headers = new HeaderCache();

  push(chunk: Uint8Array, onMessage: (message: EventStreamMessage) => void): void {
    let at = 0;
    while (at < chunk.length) {
      if (!this.frame) {
        // Common case: a whole message inside the chunk is read in place, without copying the frame.
        if (this.preludeFill === 0 && chunk.length - at >= PRELUDE_BYTES + CRC_BYTES) {
          const total = checkPrelude(chunk, at);
          if (chunk.length - at >= total) {
            onMessage(parseMessage(chunk, at, total, this.headers));
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
        this.frame = new Uint8Array(checkPrelude(this.prelude, 0));
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
        onMessage(parseMessage(frame, 0, frame.length, this.headers));
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
