// OTLP/HTTP protobuf: an ExportTraceServiceRequest as protobuf bytes. Field numbers and types are those of
// opentelemetry-proto (collector/trace/v1/trace_service.proto, trace/v1/trace.proto,
// common/v1/common.proto, resource/v1/resource.proto); each is named where it is written. Default values
// are left out as proto3 does, except the status, always present so a reader never has to guess.
import type { AttributeValue, FinishedTrace, SpanData } from "../records.ts";
import type { AttributeKey, SharedAttributes, SpanOut } from "../spans.ts";
import { flagsFor, isIntAttribute, KIND, type OtlpResource, SCOPE_NAME, spanFlags, STATUS_CODE } from "./model.ts";
import { ProtoWriter, varintSize } from "./protobuf-writer.ts";

// AnyValue: string_value = 1, bool_value = 2, int_value = 3 (int64), double_value = 4, array_value = 5.
function anyValue(w: ProtoWriter, key: string, value: AttributeValue): void {
  switch (typeof value) {
    case "string":
      return w.string(1, value);
    case "boolean":
      return w.uint(2, value ? 1 : 0);
    case "number":
      return isIntAttribute(key, value) ? w.int64(3, value) : w.double(4, value);
    default: {
      // ArrayValue: values = 1 (repeated AnyValue).
      const array = w.begin(5);
      for (const item of value) {
        const v = w.begin(1);
        w.string(1, item);
        w.end(v);
      }
      w.end(array);
    }
  }
}

// A request's own values (ids, and the model a client named before any route took it: a refused
// request's) are never cached: a client could fill the cache with them.
const UNIQUE_VALUES = new Set(["gateway.request_id", "gateway.key_id", "gateway.group", "gen_ai.request.model"]);

/**
 * Whole KeyValue fields for a string attribute whose value recurs (a model, a pool, a lane, an outcome),
 * and a key's own bytes (`key = 1`) for the rest: a span is mostly these, and copying them is most of
 * what encoding a span costs. Bounded, never cleared: the pairs are the config's names and a few words.
 */
const FIELDS = new Map<string, Map<string, Uint8Array>>();
const KEYS = new Map<string, Uint8Array>();
const MAX_CACHED = 4096;
let cached = 0;

function encoded(write: (w: ProtoWriter) => void): Uint8Array {
  const w = new ProtoWriter(128);
  write(w);
  return w.finish().slice();
}

/**
 * A count (a non-negative safe integer) as a whole KeyValue field: all of it before the value's varint
 * depends only on the key and the varint's size, so those bytes are kept per key and size and a count
 * costs one copy and its varint. null for a key the conventions type double (a temperature of 1).
 */
const COUNT_PREFIXES = new Map<string, (Uint8Array | undefined)[] | null>();

function countField(w: ProtoWriter, key: string, value: number): boolean {
  let prefixes = COUNT_PREFIXES.get(key);
  if (prefixes === undefined) {
    if (cached >= MAX_CACHED) return false;
    cached++;
    COUNT_PREFIXES.set(key, (prefixes = isIntAttribute(key, 0) ? [] : null));
  }
  if (prefixes === null) return false;
  const size = varintSize(value);
  w.raw((prefixes[size] ??= countPrefix(key, size)));
  w.varint(value);
  return true;
}

/** A span attribute (Span.attributes = 9). */
function attribute(w: ProtoWriter, key: string, value: AttributeValue): void {
  if (typeof value === "number") {
    if (value >= 0 && Number.isSafeInteger(value) && countField(w, key, value)) return;
  } else if (typeof value === "string" && !UNIQUE_VALUES.has(key)) {
    let byValue = FIELDS.get(key);
    if (byValue === undefined) FIELDS.set(key, (byValue = new Map()));
    let bytes = byValue.get(value);
    if (bytes === undefined && cached < MAX_CACHED && value.length <= 256) {
      cached++;
      byValue.set(value, (bytes = encoded((c) => keyValueField(c, 9, key, value))));
    }
    if (bytes !== undefined) return w.raw(bytes);
  }
  keyValueField(w, 9, key, value);
}

const SHARED = new WeakMap<object, Uint8Array>();

/** A span's shared attributes as Span.attributes fields, encoded once per object. */
function sharedFields(shared: SharedAttributes): Uint8Array {
  let bytes = SHARED.get(shared);
  if (bytes === undefined) {
    bytes = encoded((c) => {
      for (const key in shared) keyValueField(c, 9, key, shared[key]!);
    });
    SHARED.set(shared, bytes);
  }
  return bytes;
}

function keyValueField(w: ProtoWriter, field: number, key: string, value: AttributeValue): void {
  const kv = w.begin(field);
  let keyBytes = KEYS.get(key);
  if (keyBytes === undefined && cached < MAX_CACHED) {
    cached++;
    KEYS.set(key, (keyBytes = encoded((c) => c.string(1, key))));
  }
  if (keyBytes !== undefined) w.raw(keyBytes);
  else w.string(1, key);
  const v = w.begin(2);
  anyValue(w, key, value);
  w.end(v);
  w.end(kv);
}

/** One span as a ScopeSpans.spans field (2), appended to `w`: a batch gathered span by span. */
export function encodeSpan(w: ProtoWriter, s: SpanData): void {
  const m = spanHead(w, s.traceId, s.traceState, s.kind, s.spanId, s.parentSpanId, s.name);
  w.fixed64(7, s.startTimeUnixNano); // start_time_unix_nano (fixed64)
  w.fixed64(8, s.endTimeUnixNano); // end_time_unix_nano (fixed64)
  if (s.shared) w.raw(sharedFields(s.shared));
  for (const key in s.attributes) attribute(w, key, s.attributes[key]!);
  spanTail(w, m, s.status, spanFlags(s));
}

/** A span's fields before its times (fields 1 to 6); the answer goes to spanTail. */
function spanHead(w: ProtoWriter, traceId: string, traceState: string | null, kind: SpanData["kind"], spanId: string, parentSpanId: string | null, name: string): number {
  const m = w.begin(2);
  w.hexBytes(1, traceId); // trace_id (bytes, 16)
  w.hexBytes(2, spanId); // span_id (bytes, 8)
  if (traceState) w.string(3, traceState); // trace_state
  if (parentSpanId) w.hexBytes(4, parentSpanId); // parent_span_id (bytes, 8)
  w.string(5, name); // name
  w.uint(6, KIND[kind]); // kind (SpanKind)
  return m;
}

/** After the attributes (9): status = 15 (Status: message = 2, code = 3), flags = 16 (fixed32). */
function spanTail(w: ProtoWriter, m: number, status: SpanData["status"], flags: number): void {
  const st = w.begin(15);
  if (status.message) w.string(2, status.message);
  const code = STATUS_CODE[status.code];
  if (code !== 0) w.uint(3, code);
  w.end(st);
  w.fixed32(16, flags);
  w.end(m);
}

/**
 * A trace's spans written by spans.ts writeSpans straight into protobuf, the same bytes encodeSpan
 * writes for their SpanData, with no span objects made; each span into the writer `target` gives for it.
 */
export class ProtobufSpanOut implements SpanOut {
  private w: ProtoWriter | undefined;
  private message = 0;
  private flags = 0;

  constructor(private readonly target: () => ProtoWriter) {}

  begin(trace: FinishedTrace, kind: SpanData["kind"], spanId: string, parentSpanId: string | null, name: string, startMs: number, endMs: number, shared: SharedAttributes | undefined): void {
    const w = (this.w = this.target());
    this.message = spanHead(w, trace.traceId, trace.traceState, kind, spanId, parentSpanId, name);
    w.fixed64Nanos(7, startMs);
    w.fixed64Nanos(8, endMs);
    if (shared) w.raw(sharedFields(shared));
    this.flags = flagsFor(kind, parentSpanId !== null);
  }

  count(key: AttributeKey, value: number): void {
    const w = this.w!;
    if (!(value >= 0 && Number.isSafeInteger(value))) return keyValueField(w, 9, key.name, value);
    // What comes before the count's varint depends on the key and the varint's size only.
    const size = varintSize(value);
    const prefixes = (KEY_COUNTS[key.id] ??= []);
    w.raw((prefixes[size] ??= countPrefix(key.name, size)));
    w.varint(value);
  }

  number(key: AttributeKey, value: number): void {
    attribute(this.w!, key.name, value);
  }

  text(key: AttributeKey, value: string): void {
    const fields = (KEY_TEXTS[key.id] ??= new Map());
    let bytes = fields.get(value);
    if (bytes === undefined && fields.size < MAX_TEXTS && value.length <= 256) fields.set(value, (bytes = encoded((c) => keyValueField(c, 9, key.name, value))));
    if (bytes !== undefined) this.w!.raw(bytes);
    else keyValueField(this.w!, 9, key.name, value);
  }

  unique(key: AttributeKey, value: string): void {
    keyValueField(this.w!, 9, key.name, value);
  }

  end(status: SpanData["status"]): void {
    spanTail(this.w!, this.message, status, this.flags);
  }
}

/** By AttributeKey id: count prefixes by varint size; whole fields by text value (at most MAX_TEXTS a key). */
const KEY_COUNTS: (Uint8Array | undefined)[][] = [];
const KEY_TEXTS: Map<string, Uint8Array>[] = [];
const MAX_TEXTS = 256;

/** A count field's bytes before its varint: the field for a value of that varint size, its varint cut off. */
function countPrefix(key: string, size: number): Uint8Array {
  const whole = encoded((c) => keyValueField(c, 9, key, 128 ** (size - 1)));
  return whole.subarray(0, whole.length - size);
}

/** What every request body of one resource starts with: its Resource and InstrumentationScope fields. */
export interface ProtobufFrame {
  /** ResourceSpans.resource = 1 (Resource.attributes = 1: service.name, service.version). */
  readonly resource: Uint8Array;
  /** ScopeSpans.scope = 1 (InstrumentationScope: name = 1, version = 2). */
  readonly scope: Uint8Array;
}

export function protobufFrame(resource: OtlpResource): ProtobufFrame {
  const r = new ProtoWriter(128);
  const res = r.begin(1);
  keyValueField(r, 1, "service.name", resource.serviceName);
  keyValueField(r, 1, "service.version", resource.serviceVersion);
  r.end(res);
  const c = new ProtoWriter(64);
  const scope = c.begin(1);
  c.string(1, SCOPE_NAME);
  if (resource.serviceVersion) c.string(2, resource.serviceVersion);
  c.end(scope);
  return { resource: r.finish().slice(), scope: c.finish().slice() };
}

/**
 * An ExportTraceServiceRequest around spans already encoded (encodeSpan): one ResourceSpans
 * (resource_spans = 1) holding one ScopeSpans (scope_spans = 2). Written into `out` (reset here); the
 * answer is a view of its buffer, valid until its next use.
 */
export function frameTracesProtobuf(spans: Uint8Array, frame: ProtobufFrame, out: ProtoWriter): Uint8Array {
  const scopeSpans = frame.scope.length + spans.length;
  const resourceSpans = frame.resource.length + 1 + varintSize(scopeSpans) + scopeSpans;
  out.reset();
  out.header(1, resourceSpans);
  out.raw(frame.resource);
  out.header(2, scopeSpans);
  out.raw(frame.scope);
  out.raw(spans);
  return out.finish();
}

/** The request body for `content-type: application/x-protobuf`, spans given whole. */
export function encodeTracesProtobuf(spans: readonly SpanData[], resource: OtlpResource, out = new ProtoWriter(256 + spans.length * 640)): Uint8Array {
  const body = new ProtoWriter(256 + spans.length * 640);
  for (const s of spans) encodeSpan(body, s);
  return frameTracesProtobuf(body.finish(), protobufFrame(resource), out);
}
