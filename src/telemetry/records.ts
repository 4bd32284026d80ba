// What the telemetry streams carry (design/telemetry.md): the request-log record (stream `logs`), a
// finished span (stream `traces`), and the contract every exporter instance keeps. An exporter never
// makes a request wait: `push` only queues (bounded; past the bound it sheds and counts), delivery runs
// in the background, and `flush`/`close` are bounded by the exporter's own timeout.
import type { Lane } from "../routing/lane.ts";

/** The billed usage of one request, in the ledger's terms. */
export interface RecordUsage {
  /** Cached input included. */
  readonly input_tokens: number;
  readonly output_tokens: number;
  readonly cache_read_tokens: number;
  readonly cache_write_tokens: number;
  readonly reasoning_tokens: number;
}

export type ErrorClass =
  | "invalid_request"
  | "unauthorized"
  | "forbidden"
  | "not_found"
  | "rate_limited"
  | "budget_exhausted"
  | "upstream_client_error"
  | "exhausted"
  | "upstream_error"
  | "timeout"
  | "midstream"
  | "internal";

/** One model request, emitted when its answer ends (a stream: ends or breaks). Every member is present. */
export interface RequestRecord {
  /** Arrival, RFC 3339 UTC with milliseconds. */
  readonly ts: string;
  readonly request_id: string;
  readonly trace_id: string | null;
  readonly span_id: string | null;
  readonly ingress_protocol: string;
  readonly egress_protocol: string | null;
  readonly model: string;
  readonly pool: string | null;
  readonly lane: string | null;
  readonly provider: string | null;
  readonly upstream_model: string | null;
  readonly stream: boolean;
  readonly status: number;
  readonly outcome: "ok" | "client_error" | "exhausted" | "error";
  readonly attempts: number;
  readonly failovers: readonly { readonly lane: string; readonly reason: string }[];
  readonly key_id: string | null;
  readonly group: string | null;
  readonly principal: string | null;
  readonly usage: RecordUsage | null;
  readonly cost_micros: number;
  readonly duration_ms: number;
  readonly ttfb_ms: number | null;
  readonly error: { readonly class: ErrorClass; readonly message: string } | null;
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
