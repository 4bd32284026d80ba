// The least of the protobuf wire format (protobuf.dev/programming-guides/encoding) the OTLP encoder
// needs: varints, fixed32/fixed64/double (little-endian) and length-delimited fields. A nested message's
// length is unknown until it is written, so one byte is reserved for it and the body is moved up in the
// rare case it needs more (a message of 128 bytes or more): one memmove per message instead of a sizing
// pass over every span, and the output stays canonical (no padded varints). A writer is reused batch
// after batch (reset): a fresh buffer of a batch's size is fresh pages, and faulting them in cost more
// than the encoding.

const WIRE_VARINT = 0;
const WIRE_I64 = 1;
const WIRE_LEN = 2;
const WIRE_I32 = 5;

const utf8 = new TextEncoder();

/** Hex digit -> value; 0 for anything else (ids are checked by their producer, never trusted to throw). */
const HEX = new Uint8Array(128);
for (let i = 0; i < 10; i++) HEX[48 + i] = i;
for (let i = 0; i < 6; i++) HEX[97 + i] = HEX[65 + i] = 10 + i;

/** Bytes a varint of `value` takes. */
export function varintSize(value: number): number {
  let size = 1;
  while (value >= 128) {
    value = Math.floor(value / 128);
    size++;
  }
  return size;
}

export class ProtoWriter {
  private buf: Uint8Array;
  private view: DataView;
  private pos = 0;

  constructor(initialSize: number) {
    this.buf = new Uint8Array(Math.max(64, initialSize));
    this.view = new DataView(this.buf.buffer);
  }

  /** The bytes written: a view of the writer's buffer, valid until the next reset(). */
  finish(): Uint8Array {
    return this.buf.subarray(0, this.pos);
  }

  /** Starts over in the same buffer: what finish() returned before is overwritten from here on. */
  reset(): void {
    this.pos = 0;
  }

  /** Bytes written so far; truncate() goes back to such a mark (a message that could not be finished). */
  get length(): number {
    return this.pos;
  }

  truncate(mark: number): void {
    this.pos = Math.min(this.pos, mark);
  }

  /** A bare varint (the value of a field whose tag is already written, as part of cached bytes). */
  varint(value: number): void {
    this.ensure(10);
    this.rawVarint(value);
  }

  /** A length-delimited field's tag and length, its `length` bytes of body to be written next. */
  header(field: number, length: number): void {
    this.tag(field, WIRE_LEN);
    this.rawVarint(length);
  }

  /** Bytes already encoded (a cached field), copied as they are. */
  raw(bytes: Uint8Array): void {
    this.ensure(bytes.length);
    this.copy(bytes);
  }

  /** Short copies by hand: a native set() call costs more than the loop below a few dozen bytes. */
  private copy(bytes: Uint8Array): void {
    const n = bytes.length;
    if (n > 48) this.buf.set(bytes, this.pos);
    else {
      const buf = this.buf;
      const at = this.pos;
      for (let i = 0; i < n; i++) buf[at + i] = bytes[i]!;
    }
    this.pos += n;
  }

  private ensure(extra: number): void {
    if (this.pos + extra <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + extra) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }

  /** A non-negative safe integer as a varint (ensure() first). */
  private rawVarint(value: number): void {
    const buf = this.buf;
    let pos = this.pos;
    while (value >= 128) {
      buf[pos++] = (value % 128) | 128;
      value = Math.floor(value / 128);
    }
    buf[pos++] = value;
    this.pos = pos;
  }

  private tag(field: number, wire: number): void {
    this.ensure(15);
    this.rawVarint(field * 8 + wire);
  }

  /** uint32, enum, bool: a non-negative safe integer. */
  uint(field: number, value: number): void {
    this.tag(field, WIRE_VARINT);
    this.rawVarint(value);
  }

  /** int64 (two's complement in 64 bits: a negative takes ten bytes). */
  int64(field: number, value: number): void {
    if (value >= 0 && Number.isSafeInteger(value)) return this.uint(field, value);
    this.tag(field, WIRE_VARINT);
    let big = BigInt.asUintN(64, BigInt(value));
    const buf = this.buf;
    while (big >= 128n) {
      buf[this.pos++] = Number(big & 127n) | 128;
      big >>= 7n;
    }
    buf[this.pos++] = Number(big);
  }

  fixed32(field: number, value: number): void {
    this.tag(field, WIRE_I32);
    this.view.setUint32(this.pos, value, true);
    this.pos += 4;
  }

  fixed64(field: number, value: bigint): void {
    this.tag(field, WIRE_I64);
    this.view.setBigUint64(this.pos, value, true);
    this.pos += 8;
  }

  /**
   * Epoch milliseconds as fixed64 nanoseconds: the integer Math.round(ms * 1e6) that a BigInt of it holds
   * (spans.ts nanos), written as two 32-bit halves (both exact in a double), with no BigInt made.
   */
  fixed64Nanos(field: number, ms: number): void {
    const ns = Math.round(ms * 1e6);
    const high = Math.floor(ns / 4_294_967_296);
    this.tag(field, WIRE_I64);
    this.view.setUint32(this.pos, ns - high * 4_294_967_296, true);
    this.view.setUint32(this.pos + 4, high, true);
    this.pos += 8;
  }

  double(field: number, value: number): void {
    this.tag(field, WIRE_I64);
    this.view.setFloat64(this.pos, value, true);
    this.pos += 8;
  }

  string(field: number, value: string): void {
    this.tag(field, WIRE_LEN);
    const n = value.length;
    this.ensure(5 + n * 3);
    const buf = this.buf;
    const start = this.pos;
    // Attribute keys and most values are short ASCII: copied by hand, no encoder call.
    if (n < 128) {
      let i = 0;
      for (; i < n; i++) {
        const c = value.charCodeAt(i);
        if (c >= 128) break;
        buf[start + 1 + i] = c;
      }
      if (i === n) {
        buf[start] = n;
        this.pos = start + 1 + n;
        return;
      }
    }
    const written = utf8.encodeInto(value, buf.subarray(start + 1)).written;
    this.pos = start + 1 + written;
    this.close(start);
  }

  /** An id given as hex digits, as `bytes` of half as many. */
  hexBytes(field: number, hex: string): void {
    this.tag(field, WIRE_LEN);
    const n = hex.length >> 1;
    this.ensure(1 + n);
    const buf = this.buf;
    const start = this.pos++;
    for (let i = 0; i < n; i++) buf[this.pos++] = (HEX[hex.charCodeAt(2 * i) & 127]! << 4) | HEX[hex.charCodeAt(2 * i + 1) & 127]!;
    this.close(start);
  }

  /** Opens a nested message as field `field`; pass the result to end(). */
  begin(field: number): number {
    this.tag(field, WIRE_LEN);
    this.ensure(1);
    return this.pos++;
  }

  end(start: number): void {
    this.close(start);
  }

  /** Writes the length of what follows the byte reserved at `start`, moving it up if it needs more bytes. */
  private close(start: number): void {
    const length = this.pos - start - 1;
    if (length < 128) {
      this.buf[start] = length;
      return;
    }
    const size = varintSize(length);
    this.ensure(size - 1);
    this.buf.copyWithin(start + size, start + 1, this.pos);
    const end = this.pos + size - 1;
    this.pos = start;
    this.rawVarint(length);
    this.pos = end;
  }
}
