// OTLP/HTTP protobuf: an ExportTraceServiceRequest as protobuf bytes. Field numbers and types are those of
// opentelemetry-proto (collector/trace/v1/trace_service.proto, trace/v1/trace.proto,
// common/v1/common.proto, resource/v1/resource.proto); each is named where it is written. Default values
// are left out as proto3 does, except the status, always present so a reader never has to guess.
import type { AttributeValue, SpanData } from "../records.ts";
import { isInt64, KIND, type OtlpResource, SCOPE_NAME, spanFlags, STATUS_CODE } from "./model.ts";
import { ProtoWriter } from "./protobuf-writer.ts";

// AnyValue: string_value = 1, bool_value = 2, int_value = 3 (int64), double_value = 4, array_value = 5.
function anyValue(w: ProtoWriter, value: AttributeValue): void {
  switch (typeof value) {
    case "string":
      return w.string(1, value);
    case "boolean":
      return w.uint(2, value ? 1 : 0);
    case "number":
      return isInt64(value) ? w.int64(3, value) : w.double(4, value);
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

const UNIQUE_VALUES = new Set(["gateway.request_id", "gateway.key_id", "gateway.group"]);

// KeyValue: key = 1, value = 2 (AnyValue).
function keyValue(w: ProtoWriter, field: number, key: string, value: AttributeValue): void {
  const kv = w.begin(field);
  w.repeated(1, key);
  const v = w.begin(2);
  // Values of these keys are per request (ids): the rest are a config's names and a few words.
  if (typeof value === "string" && !UNIQUE_VALUES.has(key)) {
    w.repeated(1, value); // AnyValue.string_value = 1
  } else anyValue(w, value);
  w.end(v);
  w.end(kv);
}

function span(w: ProtoWriter, s: SpanData): void {
  // ScopeSpans.spans = 2.
  const m = w.begin(2);
  w.hexBytes(1, s.traceId); // trace_id (bytes, 16)
  w.hexBytes(2, s.spanId); // span_id (bytes, 8)
  if (s.traceState) w.string(3, s.traceState); // trace_state
  if (s.parentSpanId) w.hexBytes(4, s.parentSpanId); // parent_span_id (bytes, 8)
  w.repeated(5, s.name); // name
  w.uint(6, KIND[s.kind]); // kind (SpanKind)
  w.fixed64(7, s.startTimeUnixNano); // start_time_unix_nano (fixed64)
  w.fixed64(8, s.endTimeUnixNano); // end_time_unix_nano (fixed64)
  for (const key in s.attributes) keyValue(w, 9, key, s.attributes[key]!); // attributes (repeated KeyValue)
  // status = 15 (Status: message = 2, code = 3).
  const status = w.begin(15);
  if (s.status.message) w.string(2, s.status.message);
  const code = STATUS_CODE[s.status.code];
  if (code !== 0) w.uint(3, code);
  w.end(status);
  w.fixed32(16, spanFlags(s)); // flags (fixed32)
  w.end(m);
}

/** The request body for `content-type: application/x-protobuf`. */
export function encodeTracesProtobuf(spans: readonly SpanData[], resource: OtlpResource): Uint8Array {
  // A GenAI span with its attributes is a few hundred bytes; the writer grows past a low guess.
  const w = new ProtoWriter(256 + spans.length * 512);
  // ExportTraceServiceRequest.resource_spans = 1.
  const rs = w.begin(1);
  // ResourceSpans.resource = 1; Resource.attributes = 1.
  const res = w.begin(1);
  keyValue(w, 1, "service.name", resource.serviceName);
  keyValue(w, 1, "service.version", resource.serviceVersion);
  w.end(res);
  // ResourceSpans.scope_spans = 2; ScopeSpans.scope = 1; InstrumentationScope: name = 1, version = 2.
  const ss = w.begin(2);
  const scope = w.begin(1);
  w.string(1, SCOPE_NAME);
  if (resource.serviceVersion) w.string(2, resource.serviceVersion);
  w.end(scope);
  for (const s of spans) span(w, s);
  w.end(ss);
  w.end(rs);
  return w.finish();
}
