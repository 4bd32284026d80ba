// What the two OTLP encodings (encode-json.ts, encode-protobuf.ts) share: the enum numbers and span flags
// of opentelemetry-proto (opentelemetry/proto/trace/v1/trace.proto), the resource every batch names, and
// the rule that picks int_value or double_value for a number. Kept in one place so the encodings cannot
// drift apart.
import type { SpanData } from "../records.ts";

/** The instrumentation scope of every span the gateway makes. */
export const SCOPE_NAME = "gateway";

/** Resource `service.name`, `service.version` (InfoView `version`); the scope's version is the latter too. */
export interface OtlpResource {
  readonly serviceName: string;
  readonly serviceVersion: string;
}

/** Span.SpanKind: SPAN_KIND_SERVER = 2, SPAN_KIND_CLIENT = 3. */
export const KIND = { server: 2, client: 3 } as const;

/** Status.StatusCode: STATUS_CODE_UNSET = 0, STATUS_CODE_OK = 1, STATUS_CODE_ERROR = 2. */
export const STATUS_CODE = { unset: 0, ok: 1, error: 2 } as const;

// Span.flags (fixed32): the low 8 bits are the W3C trace flags. Every span that reaches an exporter was
// sampled (design: an incoming `00` exports nothing), so bit 0 is always set. Bits 8 and 9 are
// SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK and SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK: whether the parent is in
// another process. Only a SERVER span has a remote parent (an incoming traceparent); a CLIENT span's
// parent is our own SERVER span.
const SAMPLED = 0x01;
const HAS_IS_REMOTE = 0x100;
const IS_REMOTE = 0x200;

export function spanFlags(span: SpanData): number {
  return flagsFor(span.kind, span.parentSpanId !== null);
}

export function flagsFor(kind: SpanData["kind"], hasParent: boolean): number {
  return kind === "server" && hasParent ? SAMPLED | HAS_IS_REMOTE | IS_REMOTE : SAMPLED | HAS_IS_REMOTE;
}

const INT64_LIMIT = 2 ** 63;

/** An integral number within int64 goes out as int_value (counts); any other number as double_value. */
export function isInt64(value: number): boolean {
  return Number.isInteger(value) && value >= -INT64_LIMIT && value < INT64_LIMIT;
}

/** Attributes the GenAI conventions type as double: a temperature of 1 is still 1.0, never int_value 1. */
const DOUBLES = new Set(["gen_ai.request.temperature", "gen_ai.request.top_p", "gen_ai.request.frequency_penalty", "gen_ai.request.presence_penalty"]);

/** Whether attribute `key`'s number goes out as int_value. */
export function isIntAttribute(key: string, value: number): boolean {
  return isInt64(value) && !DOUBLES.has(key);
}
