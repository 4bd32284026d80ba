// What the telemetry streams carry (design/telemetry.md): the request-log record (stream `logs`), a
// finished span (stream `traces`), and the contract every exporter instance keeps. An exporter never
// makes a request wait: `push` only queues (bounded; past the bound it sheds and counts), delivery runs
// in the background, and `flush`/`close` are bounded by the exporter's own timeout.
import { Type, type Static } from "@sinclair/typebox";
import type { Lane } from "../routing/lane.ts";

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);
const Count = Type.Integer({ minimum: 0 });

/** The billed usage of one request, in the ledger's terms. */
export const RecordUsage = Type.Object({
  input_tokens: Type.Integer({ minimum: 0, description: "cached input included" }),
  output_tokens: Count,
  cache_read_tokens: Count,
  cache_write_tokens: Count,
  reasoning_tokens: Count,
});
export type RecordUsage = Static<typeof RecordUsage>;

const ErrorClass = Type.Union([
  Type.Literal("invalid_request"),
  Type.Literal("unauthorized"),
  Type.Literal("forbidden"),
  Type.Literal("not_found"),
  Type.Literal("rate_limited"),
  Type.Literal("budget_exhausted"),
  Type.Literal("upstream_client_error"),
  Type.Literal("exhausted"),
  Type.Literal("upstream_error"),
  Type.Literal("timeout"),
  Type.Literal("midstream"),
  Type.Literal("internal"),
]);
export type ErrorClass = Static<typeof ErrorClass>;

/**
 * One model request, emitted when its answer ends (a stream: ends or breaks). Every member is present.
 * The schema is the wire shape of the logs exporters and of the admin plane's GET /requests and /events.
 */
export const RequestRecord = Type.Object({
  ts: Type.String({ description: "arrival, RFC 3339 UTC with milliseconds" }),
  request_id: Type.String({ description: "the x-request-id the client got" }),
  trace_id: Nullable(Type.String()),
  span_id: Nullable(Type.String()),
  ingress_protocol: Type.String(),
  egress_protocol: Nullable(Type.String({ description: "the last lane's" })),
  model: Type.String({ description: "as the client named it" }),
  pool: Nullable(Type.String()),
  lane: Nullable(Type.String({ description: "the last lane tried (its models: key)" })),
  provider: Nullable(Type.String()),
  upstream_model: Nullable(Type.String()),
  stream: Type.Boolean(),
  status: Type.Integer({ description: "the HTTP status sent" }),
  outcome: Type.Union([Type.Literal("ok"), Type.Literal("client_error"), Type.Literal("exhausted"), Type.Literal("error")]),
  attempts: Type.Integer({ minimum: 0, description: "upstream calls" }),
  failovers: Type.Array(Type.Object({ lane: Type.String(), reason: Type.String() }), { description: "one per lane left" }),
  key_id: Nullable(Type.String()),
  group: Nullable(Type.String({ description: "the group charged" })),
  principal: Nullable(Type.String({ description: "key id, identity or token name" })),
  usage: Nullable(RecordUsage),
  cost_micros: Type.Integer({ description: "the charge then, in the unit of KeyUsageView spend_micros" }),
  duration_ms: Type.Number({ description: "arrival to last byte" }),
  ttfb_ms: Nullable(Type.Number({ description: "arrival to first byte" })),
  error: Nullable(Type.Object({ class: ErrorClass, message: Type.String() }, { description: "null iff outcome is ok" })),
});
export type RequestRecord = Static<typeof RequestRecord>;

/** The outcomes, as the schema lists them (GET /requests checks its filter against these). */
export const OUTCOMES: readonly RequestRecord["outcome"][] = RequestRecord.properties.outcome.anyOf.map((literal) => literal.const);

/**
 * A request that ended, as the hub gets it: its record is built on first ask, so a taker that only keeps
 * it (the ring of recent requests) costs the request no record at all until something reads it.
 */
export interface FinishedRequest {
  record(): RequestRecord;
  /** Its spans' source; undefined when the request is not sampled (or nothing traces). */
  trace(): FinishedTrace | undefined;
}

export type AttributeValue = string | number | boolean | readonly string[];

/** A finished span, ids as lowercase hex, times as epoch nanoseconds (bigint: ms * 1e6 loses nothing). */
export interface SpanData {
  /** 32 hex digits. */
  readonly traceId: string;
  /** 16 hex digits. */
  readonly spanId: string;
  readonly parentSpanId: string | null;
  /** The incoming W3C tracestate, passed on as is. */
  readonly traceState: string | null;
  readonly name: string;
  readonly kind: "server" | "client";
  readonly startTimeUnixNano: bigint;
  readonly endTimeUnixNano: bigint;
  /** Integers are counts (OTLP intValue); others are doubles. */
  readonly attributes: Readonly<Record<string, AttributeValue>>;
  /**
   * More attributes, the same for every span of a lane or route (its model, provider, address): one
   * frozen object reused by all of them, so an encoder may keep its encoding by identity. No key of it
   * is also in `attributes`.
   */
  readonly shared?: Readonly<Record<string, AttributeValue>>;
  readonly status: { readonly code: "unset" | "ok" | "error"; readonly message?: string };
}

/** One upstream attempt of a traced request: its CLIENT span. Times are performance.now() milliseconds. */
export interface TracedAttempt {
  readonly lane: Lane;
  readonly spanId: string;
  readonly number: number;
  readonly startMs: number;
  readonly endMs: number | undefined;
  readonly status: number | undefined;
  readonly error: string | undefined;
  readonly failoverReason: string | undefined;
}

/** A sampled request, ended: what its spans are written from (spans.ts writeSpans). */
export interface FinishedTrace {
  readonly traceId: string;
  /** The SERVER span's. */
  readonly spanId: string;
  /** The caller's span, when a traceparent came in. */
  readonly parentSpanId: string | null;
  readonly traceState: string | null;
  /** Epoch milliseconds at arrival, and performance.now() then and at the end. */
  readonly arrivalMs: number;
  readonly startMs: number;
  readonly endMs: number;
  readonly maxTokens: number | undefined;
  readonly temperature: number | undefined;
  readonly record: RequestRecord;
  readonly attempts: readonly TracedAttempt[];
}

export type Stream = "metrics" | "traces" | "logs";

/** One running exporter instance (a config `export.<name>` entry). */
export interface Exporter {
  readonly name: string;
  readonly module: string;
  readonly streams: readonly Stream[];
  /** Stream `logs`: queues the record; never blocks, never throws. */
  log?(record: RequestRecord): void;
  /** Stream `traces`: queues the span; never blocks, never throws. */
  span?(span: SpanData): void;
  /**
   * Stream `traces`, for an exporter that writes a request's spans without span objects (spans.ts
   * writeSpans): all of them at once; span() is then not called for them. Never blocks, never throws.
   */
  trace?(trace: FinishedTrace): void;
  /** Delivers what is queued, bounded by the exporter's timeout (SIGTERM, reload). */
  flush(): Promise<void>;
  /** Flushes, then stops timers and listeners. */
  close(): Promise<void>;
}
