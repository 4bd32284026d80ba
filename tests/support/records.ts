// A request-log record for exporter tests, every member present as design/telemetry.md requires.
import type { RequestRecord } from "../../src/telemetry/records.ts";

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
