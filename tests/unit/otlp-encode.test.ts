// The OTLP encoders against the official OpenTelemetry JS transformer (@opentelemetry/otlp-transformer,
// a dev dependency kept only as this oracle): the same spans, built as the SDK's ReadableSpans, go
// through its ProtobufTraceSerializer and JsonTraceSerializer, and ours must say the same thing.
// Protobuf: both bodies are decoded by a schema-light wire decoder below and compared field by field,
// proto3 defaults removed (the official writer also writes zero counts, which a reader cannot tell from
// absent ones). JSON: compared after the same removal, with one deliberate difference: the official
// serializer writes int_value as a JSON number, the OTLP JSON encoding (proto3 JSON mapping, and the
// design's "times as decimal strings" rule for 64-bit integers) a decimal string; we follow the spec.
import { describe, expect, test } from "bun:test";
import { SpanKind, SpanStatusCode, type HrTime } from "@opentelemetry/api";
import { TraceState } from "@opentelemetry/core";
import { JsonTraceSerializer, ProtobufTraceSerializer } from "@opentelemetry/otlp-transformer";
import { resourceFromAttributes } from "@opentelemetry/resources";
import type { ReadableSpan } from "@opentelemetry/sdk-trace";
import type { SpanData } from "../../src/telemetry/records.ts";
import { encodeTracesJson } from "../../src/telemetry/otlp/encode-json.ts";
import { encodeTracesProtobuf } from "../../src/telemetry/otlp/encode-protobuf.ts";
import { decode, REQUEST } from "../support/otlp-decode.ts";

const RESOURCE = { serviceName: "gateway-test", serviceVersion: "1.2.3" };
const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const T0 = 1_767_225_600_123_456_789n; // 2026-01-01, nanoseconds that a double would round

const server: SpanData = {
  traceId: TRACE,
  spanId: "00f067aa0ba902b7",
  parentSpanId: "b7ad6b7169203331",
  traceState: "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
  name: "chat gpt-4o",
  kind: "server",
  startTimeUnixNano: T0,
  endTimeUnixNano: T0 + 1_234_567_890n,
  attributes: {
    "gen_ai.operation.name": "chat",
    "gen_ai.request.model": "gpt-4o",
    "gen_ai.usage.input_tokens": 1234,
    "gen_ai.usage.output_tokens": 0,
    "gen_ai.request.temperature": 0.7,
    "gen_ai.response.finish_reasons": ["stop", "length"],
    "http.response.status_code": 200,
    "gateway.request_id": "req-ü-€-😀", // multi-byte UTF-8
    "gateway.big": 2 ** 53 + 2, // past the safe integers, still int64
    "gateway.negative": -5, // ten-byte varint
    "gateway.flag": true,
    "gateway.off": false,
    "gateway.empty_list": [],
    "gen_ai.input.messages": JSON.stringify([{ role: "user", parts: [{ type: "text", content: "x".repeat(20_000) }] }]), // multi-byte lengths
  },
  status: { code: "error", message: "exhausted" },
};

const client: SpanData = {
  traceId: TRACE,
  spanId: "a1b2c3d4e5f60718",
  parentSpanId: server.spanId,
  traceState: null,
  name: "chat gpt-4o-2024-08-06",
  kind: "client",
  startTimeUnixNano: T0 + 1_000n,
  endTimeUnixNano: T0 + 900_000_000n,
  attributes: { "gateway.attempt": 1, "error.type": "503" },
  // A lane's attributes, one object for all its spans: encoded once, then copied (the batch below reuses it).
  shared: Object.freeze({ "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "server.address": "api.openai.com", "server.port": 443 }),
  status: { code: "unset" },
};

const root: SpanData = { ...server, spanId: "1111111111111111", parentSpanId: null, traceState: null, attributes: {}, status: { code: "ok" } };

function hrTime(ns: bigint): HrTime {
  return [Number(ns / 1_000_000_000n), Number(ns % 1_000_000_000n)];
}

/** The same span as the official SDK hands its exporters. */
function readable(s: SpanData, resource: ReadableSpan["resource"], scope: ReadableSpan["instrumentationScope"]): ReadableSpan {
  const parent = s.parentSpanId === null ? undefined : { traceId: s.traceId, spanId: s.parentSpanId, traceFlags: 1, isRemote: s.kind === "server" };
  const status = { unset: SpanStatusCode.UNSET, ok: SpanStatusCode.OK, error: SpanStatusCode.ERROR }[s.status.code];
  return {
    name: s.name,
    kind: s.kind === "server" ? SpanKind.SERVER : SpanKind.CLIENT,
    spanContext: () => ({ traceId: s.traceId, spanId: s.spanId, traceFlags: 1, ...(s.traceState ? { traceState: new TraceState(s.traceState) } : {}) }),
    ...(parent ? { parentSpanContext: parent } : {}),
    startTime: hrTime(s.startTimeUnixNano),
    endTime: hrTime(s.endTimeUnixNano),
    status: s.status.message ? { code: status, message: s.status.message } : { code: status },
    attributes: { ...s.shared, ...s.attributes } as ReadableSpan["attributes"],
    links: [],
    events: [],
    duration: hrTime(s.endTimeUnixNano - s.startTimeUnixNano),
    ended: true,
    resource,
    instrumentationScope: scope,
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}

function officialPair(spans: SpanData[]): { protobuf: Uint8Array; json: unknown } {
  // One Resource and one scope object for the batch, as an SDK tracer has: the protobuf serializer groups
  // spans by their identity.
  const resource = resourceFromAttributes({ "service.name": RESOURCE.serviceName, "service.version": RESOURCE.serviceVersion });
  const scope = { name: "gateway", version: RESOURCE.serviceVersion };
  const sdk = spans.map((s) => readable(s, resource, scope));
  return { protobuf: ProtobufTraceSerializer.serializeRequest(sdk)!, json: JSON.parse(new TextDecoder().decode(JsonTraceSerializer.serializeRequest(sdk)!)) };
}

/** proto3: a zero number or an empty string/bytes reads the same as an absent field. */
function dropDefaults(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(dropDefaults);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    if (v === undefined || v === null || v === 0 || v === 0n || v === "" || (Array.isArray(v) && v.length === 0)) continue;
    if (Array.isArray(v)) {
      const kept = v.filter((item) => !(item === 0 || item === 0n || item === ""));
      if (kept.length > 0) out[key] = kept.map(dropDefaults);
      continue;
    }
    out[key] = dropDefaults(v);
  }
  return out;
}

/** The official JSON's int_value numbers, as the OTLP JSON encoding spells 64-bit integers. */
function intValuesAsStrings(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(intValuesAsStrings);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, k === "intValue" && typeof v === "number" ? BigInt(v).toString() : intValuesAsStrings(v)]));
}

const cases: Record<string, SpanData[]> = {
  "a SERVER span with a remote parent, tracestate, every attribute type and an error status": [server],
  "a CLIENT child, unset status": [client],
  "a root span, no attributes, status ok": [root],
  "a batch of 600 mixed spans (multi-byte nested lengths)": Array.from({ length: 600 }, (_, i) => ({ ...[server, client, root][i % 3]!, spanId: i.toString(16).padStart(16, "0") })),
};

describe("protobuf body = the official ProtobufTraceSerializer's", () => {
  for (const [name, spans] of Object.entries(cases)) {
    test(name, () => {
      const ours = encodeTracesProtobuf(spans, RESOURCE);
      const official = officialPair(spans).protobuf;
      expect(dropDefaults(decode(ours, REQUEST))).toEqual(dropDefaults(decode(official, REQUEST)));
    });
  }

  test("the decoded fields are the ones the proto names", () => {
    const tree = decode(encodeTracesProtobuf([server], RESOURCE), REQUEST) as any;
    const resourceSpans = tree[1][0];
    expect(resourceSpans[1][0][1].map((kv: any) => [kv[1][0], kv[2][0][1][0]])).toEqual([
      ["service.name", "gateway-test"],
      ["service.version", "1.2.3"],
    ]);
    const scopeSpans = resourceSpans[2][0];
    expect(scopeSpans[1][0]).toEqual({ 1: ["gateway"], 2: ["1.2.3"] });
    const span = scopeSpans[2][0];
    expect(span[1]).toEqual([TRACE]); // trace_id, 16 bytes
    expect(span[2]).toEqual([server.spanId]);
    expect(span[3]).toEqual([server.traceState]);
    expect(span[4]).toEqual([server.parentSpanId]);
    expect(span[6]).toEqual([2n]); // SPAN_KIND_SERVER
    expect(span[7]).toEqual([T0]); // fixed64, exact
    expect(span[15]).toEqual([{ 2: ["exhausted"], 3: [2n] }]); // STATUS_CODE_ERROR
    expect(span[16]).toEqual([0x301]); // sampled, parent known remote
    const attr = (key: string) => span[9].find((kv: any) => kv[1][0] === key)[2][0];
    expect(attr("gen_ai.usage.input_tokens")).toEqual({ 3: [1234n] });
    expect(attr("gateway.negative")).toEqual({ 3: [BigInt.asUintN(64, -5n)] });
    expect(attr("gen_ai.response.finish_reasons")).toEqual({ 5: [{ 1: [{ 1: ["stop"] }, { 1: ["length"] }] }] });
  });
});

describe("JSON body = the official JsonTraceSerializer's, per the OTLP JSON encoding", () => {
  for (const [name, spans] of Object.entries(cases)) {
    test(name, () => {
      const ours = JSON.parse(encodeTracesJson(spans, RESOURCE));
      expect(dropDefaults(ours)).toEqual(dropDefaults(intValuesAsStrings(officialPair(spans).json)));
    });
  }

  test("lowerCamelCase, lowercase hex ids, integer enums, 64-bit integers as decimal strings", () => {
    const body = JSON.parse(encodeTracesJson([server, root], RESOURCE));
    const [s, r] = body.resourceSpans[0].scopeSpans[0].spans;
    expect(s.traceId).toBe(TRACE);
    expect(s.spanId).toBe(server.spanId);
    expect(s.parentSpanId).toBe(server.parentSpanId);
    expect(s.traceState).toBe(server.traceState);
    expect(s.kind).toBe(2);
    expect(s.status).toEqual({ code: 2, message: "exhausted" });
    expect(s.startTimeUnixNano).toBe("1767225600123456789");
    expect(s.endTimeUnixNano).toBe((T0 + 1_234_567_890n).toString());
    const attr = (key: string) => s.attributes.find((kv: any) => kv.key === key).value;
    expect(attr("gen_ai.usage.input_tokens")).toEqual({ intValue: "1234" });
    expect(attr("gateway.big")).toEqual({ intValue: "9007199254740994" });
    expect(attr("gen_ai.request.temperature")).toEqual({ doubleValue: 0.7 });
    expect(attr("gateway.flag")).toEqual({ boolValue: true });
    expect(attr("gen_ai.response.finish_reasons")).toEqual({ arrayValue: { values: [{ stringValue: "stop" }, { stringValue: "length" }] } });
    expect("parentSpanId" in r).toBe(false);
    expect(r.status).toEqual({ code: 1 });
    expect(body.resourceSpans[0].scopeSpans[0].scope).toEqual({ name: "gateway", version: "1.2.3" });
  });

  test("a whole-number temperature is still a double (GenAI types it so), in both encodings; counts stay integers", () => {
    const spans = [{ ...root, attributes: { "gen_ai.request.temperature": 1, "gen_ai.request.top_p": 0, "gen_ai.request.max_tokens": 64 } }];
    const values = Object.fromEntries(JSON.parse(encodeTracesJson(spans, RESOURCE)).resourceSpans[0].scopeSpans[0].spans[0].attributes.map((kv: any) => [kv.key, kv.value]));
    expect(values).toEqual({ "gen_ai.request.temperature": { doubleValue: 1 }, "gen_ai.request.top_p": { doubleValue: 0 }, "gen_ai.request.max_tokens": { intValue: "64" } });
    // AnyValue: int_value = 3, double_value = 4.
    const span = (decode(encodeTracesProtobuf(spans, RESOURCE), REQUEST) as any)[1][0][2][0][2][0];
    const pb = Object.fromEntries(span[9].map((kv: any) => [kv[1][0], kv[2][0]]));
    // The decoder gives a fixed64's bits: 0x3ff0000000000000 is the double 1.0.
    expect(pb["gen_ai.request.temperature"]).toEqual({ 4: [0x3ff0000000000000n] });
    expect(pb["gen_ai.request.top_p"]).toEqual({ 4: [0n] });
    expect(pb["gen_ai.request.max_tokens"]).toEqual({ 3: [64n] });
  });

  test("non-finite doubles are spelled as the proto3 JSON mapping says (the official serializer writes null)", () => {
    const spans = [{ ...root, attributes: { a: Number.NaN, b: Number.POSITIVE_INFINITY, c: Number.NEGATIVE_INFINITY } }];
    const values = JSON.parse(encodeTracesJson(spans, RESOURCE)).resourceSpans[0].scopeSpans[0].spans[0].attributes.map((kv: any) => kv.value);
    expect(values).toEqual([{ doubleValue: "NaN" }, { doubleValue: "Infinity" }, { doubleValue: "-Infinity" }]);
  });
});
