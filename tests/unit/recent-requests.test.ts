// The ring of recent request-log records behind admin GET /requests: bounded, newest first, filtered.
import { expect, test } from "bun:test";
import { RECENT_REQUESTS, RecentRequests } from "../../src/telemetry/recent-requests.ts";
import type { FinishedRequest, RequestRecord } from "../../src/telemetry/records.ts";
import { TelemetryHub } from "../../src/telemetry/hub.ts";
import { RequestTrail } from "../../src/telemetry/trail.ts";
import { createLogger } from "../../src/telemetry/logger.ts";

function finished(n: number, over: Partial<RequestRecord> = {}): FinishedRequest {
  const record = {
    ts: "2026-11-27T00:00:00.000Z",
    request_id: `req-${n}`,
    trace_id: null,
    span_id: null,
    ingress_protocol: "openai",
    egress_protocol: "openai",
    model: "gpt",
    pool: "gpt",
    lane: "gpt",
    provider: "oai",
    upstream_model: "gpt-4o-mini",
    stream: false,
    status: 200,
    outcome: "ok",
    attempts: 1,
    failovers: [],
    key_id: null,
    group: null,
    principal: null,
    usage: null,
    cost_micros: 0,
    duration_ms: 1,
    ttfb_ms: 1,
    error: null,
    ...over,
  } satisfies RequestRecord;
  return { record: () => record, trace: () => undefined };
}

const ids = (records: RequestRecord[]) => records.map((r) => r.request_id);

test("keeps the last 1,000, newest first, and forgets the oldest", () => {
  const ring = new RecentRequests();
  expect(ring.newest({}, 1000)).toEqual([]);
  for (let n = 1; n <= RECENT_REQUESTS + 250; n++) ring.push(finished(n));
  const all = ring.newest({}, 5000);
  expect(all.length).toBe(RECENT_REQUESTS);
  expect(all[0]!.request_id).toBe(`req-${RECENT_REQUESTS + 250}`);
  expect(all.at(-1)!.request_id).toBe("req-251");
  expect(ids(ring.newest({}, 3))).toEqual(["req-1250", "req-1249", "req-1248"]);
});

test("before it wraps: only what was pushed, newest first", () => {
  const ring = new RecentRequests(4);
  for (let n = 1; n <= 3; n++) ring.push(finished(n));
  expect(ids(ring.newest({}, 10))).toEqual(["req-3", "req-2", "req-1"]);
  ring.push(finished(4));
  ring.push(finished(5));
  expect(ids(ring.newest({}, 10))).toEqual(["req-5", "req-4", "req-3", "req-2"]);
});

test("filters by key, group, model, status and outcome, all at once, within the limit", () => {
  const ring = new RecentRequests();
  ring.push(finished(1, { key_id: "key_a", group: "team", model: "gpt" }));
  ring.push(finished(2, { key_id: "key_b", group: "team", model: "claude", status: 429, outcome: "client_error" }));
  ring.push(finished(3, { key_id: "key_a", group: "org", model: "claude", status: 503, outcome: "exhausted" }));
  ring.push(finished(4, { key_id: "key_a", group: "team", model: "claude" }));
  expect(ids(ring.newest({ key_id: "key_a" }, 10))).toEqual(["req-4", "req-3", "req-1"]);
  expect(ids(ring.newest({ group: "team" }, 10))).toEqual(["req-4", "req-2", "req-1"]);
  expect(ids(ring.newest({ model: "claude" }, 10))).toEqual(["req-4", "req-3", "req-2"]);
  expect(ids(ring.newest({ status: 429 }, 10))).toEqual(["req-2"]);
  expect(ids(ring.newest({ outcome: "exhausted" }, 10))).toEqual(["req-3"]);
  expect(ids(ring.newest({ key_id: "key_a", model: "claude", outcome: "ok" }, 10))).toEqual(["req-4"]);
  expect(ids(ring.newest({ key_id: "key_a" }, 2))).toEqual(["req-4", "req-3"]);
  expect(ring.newest({ key_id: "key_none" }, 10)).toEqual([]);
});

test("the hub keeps every finished request; the record an exporter got is the one GET /requests reads (no copy)", () => {
  const lines: RequestRecord[] = [];
  const logger = createLogger({ level: "error", write: () => {} });
  const hub = new TelemetryHub(logger, (record) => void lines.push(record), { logger, registry: undefined as never, version: "test", webhookDropped: { inc: () => {} } });
  const trail = new RequestTrail(hub, "req-x", "openai", new Headers());
  trail.model = "gpt";
  trail.answered(200, "ok");
  const [read] = hub.recent.newest({}, 10);
  expect(read).toBe(lines[0]!);
  expect(read).toMatchObject({ request_id: "req-x", model: "gpt", status: 200, outcome: "ok" });
  // With nothing else taking records, the ring still keeps it, and the record is built once, when read.
  const quiet = new TelemetryHub(logger, undefined, { logger, registry: undefined as never, version: "test", webhookDropped: { inc: () => {} } });
  const other = new RequestTrail(quiet, "req-y", "anthropic", new Headers());
  other.answered(429, "client_error");
  const first = quiet.recent.newest({}, 10);
  expect(first.map((r) => [r.request_id, r.status, r.outcome])).toEqual([["req-y", 429, "client_error"]]);
  expect(quiet.recent.newest({ status: 429 }, 1)[0]).toBe(first[0]!);
});
