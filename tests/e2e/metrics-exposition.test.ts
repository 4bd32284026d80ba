// GET /metrics on the built binary against gateway-spec.md's table ("Metrics"): every family with its
// type from boot, the unlabelled counters at 0, then, once traffic has touched each family, its series
// with exactly the spec's label names and the values the requests made (pool `(direct)` for a direct
// route, `""` before a pool is known, lane = the models: key). `promtool check metrics` (Debian's
// prometheus package, tests/support/prometheus.ts) judges the text.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { json, LISTEN_ANY, startGateway, type RunningGateway } from "../support/gateway.ts";
import { ensurePrometheus, promtoolCheckMetrics } from "../support/prometheus.ts";
import { ANTHROPIC_DEFAULT_KEY, startAnthropicUpstream } from "../support/upstreams/anthropic.ts";

/** The spec's table, as written there. */
const SPEC: Record<string, { type: "counter" | "gauge" | "histogram"; labels: string[] }> = {
  gateway_requests_total: { type: "counter", labels: ["ingress_protocol", "pool", "outcome"] },
  gateway_upstream_attempts_total: { type: "counter", labels: ["pool", "lane"] },
  gateway_upstream_failures_total: { type: "counter", labels: ["pool", "lane", "disposition"] },
  gateway_breaker_trips_total: { type: "counter", labels: ["pool", "lane"] },
  gateway_failovers_total: { type: "counter", labels: ["pool", "reason"] },
  gateway_translations_total: { type: "counter", labels: ["from", "to"] },
  gateway_request_duration_seconds: { type: "histogram", labels: ["ingress_protocol", "pool"] },
  gateway_key_spend_cents: { type: "gauge", labels: ["key"] },
  gateway_key_budget_remaining_cents: { type: "gauge", labels: ["key"] },
  gateway_key_tokens_total: { type: "gauge", labels: ["key"] },
  gateway_lane_state: { type: "gauge", labels: ["pool", "lane"] },
  gateway_route_policy_selections_total: { type: "counter", labels: ["pool", "policy"] },
  gateway_route_policy_rejections_total: { type: "counter", labels: ["pool", "policy", "status"] },
  gateway_webhook_logs_dropped_total: { type: "counter", labels: [] },
  gateway_billing_truncated_total: { type: "counter", labels: [] },
};
const KEY_GAUGES = ["gateway_key_spend_cents", "gateway_key_budget_remaining_cents", "gateway_key_tokens_total"];
/** The one problem promtool's linter reports, on a name and type the spec fixes (a gauge ending in _total). */
const SPEC_LINT = 'gateway_key_tokens_total non-counter metrics should not have "_total" suffix';

const ENV = { GW_SIGNING_KEY: "metrics-signing-key-0b3e", GW_CLIENT_TOKEN: "metrics-client-token-9c1d", GW_ADMIN: "metrics-admin-token-55ef" };
const AUTH = { authorization: `Bearer ${ENV.GW_CLIENT_TOKEN}` };

const anthropicUp = startAnthropicUpstream();
/** A port nothing listens on (bound, then released): the `dead` lane's connect fails. */
const closedPort = (() => {
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = server.port;
  void server.stop(true);
  return port;
})();
/** The route policy: rejects what says REJECT, routes what says ROUTE to mock-2, lets the rest through. */
const policy = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    const text = JSON.stringify(await request.json());
    if (text.includes("REJECT")) return Response.json({ verb: "reject", status: 403, message: "no" });
    if (text.includes("ROUTE")) return Response.json({ verb: "route", order: ["mock-2"] });
    return Response.json({ verb: "continue" });
  },
});

const CONFIG = `${LISTEN_ANY}
store: {module: sqlite, settings: {path: ./state/gateway.db}}
providers:
  local: {protocol: mock}
  gone: {protocol: openai, base_url: "http://127.0.0.1:${closedPort}/v1", api_key: sk-none}
  an: {protocol: anthropic, base_url: "${anthropicUp.baseURL}", api_key: ${ANTHROPIC_DEFAULT_KEY}}
models:
  mock-1: {provider: local}
  mock-2: {provider: local}
  dead: {provider: gone, model: dead}
  claude: {provider: an, model: claude-x}
pools:
  chat: {members: [{model: mock-1}]}
  fo: {members: [{model: dead, weight: 1000000000}, {model: mock-2, weight: 1}], breaker: {consecutive_n: 1, base_cooldown_secs: 600}}
  cross: {members: [{model: claude}]}
  gated: {members: [{model: mock-1, weight: 1000000000}, {model: mock-2, weight: 1}], hooks: [policy]}
hooks:
  policy: {kind: gate, builtin: http-gate, prompt: ro, settings: {url: "http://127.0.0.1:${policy.port}/gate"}}
auth:
  chain: [tokens, keys]
  signing_key: {env: GW_SIGNING_KEY}
  tokens: [{name: ci, token: {env: GW_CLIENT_TOKEN}}]
  admin_auth: [admin-tokens]
  admin_tokens: [{token: {env: GW_ADMIN}}]
`;

let gw: RunningGateway;
beforeAll(async () => {
  await ensurePrometheus();
  gw = await startGateway(CONFIG, { env: ENV });
}, 11 * 60_000);
afterAll(async () => {
  await gw?.stop();
  void policy.stop(true);
  await anthropicUp.stop();
});

const scrape = async () => {
  const response = await fetch(`${gw.data}/metrics`, { headers: AUTH });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
  return response.text();
};
const chat = (path: string, model: string, text: string, headers: Record<string, string> = AUTH) =>
  fetch(`${gw.data}${path}`, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify({ model, max_tokens: 32, messages: [{ role: "user", content: text }] }) });
const admin = (path: string, body: unknown) => fetch(`${gw.admin}${path}`, { method: "POST", headers: { "x-admin-token": ENV.GW_ADMIN, "content-type": "application/json" }, body: JSON.stringify(body) });

interface Parsed {
  /** `# TYPE` by family. */
  types: Map<string, string>;
  helps: Set<string>;
  /** Samples by family (histogram suffixes folded into theirs; `le` left out of the label names). */
  samples: Map<string, { name: string; labels: Record<string, string>; value: number }[]>;
}

function parse(text: string): Parsed {
  const types = new Map<string, string>();
  const helps = new Set<string>();
  const samples: Parsed["samples"] = new Map();
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const meta = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (meta) {
      if (meta[1] === "TYPE") types.set(meta[2]!, meta[3]!);
      else helps.add(meta[2]!);
      continue;
    }
    const sample = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!sample) throw new Error(`not a sample line: ${line}`);
    const labels = Object.fromEntries([...(sample[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1]!, m[2]!]));
    const family = types.has(sample[1]!) ? sample[1]! : sample[1]!.replace(/_(bucket|sum|count)$/, "");
    if (!samples.has(family)) samples.set(family, []);
    samples.get(family)!.push({ name: sample[1]!, labels, value: Number(sample[3]) });
  }
  return { types, helps, samples };
}

/** The value of the one sample of `name` with exactly these labels (undefined when there is none). */
function value(parsed: Parsed, name: string, labels: Record<string, string>): number | undefined {
  const family = parsed.types.has(name) ? name : name.replace(/_(bucket|sum|count)$/, "");
  const wanted = JSON.stringify(Object.entries(labels).sort());
  return parsed.samples.get(family)?.find((s) => s.name === name && JSON.stringify(Object.entries(s.labels).sort()) === wanted)?.value;
}

describe("GET /metrics against the spec's table", () => {
  test("from boot: every family with its HELP and TYPE, the unlabelled counters at 0, no traffic series yet", async () => {
    const text = await scrape();
    const parsed = parse(text);
    for (const [name, { type }] of Object.entries(SPEC)) {
      expect({ name, type: parsed.types.get(name) }).toEqual({ name, type });
      expect(parsed.helps.has(name)).toBe(true);
    }
    expect(value(parsed, "gateway_webhook_logs_dropped_total", {})).toBe(0);
    expect(value(parsed, "gateway_billing_truncated_total", {})).toBe(0);
    for (const name of ["gateway_requests_total", "gateway_request_duration_seconds", "gateway_upstream_attempts_total", "gateway_translations_total", ...KEY_GAUGES]) {
      expect({ name, samples: parsed.samples.get(name) ?? [] }).toEqual({ name, samples: [] });
    }
    // Read from the pools' breakers: present (Closed) before any request.
    expect(value(parsed, "gateway_lane_state", { pool: "fo", lane: "dead" })).toBe(0);
    // Clean: the linter judges a family by its samples, and no key has any yet.
    expect(await promtoolCheckMetrics(text)).toEqual({ code: 0, problems: [] });
  });

  test("after traffic: each family's series carry exactly the spec's label names, with the requests' values", async () => {
    // A key in a group with a budget: the key gauges' series (`key` plus the key's own labels).
    expect((await admin("/groups", { name: "meter", limits: [{ window: "day", budget_cents: 1000000 }] })).status).toBe(201);
    const minted = await admin("/keys", { name: "metrics", group: "meter", labels: { team: "blue" } });
    expect(minted.status).toBe(201);
    const key = (await json(minted)) as { id: string; token: string };

    const statuses = await Promise.all([
      chat("/v1/chat/completions", "chat", "one"),
      chat("/v1/chat/completions", "chat", "two"),
      chat("/v1/chat/completions", "chat", "three", { authorization: `Bearer ${key.token}` }),
      // An unknown model: refused before any pool is known.
      chat("/v1/chat/completions", "no-such-model", "four"),
    ].map(async (r) => (await r).status));
    expect(statuses).toEqual([200, 200, 200, 404]);
    // Anthropic's own ingress on a mock pool (no translation counted: the mock answers through the IR).
    expect((await chat("/v1/messages", "chat", "five")).status).toBe(200);
    // A direct route: the lane's own cell, pool "(direct)".
    expect((await chat("/mock-1", "mock-1", "six")).status).toBe(200);
    // The dead lane refuses the connection: a transient failure, a failover to mock-2, a trip (consecutive_n: 1).
    expect((await chat("/v1/chat/completions", "fo", "seven")).status).toBe(200);
    // OpenAI in, Anthropic out: a translation hop.
    expect((await chat("/v1/chat/completions", "cross", "eight")).status).toBe(200);
    expect(anthropicUp.requests.length).toBe(1);
    // The gate's verbs: a route order chosen, and a rejection.
    expect((await chat("/v1/chat/completions", "gated", "ROUTE please")).status).toBe(200);
    expect((await chat("/v1/chat/completions", "gated", "REJECT please")).status).toBe(403);

    const text = await scrape();
    const parsed = parse(text);
    for (const [name, spec] of Object.entries(SPEC)) {
      const series = parsed.samples.get(name) ?? [];
      expect({ name, some: series.length > 0 }).toEqual({ name, some: true });
      for (const s of series) {
        const names = Object.keys(s.labels).filter((n) => !(spec.type === "histogram" && s.name.endsWith("_bucket") && n === "le"));
        // A key gauge also carries the key's own labels, after `key` (design/telemetry.md).
        const expected = KEY_GAUGES.includes(name) ? ["key", "team"] : spec.labels;
        expect({ name, labels: names }).toEqual({ name, labels: expected });
      }
    }

    const requests = (labels: Record<string, string>) => value(parsed, "gateway_requests_total", labels);
    expect(requests({ ingress_protocol: "openai", pool: "chat", outcome: "ok" })).toBe(3);
    expect(requests({ ingress_protocol: "openai", pool: "", outcome: "client_error" })).toBe(1);
    expect(requests({ ingress_protocol: "anthropic", pool: "chat", outcome: "ok" })).toBe(1);
    expect(requests({ ingress_protocol: "openai", pool: "(direct)", outcome: "ok" })).toBe(1);
    expect(requests({ ingress_protocol: "openai", pool: "fo", outcome: "ok" })).toBe(1);
    expect(requests({ ingress_protocol: "openai", pool: "cross", outcome: "ok" })).toBe(1);
    expect(requests({ ingress_protocol: "openai", pool: "gated", outcome: "ok" })).toBe(1);
    expect(requests({ ingress_protocol: "openai", pool: "gated", outcome: "client_error" })).toBe(1);
    const total = parsed.samples.get("gateway_requests_total")!.reduce((sum, s) => sum + s.value, 0);
    expect(total).toBe(10);
    expect(value(parsed, "gateway_request_duration_seconds_count", { ingress_protocol: "openai", pool: "chat" })).toBe(3);
    expect(value(parsed, "gateway_request_duration_seconds_bucket", { ingress_protocol: "openai", pool: "chat", le: "+Inf" })).toBe(3);

    expect(value(parsed, "gateway_upstream_attempts_total", { pool: "chat", lane: "mock-1" })).toBe(4);
    expect(value(parsed, "gateway_upstream_attempts_total", { pool: "(direct)", lane: "mock-1" })).toBe(1);
    expect(value(parsed, "gateway_upstream_attempts_total", { pool: "fo", lane: "dead" })).toBe(1);
    expect(value(parsed, "gateway_upstream_attempts_total", { pool: "fo", lane: "mock-2" })).toBe(1);
    expect(value(parsed, "gateway_upstream_failures_total", { pool: "fo", lane: "dead", disposition: "transient_upstream" })).toBe(1);
    expect(value(parsed, "gateway_breaker_trips_total", { pool: "fo", lane: "dead" })).toBe(1);
    expect(value(parsed, "gateway_failovers_total", { pool: "fo", reason: "connect" })).toBe(1);
    expect(value(parsed, "gateway_lane_state", { pool: "fo", lane: "dead" })).toBe(2);
    expect(value(parsed, "gateway_lane_state", { pool: "fo", lane: "mock-2" })).toBe(0);
    expect(value(parsed, "gateway_translations_total", { from: "openai", to: "anthropic" })).toBe(1);
    expect(value(parsed, "gateway_route_policy_selections_total", { pool: "gated", policy: "policy" })).toBe(1);
    expect(value(parsed, "gateway_route_policy_rejections_total", { pool: "gated", policy: "policy", status: "403" })).toBe(1);
    expect(value(parsed, "gateway_webhook_logs_dropped_total", {})).toBe(0);
    expect(value(parsed, "gateway_billing_truncated_total", {})).toBe(0);

    const usage = await json(await fetch(`${gw.admin}/keys/${key.id}/usage`, { headers: { "x-admin-token": ENV.GW_ADMIN } }));
    expect(usage.tokens).toBeGreaterThan(0);
    const keyLabels = { key: key.id, team: "blue" };
    expect(value(parsed, "gateway_key_tokens_total", keyLabels)).toBe(usage.tokens);
    expect(value(parsed, "gateway_key_spend_cents", keyLabels)).toBe(usage.spend_cents);
    expect(value(parsed, "gateway_key_budget_remaining_cents", keyLabels)).toBe(1000000 - usage.spend_cents);

    // The full text: only the spec's own lint problem; without that family, clean.
    expect(await promtoolCheckMetrics(text)).toEqual({ code: 3, problems: [SPEC_LINT] });
    const withoutIt = text.split("\n").filter((line) => !/^(# (HELP|TYPE) )?gateway_key_tokens_total\b/.test(line)).join("\n");
    expect(await promtoolCheckMetrics(withoutIt)).toEqual({ code: 0, problems: [] });
  });
});
