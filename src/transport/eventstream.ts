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

/**
 * zlib's CRC-32 (Bun.hash.crc32's) by table, for the 8-byte prelude: a subarray and a native call cost
 * more. The table is written out (n -> n shifted right 8 times, 0xedb88320 folded in at each 1 bit
 * shifted out): computed at import it cost every start ~0.3 ms; the unit test holds it to Bun.hash.crc32.
 */
const CRC_TABLE = new Int32Array([
  0x00000000, 0x77073096, 0xee0e612c, 0x990951ba, 0x076dc419, 0x706af48f, 0xe963a535, 0x9e6495a3,
  0x0edb8832, 0x79dcb8a4, 0xe0d5e91e, 0x97d2d988, 0x09b64c2b, 0x7eb17cbd, 0xe7b82d07, 0x90bf1d91,
  0x1db71064, 0x6ab020f2, 0xf3b97148, 0x84be41de, 0x1adad47d, 0x6ddde4eb, 0xf4d4b551, 0x83d385c7,
  0x136c9856, 0x646ba8c0, 0xfd62f97a, 0x8a65c9ec, 0x14015c4f, 0x63066cd9, 0xfa0f3d63, 0x8d080df5,
  0x3b6e20c8, 0x4c69105e, 0xd56041e4, 0xa2677172, 0x3c03e4d1, 0x4b04d447, 0xd20d85fd, 0xa50ab56b,
  0x35b5a8fa, 0x42b2986c, 0xdbbbc9d6, 0xacbcf940, 0x32d86ce3, 0x45df5c75, 0xdcd60dcf, 0xabd13d59,
  0x26d930ac, 0x51de003a, 0xc8d75180, 0xbfd06116, 0x21b4f4b5, 0x56b3c423, 0xcfba9599, 0xb8bda50f,
  0x2802b89e, 0x5f058808, 0xc60cd9b2, 0xb10be924, 0x2f6f7c87, 0x58684c11, 0xc1611dab, 0xb6662d3d,
  0x76dc4190, 0x01db7106, 0x98d220bc, 0xefd5102a, 0x71b18589, 0x06b6b51f, 0x9fbfe4a5, 0xe8b8d433,
  0x7807c9a2, 0x0f00f934, 0x9609a88e, 0xe10e9818, 0x7f6a0dbb, 0x086d3d2d, 0x91646c97, 0xe6635c01,
  0x6b6b51f4, 0x1c6c6162, 0x856530d8, 0xf262004e, 0x6c0695ed, 0x1b01a57b, 0x8208f4c1, 0xf50fc457,
  0x65b0d9c6, 0x12b7e950, 0x8bbeb8ea, 0xfcb9887c, 0x62dd1ddf, 0x15da2d49, 0x8cd37cf3, 0xfbd44c65,
  0x4db26158, 0x3ab551ce, 0xa3bc0074, 0xd4bb30e2, 0x4adfa541, 0x3dd895d7, 0xa4d1c46d, 0xd3d6f4fb,
  0x4369e96a, 0x346ed9fc, 0xad678846, 0xda60b8d0, 0x44042d73, 0x33031de5, 0xaa0a4c5f, 0xdd0d7cc9,
  0x5005713c, 0x270241aa, 0xbe0b1010, 0xc90c2086, 0x5768b525, 0x206f85b3, 0xb966d409, 0xce61e49f,
  0x5edef90e, 0x29d9c998, 0xb0d09822, 0xc7d7a8b4, 0x59b33d17, 0x2eb40d81, 0xb7bd5c3b, 0xc0ba6cad,
  0xedb88320, 0x9abfb3b6, 0x03b6e20c, 0x74b1d29a, 0xead54739, 0x9dd277af, 0x04db2615, 0x73dc1683,
  0xe3630b12, 0x94643b84, 0x0d6d6a3e, 0x7a6a5aa8, 0xe40ecf0b, 0x9309ff9d, 0x0a00ae27, 0x7d079eb1,
  0xf00f9344, 0x8708a3d2, 0x1e01f268, 0x6906c2fe, 0xf762575d, 0x806567cb, 0x196c3671, 0x6e6b06e7,
  0xfed41b76, 0x89d32be0, 0x10da7a5a, 0x67dd4acc, 0xf9b9df6f, 0x8ebeeff9, 0x17b7be43, 0x60b08ed5,
  0xd6d6a3e8, 0xa1d1937e, 0x38d8c2c4, 0x4fdff252, 0xd1bb67f1, 0xa6bc5767, 0x3fb506dd, 0x48b2364b,
  0xd80d2bda, 0xaf0a1b4c, 0x36034af6, 0x41047a60, 0xdf60efc3, 0xa867df55, 0x316e8eef, 0x4669be79,
  0xcb61b38c, 0xbc66831a, 0x256fd2a0, 0x5268e236, 0xcc0c7795, 0xbb0b4703, 0x220216b9, 0x5505262f,
  0xc5ba3bbe, 0xb2bd0b28, 0x2bb45a92, 0x5cb36a04, 0xc2d7ffa7, 0xb5d0cf31, 0x2cd99e8b, 0x5bdeae1d,
  0x9b64c2b0, 0xec63f226, 0x756aa39c, 0x026d930a, 0x9c0906a9, 0xeb0e363f, 0x72076785, 0x05005713,
  0x95bf4a82, 0xe2b87a14, 0x7bb12bae, 0x0cb61b38, 0x92d28e9b, 0xe5d5be0d, 0x7cdcefb7, 0x0bdbdf21,
  0x86d3d2d4, 0xf1d4e242, 0x68ddb3f8, 0x1fda836e, 0x81be16cd, 0xf6b9265b, 0x6fb077e1, 0x18b74777,
  0x88085ae6, 0xff0f6a70, 0x66063bca, 0x11010b5c, 0x8f659eff, 0xf862ae69, 0x616bffd3, 0x166ccf45,
  0xa00ae278, 0xd70dd2ee, 0x4e048354, 0x3903b3c2, 0xa7672661, 0xd06016f7, 0x4969474d, 0x3e6e77db,
  0xaed16a4a, 0xd9d65adc, 0x40df0b66, 0x37d83bf0, 0xa9bcae53, 0xdebb9ec5, 0x47b2cf7f, 0x30b5ffe9,
  0xbdbdf21c, 0xcabac28a, 0x53b39330, 0x24b4a3a6, 0xbad03605, 0xcdd70693, 0x54de5729, 0x23d967bf,
  0xb3667a2e, 0xc4614ab8, 0x5d681b02, 0x2a6f2b94, 0xb40bbe37, 0xc30c8ea1, 0x5a05df1b, 0x2d02ef8d,
]);
export function crc32Short(bytes: Uint8Array, start: number, end: number): number {
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
