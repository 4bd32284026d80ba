// The request-log stream on the built binary (design/telemetry.md, "Request-log record"): the file
// exporter writes one record per model request on every protocol, streams included, with the usage and
// cost the ledger holds for it (checked against GET /usage/keys); failover and error records; never a
// prompt or a credential; SIGTERM flushes. The webhook exporter's outages (500, hanging, down) never slow
// or fail a request, and what it sheds is counted.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { json, LISTEN_ANY, startGateway, tempDir, type RunningGateway } from "../support/gateway.ts";
import { SDK_CLIENTS } from "../support/sdk-clients.ts";
import { until } from "../support/until.ts";

const ENV = { GW_SIGNING_KEY: "e2e-request-logs-signing-key-19ab", GW_ADMIN: "e2e-request-logs-admin-77" };
const dir = tempDir("gw-logs-");
const LOG = join(dir, "requests.jsonl");
let gw: RunningGateway;
let key: { id: string; token: string };

beforeAll(async () => {
  gw = await startGateway(
    `${LISTEN_ANY}security: {admin_rate_limit: {per_second: 1000, burst: 10000}}
providers:
  local: {protocol: mock}
  down: {protocol: openai, base_url: "http://127.0.0.1:9/v1", api_key: k}
models:
  mock: {provider: local}
  dead: {provider: down, model: gpt-4o-mini}
pools:
  chat: {members: [{model: mock}]}
  fallback: {members: [{model: dead, weight: 1000000}, {model: mock, weight: 1}]}
rate_card:
  mock: {input: 100, output: 400}
auth:
  chain: [keys]
  signing_key: {env: GW_SIGNING_KEY}
  admin_auth: [admin-tokens]
  admin_tokens: [{token: {env: GW_ADMIN}}]
groups: {team: {}}
export:
  requests: {module: file, settings: {path: "${LOG}"}}
`,
    { env: ENV, dir },
  );
  const minted = await fetch(`${gw.admin}/keys`, { method: "POST", headers: { "x-admin-token": ENV.GW_ADMIN, "content-type": "application/json" }, body: JSON.stringify({ name: "logs", group: "team" }) });
  key = await json(minted);
});
afterAll(async () => {
  await gw?.stop();
});

// Complete lines only: the exporter may be writing the last one while the test reads (a tailing reader's rule).
const records = () => (existsSync(LOG) ? readFileSync(LOG, "utf8").split("\n").slice(0, -1).filter((l) => l !== "").map((l) => JSON.parse(l)) : []);

describe("the file exporter's request records", () => {
  test("one record per request on all six protocols, streams included, with the ledger's usage and cost", async () => {
    for (const make of SDK_CLIENTS) {
      const client = make(gw.data, key.token);
      await client.nonStream("chat", "a question about logs");
      await client.stream("chat", "a streamed question about logs");
    }
    await until(() => records().length >= 12, 5_000);
    const mine = records().filter((r) => r.key_id === key.id);
    expect(mine.length).toBe(12);
    expect(new Set(mine.map((r) => r.ingress_protocol))).toEqual(new Set(["openai", "anthropic", "gemini", "bedrock", "cohere", "responses"]));
    expect(mine.filter((r) => r.stream).length).toBe(6);
    expect(new Set(mine.map((r) => r.request_id)).size).toBe(12);
    for (const r of mine) {
      expect(Object.keys(r).sort()).toEqual(
        ["ts", "request_id", "trace_id", "span_id", "ingress_protocol", "egress_protocol", "model", "pool", "lane", "provider", "upstream_model", "stream", "status", "outcome", "attempts", "failovers", "key_id", "group", "principal", "usage", "cost_micros", "duration_ms", "ttfb_ms", "error"].sort(),
      );
      expect(r).toMatchObject({ model: "chat", pool: "chat", lane: "mock", provider: "local", egress_protocol: "mock", status: 200, outcome: "ok", attempts: 1, failovers: [], group: "team", principal: key.id, error: null });
      expect(r.usage.input_tokens).toBeGreaterThan(0);
      expect(r.usage.output_tokens).toBeGreaterThan(0);
      expect(r.cost_micros).toBeGreaterThan(0);
      expect(r.ts).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    // What the ledger holds for the key (written within 100 ms of each request's end).
    await until(async () => (await json(await fetch(`${gw.admin}/usage/keys`, { headers: { "x-admin-token": ENV.GW_ADMIN } }))).items.some((i: { id: string; requests: number }) => i.id === key.id && i.requests === 12));
    const ledger = (await json(await fetch(`${gw.admin}/usage/keys`, { headers: { "x-admin-token": ENV.GW_ADMIN } }))).items.find((i: { id: string }) => i.id === key.id);
    expect(mine.reduce((sum, r) => sum + r.cost_micros, 0)).toBe(ledger.spend_micros);
    expect(mine.reduce((sum, r) => sum + r.usage.output_tokens, 0)).toBe(ledger.tokens_output);
    expect(mine.reduce((sum, r) => sum + r.usage.input_tokens - r.usage.cache_read_tokens - r.usage.cache_write_tokens, 0)).toBe(ledger.tokens_input);
    const text = readFileSync(LOG, "utf8");
    expect(text).not.toContain("a question about logs");
    expect(text).not.toContain(key.token);
    expect(statSync(LOG).mode & 0o777).toBe(0o600);
  });

  test("failovers, refusals and unknown models each leave a record with their error class", async () => {
    const call = (model: string, token = key.token) =>
      fetch(`${gw.data}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "x-request-id": `rec-${model}-${token.length}` }, body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }) });
    expect((await call("fallback")).status).toBe(200);
    expect((await call("nope")).status).toBe(404);
    expect((await call("chat", "wrong-key")).status).toBe(401);
    await until(() => ["fallback", "nope"].every((m) => records().some((r) => r.request_id === `rec-${m}-${key.token.length}`)) && records().some((r) => r.request_id === "rec-chat-9"));
    const byId = (id: string) => records().find((r) => r.request_id === id);
    expect(byId(`rec-fallback-${key.token.length}`)).toMatchObject({ pool: "fallback", lane: "mock", attempts: 2, outcome: "ok", failovers: [{ lane: "dead", reason: expect.stringMatching(/connect|transient_upstream/) }] });
    expect(byId(`rec-nope-${key.token.length}`)).toMatchObject({ status: 404, outcome: "client_error", pool: null, error: { class: "not_found" } });
    expect(byId("rec-chat-9")).toMatchObject({ status: 401, outcome: "client_error", key_id: null, principal: null, error: { class: "unauthorized" } });
  });

  test("SIGTERM flushes what is queued", async () => {
    const before = records().length;
    for (let i = 0; i < 5; i++) await (await fetch(`${gw.data}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${key.token}`, "content-type": "application/json" }, body: JSON.stringify({ model: "chat", messages: [{ role: "user", content: "last" }] }) })).text();
    expect(await gw.stop()).toBe(0);
    expect(records().length).toBe(before + 5);
  });
});

describe("webhook outages never touch a request", () => {
  let received = 0;
  const servers: ReturnType<typeof Bun.serve>[] = [];
  const serve = (fetch: (r: Request) => Response | Promise<Response>) => {
    const server = Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: 0, fetch });
    servers.push(server);
    return `http://127.0.0.1:${server.port}/hook`;
  };
  afterAll(() => servers.forEach((s) => s.stop(true)));

  test("500 always, hanging, and down: every request answered at once; shed records counted", async () => {
    const failing = serve(async (r) => ((received += ((await r.json()) as unknown[]).length), new Response("no", { status: 500 })));
    const hanging = serve(() => new Promise<Response>(() => {}));
    const own = await startGateway(
      `${LISTEN_ANY}providers: {local: {protocol: mock}}\nmodels: {mock: {provider: local}}\nexport:
  failing: {module: webhook, settings: {url: "${failing}", batch_max: 5, flush_interval_ms: 50, max_retries: 1}}
  hanging: {module: webhook, settings: {url: "${hanging}", batch_max: 1, flush_interval_ms: 10, max_in_flight: 1, timeout_ms: 60000}}
  down: {module: webhook, settings: {url: "http://127.0.0.1:9/hook", batch_max: 1, flush_interval_ms: 10}}
`,
    );
    try {
      const durations: number[] = [];
      for (let i = 0; i < 60; i++) {
        const started = performance.now();
        const answer = await fetch(`${own.data}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "mock", messages: [{ role: "user", content: "hi" }] }) });
        expect(answer.status).toBe(200);
        await answer.text();
        durations.push(performance.now() - started);
      }
      durations.sort((a, b) => a - b);
      expect(durations[Math.floor(durations.length * 0.9)]!).toBeLessThan(100);
      // The failing endpoint was tried (and retried); the hanging one, one delivery in flight, shed the rest.
      await until(() => received > 0);
      await until(async () => {
        const text = await (await fetch(`${own.data}/metrics`)).text();
        return Number(/^gateway_webhook_logs_dropped_total (\d+)/m.exec(text)?.[1] ?? 0) > 0;
      });
    } finally {
      await own.stop();
    }
  }, 30_000);
});
