// OTLP/HTTP JSON: an ExportTraceServiceRequest (opentelemetry/proto/collector/trace/v1/trace_service.proto)
// in the OTLP JSON Protobuf Encoding (opentelemetry-proto docs/specification.md, "JSON Protobuf
// Encoding"), which departs from protobuf's own JSON mapping in two ways a collector insists on:
// trace_id/span_id/parent_span_id are lowercase hex strings (not base64), and enums are integers (not
// names). The rest is the proto3 JSON mapping: lowerCamelCase names, 64-bit integers (int_value, the
// fixed64 times) as decimal strings, non-finite doubles as "NaN"/"Infinity"/"-Infinity", default values
// omitted.
import type { AttributeValue, SpanData } from "../records.ts";
import { isIntAttribute, KIND, type OtlpResource, SCOPE_NAME, spanFlags, STATUS_CODE } from "./model.ts";

type JsonAnyValue =
  | { stringValue: string }
  | { boolValue: boolean }
  | { intValue: string }
  | { doubleValue: number | string }
  | { arrayValue: { values: JsonAnyValue[] } };

interface JsonKeyValue {
  key: string;
  value: JsonAnyValue;
}

function numberValue(key: string, value: number): JsonAnyValue {
  if (isIntAttribute(key, value)) return { intValue: Number.isSafeInteger(value) ? String(value) : BigInt(value).toString() };
  // JSON has no literal for these; the proto3 mapping spells them as strings.
  if (!Number.isFinite(value)) return { doubleValue: Number.isNaN(value) ? "NaN" : value > 0 ? "Infinity" : "-Infinity" };
  return { doubleValue: value };
}

function anyValue(key: string, value: AttributeValue): JsonAnyValue {
  switch (typeof value) {
    case "string":
      return { stringValue: value };
    case "number":
      return numberValue(key, value);
    case "boolean":
      return { boolValue: value };
    default:
      return { arrayValue: { values: value.map((item) => ({ stringValue: item })) } };
  }
}

function attributes(s: SpanData): JsonKeyValue[] {
  const out: JsonKeyValue[] = [];
  for (const key in s.shared) out.push({ key, value: anyValue(key, s.shared[key]!) });
  for (const key in s.attributes) out.push({ key, value: anyValue(key, s.attributes[key]!) });
  return out;
}

function span(s: SpanData): Record<string, unknown> {
  const out: Record<string, unknown> = { traceId: s.traceId, spanId: s.spanId };
  if (s.traceState) out.traceState = s.traceState;
  if (s.parentSpanId) out.parentSpanId = s.parentSpanId;
  out.flags = spanFlags(s);
  out.name = s.name;
  out.kind = KIND[s.kind];
  out.startTimeUnixNano = s.startTimeUnixNano.toString();
  out.endTimeUnixNano = s.endTimeUnixNano.toString();
  out.attributes = attributes(s);
  const status: { code: number; message?: string } = { code: STATUS_CODE[s.status.code] };
  if (s.status.message) status.message = s.status.message;
  out.status = status;
  return out;
}

/** The request body for `content-type: application/json`. */
export function encodeTracesJson(spans: readonly SpanData[], resource: OtlpResource): string {
  return JSON.stringify({
    resourceSpans: [
      {
        resource: {
          attributes: [
            { key: "service.name", value: { stringValue: resource.serviceName } },
            { key: "service.version", value: { stringValue: resource.serviceVersion } },
          ],
        },
        scopeSpans: [{ scope: resource.serviceVersion ? { name: SCOPE_NAME, version: resource.serviceVersion } : { name: SCOPE_NAME }, spans: spans.map(span) }],
      },
    ],
  });
}
