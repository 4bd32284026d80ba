// The acceptance: the built binary's GET /metrics scraped by a real Prometheus server (Debian's
// package, tests/support/prometheus.ts) every second with a bearer credential, its HTTP API then asked
// for gateway_requests_total and answering what the requests made. Without `keys` in auth.chain the key
// gauges are not declared, and the whole exposition passes `promtool check metrics` clean.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { LISTEN_ANY, startGateway, tempDir, type RunningGateway } from "../support/gateway.ts";
import { ensurePrometheus, promtoolCheckMetrics, startPrometheus, type RunningPrometheus } from "../support/prometheus.ts";
import { until } from "../support/until.ts";

const TOKEN = "scrape-client-token-6f2a";
const AUTH = { authorization: `Bearer ${TOKEN}` };

const CONFIG = `${LISTEN_ANY}
providers:
  local: {protocol: mock}
models:
  mock-1: {provider: local}
pools:
  chat: {members: [{model: mock-1}]}
auth:
  chain: [tokens]
  tokens: [{name: scraper, token: {env: GW_CLIENT_TOKEN}}]
`;

let gw: RunningGateway;
let prom: RunningPrometheus | undefined;
beforeAll(async () => {
  await ensurePrometheus();
  gw = await startGateway(CONFIG, { env: { GW_CLIENT_TOKEN: TOKEN } });
}, 11 * 60_000);
afterAll(async () => {
  await prom?.stop();
  await gw?.stop();
});

const chat = (model: string) =>
  fetch(`${gw.data}/v1/chat/completions`, { method: "POST", headers: { ...AUTH, "content-type": "application/json" }, body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }) });

/** gateway_requests_total by outcome, as Prometheus last scraped it (pool "chat" or "" alike). */
async function scrapedRequests(p: RunningPrometheus): Promise<Record<string, number>> {
  const byOutcome: Record<string, number> = {};
  for (const s of await p.query("gateway_requests_total")) byOutcome[`${s.metric.outcome}/${s.metric.pool ?? ""}`] = s.value;
  return byOutcome;
}

test("a real Prometheus scrapes GET /metrics with a bearer credential and its API answers the requests made", async () => {
  for (let i = 0; i < 3; i++) expect((await chat("chat")).status).toBe(200);
  expect((await chat("no-such-model")).status).toBe(404);

  // Same exposition Prometheus will read: no key gauges without `keys` in the chain, and lint-clean.
  const text = await (await fetch(`${gw.data}/metrics`, { headers: AUTH })).text();
  expect(text).not.toContain("gateway_key_");
  expect(await promtoolCheckMetrics(text)).toEqual({ code: 0, problems: [] });

  const target = gw.data.replace(/^http:\/\//, "");
  prom = await startPrometheus({ dir: tempDir("gw-prom-"), target, bearer: TOKEN });
  const p = prom;
  // One scrape a second: the first lands within ~2 s; 20 s bounds a slow machine.
  await until(async () => (await p.targets()).some((t) => t.health === "up"), 20_000, 200);
  const [up] = await p.targets();
  expect(up).toMatchObject({ health: "up", lastError: "", scrapeUrl: `${gw.data}/metrics` });

  await until(async () => Object.keys(await scrapedRequests(p)).length === 2, 20_000, 200);
  // Prometheus leaves out a label whose value is empty: the unresolved pool ("") has no `pool` label there.
  expect(await scrapedRequests(p)).toEqual({ "ok/chat": 3, "client_error/": 1 });
  expect((await p.query("sum(gateway_requests_total)"))[0]!.value).toBe(4);
  expect((await p.query('gateway_request_duration_seconds_count{pool="chat"}'))[0]!.value).toBe(3);
  expect((await p.query('gateway_request_duration_seconds_bucket{pool="chat",le="+Inf"}'))[0]!.value).toBe(3);
  expect((await p.query("gateway_webhook_logs_dropped_total"))[0]!.value).toBe(0);
  expect((await p.query("gateway_billing_truncated_total"))[0]!.value).toBe(0);
  expect((await p.query('gateway_lane_state{pool="chat",lane="mock-1"}'))[0]!.value).toBe(0);

  // Later requests reach it on a later scrape.
  for (let i = 0; i < 2; i++) expect((await chat("chat")).status).toBe(200);
  await until(async () => (await scrapedRequests(p))["ok/chat"] === 5, 20_000, 200);
}, 90_000);

test("a scrape without the credential is refused (the chain is closed), and Prometheus says so", async () => {
  const refused = await startPrometheus({ dir: tempDir("gw-prom-"), target: gw.data.replace(/^http:\/\//, "") });
  try {
    await until(async () => (await refused.targets()).some((t) => t.health === "down"), 20_000, 200);
    expect((await refused.targets())[0]!.lastError).toContain("401");
  } finally {
    await refused.stop();
  }
}, 60_000);
