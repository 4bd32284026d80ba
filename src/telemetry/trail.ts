// One model request's trail (design/telemetry.md): what the request-log record and the spans say, gathered
// as the request goes (principal, pool, each upstream attempt, failovers, usage) and emitted once, when
// the answer ends (a stream: when it ends, breaks or the client leaves). Made for every model request:
// the admin plane's ring of recent records always takes it (telemetry/hub.ts).
import type { IngressPrincipal } from "../auth/ingress-chain.ts";
import type { IrError, IrUsage } from "../ir/index.ts";
import type { Lane } from "../routing/lane.ts";
import type { TelemetryHub } from "./hub.ts";
import type { ErrorClass, FinishedRequest, FinishedTrace, RecordUsage, RequestRecord } from "./records.ts";
import { isoTime } from "./iso-time.ts";
import { incomingTrace, newSpanId, newTraceId, traceparent, type IncomingTrace } from "./trace-context.ts";

export type Outcome = RequestRecord["outcome"];

const KIND_CLASS: Readonly<Record<IrError["kind"], ErrorClass>> = {
  invalid_request: "invalid_request",
  request_too_large: "invalid_request",
  authentication: "unauthorized",
  permission: "forbidden",
  not_found: "not_found",
  rate_limit: "rate_limited",
  insufficient_quota: "budget_exhausted",
  overloaded: "exhausted",
  timeout: "timeout",
  api_error: "internal",
};

interface Attempt {
  readonly lane: Lane;
  readonly spanId: string;
  readonly startMs: number;
  readonly number: number;
  endMs: number | undefined;
  status: number | undefined;
  error: string | undefined;
  failoverReason: string | undefined;
}

export class RequestTrail implements FinishedRequest {
  readonly arrivalMs = Date.now();
  readonly #start = performance.now();
  readonly #incoming: IncomingTrace | undefined;
  /** Present when spans are made: this request's trace and SERVER span. */
  readonly #trace: { readonly traceId: string; readonly spanId: string; readonly sampled: boolean } | undefined;
  model = "";
  pool: string | null = null;
  principal: IngressPrincipal | undefined;
  stream = false;
  #maxTokens: number | undefined;
  #temperature: number | undefined;
  readonly #attempts: Attempt[] = [];
  /** Made on the first failover: most requests have none, and the ring keeps a thousand of them. */
  #failovers: { lane: string; reason: string }[] | undefined;
  #usage: { input: number; output: number; cacheRead: number; cacheWrite: number; reasoning: number } | undefined;
  #costMicros = 0;
  #ttfbMs: number | null = null;
  #error: RequestRecord["error"] = null;
  #status = 0;
  #outcome: Outcome = "ok";
  /** The answer is a stream: the trail ends with it, not when it is handed out. */
  #deferred = false;
  /** Set when the answer ended (performance.now()). */
  #endMs: number | undefined;
  #record: RequestRecord | undefined;

  constructor(
    private readonly hub: TelemetryHub,
    readonly requestId: string,
    readonly ingress: string,
    headers: Headers,
  ) {
    this.#incoming = incomingTrace(headers);
    if (hub.tracing) {
      const sampled = this.#incoming?.sampled ?? true;
      this.#trace = { traceId: this.#incoming?.traceId ?? newTraceId(), spanId: newSpanId(), sampled };
    }
  }

  /** What the SERVER span says the client asked for. */
  requested(body: Record<string, unknown>): void {
    if (!this.#trace) return;
    const max = body.max_tokens ?? body.max_output_tokens ?? body.max_completion_tokens;
    if (typeof max === "number") this.#maxTokens = max;
    if (typeof body.temperature === "number") this.#temperature = body.temperature;
  }

  /** An upstream attempt begins; the answer is the `traceparent` its call carries (undefined: untraced). */
  attempt(lane: Lane): string | undefined {
    const attempt: Attempt = { lane, spanId: this.#trace ? newSpanId() : "", startMs: performance.now(), number: this.#attempts.length + 1, endMs: undefined, status: undefined, error: undefined, failoverReason: undefined };
    this.#attempts.push(attempt);
    return this.#trace ? traceparent(this.#trace.traceId, attempt.spanId, this.#trace.sampled) : undefined;
  }

  /** The incoming tracestate, passed on with our traceparent. */
  get traceState(): string | null {
    return this.#incoming?.traceState ?? null;
  }

  /** The latest attempt's end: its upstream status, or what failed (`timeout`, `connect`, an upstream status). */
  attemptEnded(status: number | undefined, error: string | undefined): void {
    const attempt = this.#attempts.at(-1);
    if (!attempt || attempt.endMs !== undefined) return;
    attempt.endMs = performance.now();
    attempt.status = status;
    attempt.error = error;
  }

  /** The routing engine moved the request off the latest attempt's lane. */
  failover(reason: string): void {
    const attempt = this.#attempts.at(-1);
    if (attempt) {
      attempt.failoverReason = reason;
      (this.#failovers ??= []).push({ lane: attempt.lane.name, reason });
    }
  }

  /** Billed usage (later reports add, as the meter's do) and its charge in micro cost units. */
  usage(usage: IrUsage, costMicros: number): void {
    const u = (this.#usage ??= { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 });
    u.input += usage.inputNoCache + usage.inputCacheRead + usage.inputCacheWrite;
    u.output += usage.output;
    u.cacheRead += usage.inputCacheRead;
    u.cacheWrite += usage.inputCacheWrite;
    u.reasoning += usage.outputReasoning;
    this.#costMicros += costMicros;
  }

  /** The gateway's own refusal or failure: its class and message go to the record. */
  failed(error: IrError, cls: ErrorClass = KIND_CLASS[error.kind]): void {
    this.#error = { class: cls, message: error.message };
  }

  /** The answer is a stream, handed out now and ended later (streamEnded). */
  deferToStream(): void {
    this.#deferred = true;
    this.stream = true;
  }

  /** The answer is handed out; a non-stream request ends here. */
  answered(status: number, outcome: Outcome): void {
    this.#ttfbMs = performance.now() - this.#start;
    this.#status = status;
    this.#outcome = outcome;
    if (outcome !== "ok" && this.#error === null) this.#error = { class: outcome === "exhausted" ? "exhausted" : outcome === "client_error" ? "upstream_client_error" : "upstream_error", message: `HTTP ${status}` };
    if (!this.#deferred) this.#end();
  }

  /** A streamed answer settled: completed, broke mid-way, or the client left. */
  streamEnded(how: "ok" | "broke" | "released", error?: IrError): Outcome {
    if (how !== "ok") {
      this.#outcome = how === "broke" ? "error" : "client_error";
      this.#error = { class: "midstream", message: how === "broke" ? (error?.message ?? "the upstream stream broke") : "the client left before the stream ended" };
      const attempt = this.#attempts.at(-1);
      if (attempt && how === "broke") attempt.error = "midstream";
    }
    this.attemptEnded(this.#attempts.at(-1)?.status, undefined);
    this.#end();
    return this.#outcome;
  }

  #end(): void {
    if (this.#endMs !== undefined) return;
    const endMs = (this.#endMs = performance.now());
    for (const attempt of this.#attempts) attempt.endMs ??= endMs;
    this.hub.finished(this);
  }

  /** The request-log record, built on first ask (the ring alone asks only when GET /requests reads it). */
  record(): RequestRecord {
    return (this.#record ??= this.#build(this.#endMs ?? performance.now()));
  }

  /** The spans' source, when the request is sampled. */
  trace(): FinishedTrace | undefined {
    const trace = this.#trace;
    if (!trace?.sampled) return undefined;
    return { traceId: trace.traceId, spanId: trace.spanId, parentSpanId: this.#incoming?.parentSpanId ?? null, traceState: this.traceState, arrivalMs: this.arrivalMs, startMs: this.#start, endMs: this.#endMs ?? performance.now(), maxTokens: this.#maxTokens, temperature: this.#temperature, record: this.record(), attempts: this.#attempts };
  }

  #build(endMs: number): RequestRecord {
    const last = this.#attempts.at(-1);
    const u = this.#usage;
    const usage: RecordUsage | null = u ? { input_tokens: u.input, output_tokens: u.output, cache_read_tokens: u.cacheRead, cache_write_tokens: u.cacheWrite, reasoning_tokens: u.reasoning } : null;
    const principal = this.principal;
    return {
      ts: isoTime(this.arrivalMs),
      request_id: this.requestId,
      trace_id: this.#trace?.traceId ?? this.#incoming?.traceId ?? null,
      span_id: this.#trace?.spanId ?? null,
      ingress_protocol: this.ingress,
      egress_protocol: last?.lane.provider.protocol ?? null,
      model: this.model,
      pool: this.pool,
      lane: last?.lane.name ?? null,
      provider: last?.lane.provider.name ?? null,
      upstream_model: last?.lane.upstreamModel ?? null,
      stream: this.stream,
      status: this.#status,
      outcome: this.#outcome,
      attempts: this.#attempts.length,
      failovers: this.#failovers ?? [],
      key_id: principal?.module === "keys" ? principal.id : null,
      group: principal?.group ?? null,
      principal: principal && principal.module !== "open" ? principal.id : null,
      usage,
      cost_micros: this.#costMicros,
      duration_ms: round(endMs - this.#start),
      ttfb_ms: this.#ttfbMs === null ? null : round(this.#ttfbMs),
      error: this.#outcome === "ok" ? null : this.#error,
    };
  }
}

const round = (ms: number) => Math.round(ms * 1000) / 1000;
