// A request-log record for exporter tests, every member present as design/telemetry.md requires.
import type { Lane } from "../../src/routing/lane.ts";
import type { FinishedTrace, RequestRecord, TracedAttempt } from "../../src/telemetry/records.ts";

export function requestRecord(n: number, overrides: Partial<RequestRecord> = {}): RequestRecord {
  return {
    ts: new Date(Date.UTC(2025, 0, 1, 0, 0, 0, n % 1000)).toISOString(),
    request_id: `req-${n}`,
    trace_id: null,
    span_id: null,
    ingress_protocol: "openai",
    egress_protocol: "anthropic",
    model: "fast",
    pool: "default",
    lane: "claude",
    provider: "anthropic",
    upstream_model: "claude-haiku",
    stream: false,
    status: 200,
    outcome: "ok",
    attempts: 1,
    failovers: [],
    key_id: "key_1",
    group: "team",
    principal: "key_1",
    usage: { input_tokens: 12, output_tokens: 3, cache_read_tokens: 0, cache_write_tokens: 0, reasoning_tokens: 0 },
    cost_micros: 42,
    duration_ms: 123.5,
    ttfb_ms: 50,
    error: null,
    ...overrides,
  };
}

/** A lane as spans.ts reads it: its name, its provider's protocol and base URL, its upstream model. */
export const traceLane = (name: string, protocol: string, baseUrl: string | undefined, upstreamModel: string) =>
  ({ name, provider: { name: `up-${name}`, protocol, baseUrl }, upstreamModel, contextWindow: null, maxConcurrent: null, maxRequests: null }) as unknown as Lane;

/** Upstream attempt `number` on lane `l`, answered 200 unless told otherwise. */
export function tracedAttempt(l: Lane, number: number, extra: Partial<TracedAttempt> = {}): TracedAttempt {
  return { lane: l, spanId: `a1b2c3d4e5f6070${number}`, number, startMs: 1000.25 + number, endMs: 1020.5 + number, status: 200, error: undefined, failoverReason: undefined, ...extra };
}

/** A sampled request's finished trace: requestRecord(1) with `record` over it, and its attempts. */
export function finishedTrace(record: Partial<RequestRecord>, attempts: TracedAttempt[], extra: Partial<FinishedTrace> = {}): FinishedTrace {
  return { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", parentSpanId: null, traceState: null, arrivalMs: 1_767_225_600_123.456, startMs: 999.5, endMs: 1050.75, maxTokens: undefined, temperature: undefined, record: requestRecord(1, record), attempts, ...extra };
}
