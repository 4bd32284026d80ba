// A long usage read on the built binary does not hold the data plane: over a ledger of 400,000 rows seeded
// into the sqlite file before the start (the 30-day series by key then takes ~1 s), chat requests and
// GET /healthz sent while the series is read answer in milliseconds, before the series does; the series
// holds every seeded request, so the compiled binary's read worker really read the file. A stop while
// such a read runs still drains and exits 0.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { json, LISTEN_ANY, startGateway, type RunningGateway } from "../support/gateway.ts";
import { seedLedger } from "../support/ledger-seed.ts";

const ENV = { GW_ADMIN: "e2e-usage-read-worker-admin-5c1e" };
const ROWS = 400_000;
const CONFIG = `${LISTEN_ANY}
store: {module: sqlite, settings: {path: ./state/gateway.db}}
security: {admin_rate_limit: {per_second: 1000, burst: 10000}}
providers:
  local: {protocol: mock}
models:
  mock-1: {provider: local}
pools:
  chat: {members: [{model: mock-1}]}
rate_card:
  mock-1: {input: 1, output: 2}
auth:
  admin_auth: [admin-tokens]
  admin_tokens: [{token: {env: GW_ADMIN}}]
`;

let gw: RunningGateway;

beforeAll(async () => {
  // The first start makes the store; the rows go in while no gateway holds it.
  const first = await startGateway(CONFIG, { env: ENV });
  expect(await first.stop()).toBe(0);
  seedLedger(join(first.dir, "state/gateway.db"), ROWS);
  gw = await startGateway(CONFIG, { env: ENV, dir: first.dir });
}, 60_000);
afterAll(async () => {
  await gw?.stop();
});

const seriesRead = () => fetch(`${gw.admin}/usage/series?by=key&range=30d`, { headers: { "x-admin-token": ENV.GW_ADMIN } });
const chat = () => fetch(`${gw.data}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer k" }, body: JSON.stringify({ model: "chat", messages: [{ role: "user", content: "hi" }] }) });

/** Times `send` while it answers, and when (ms after `t0`) its answer was in. */
async function timed(t0: number, send: () => Promise<Response>): Promise<{ status: number; ms: number; doneAt: number }> {
  const started = performance.now();
  const response = await send();
  await response.arrayBuffer();
  const done = performance.now();
  return { status: response.status, ms: done - started, doneAt: done - t0 };
}

test("data-plane requests sent during a 30-day series read over a large ledger answer before it does, in milliseconds", async () => {
  // Once before, so the worker's start and the data plane's first request are not what is measured.
  expect((await seriesRead()).status).toBe(200);
  expect((await chat()).status).toBe(200);

  const t0 = performance.now();
  const series = (async () => {
    const response = await seriesRead();
    const body = await json(response);
    return { status: response.status, body, doneAt: performance.now() - t0 };
  })();
  await Bun.sleep(30); // the read is under way
  const during: { status: number; ms: number; doneAt: number }[] = [];
  for (let i = 0; i < 5; i++) during.push(await timed(t0, chat), await timed(t0, () => fetch(`${gw.data}/healthz`)));
  const read = await series;

  expect(read.status).toBe(200);
  // Large enough that the read on the main thread would have held these requests for hundreds of ms.
  expect(read.doneAt).toBeGreaterThan(300);
  expect(during.map((r) => r.status)).toEqual(Array(10).fill(200));
  for (const r of during) expect(r.doneAt).toBeLessThan(read.doneAt);
  // Generous for a busy machine (each takes ~1 ms); held behind the read, the first would take ~1 s.
  expect(Math.max(...during.map((r) => r.ms))).toBeLessThan(250);
  // Every seeded request is in the series, read from the file by the compiled binary's worker.
  const total = (read.body.series as { total: { requests: number } }[]).reduce((n, s) => n + s.total.requests, 0);
  expect(total).toBe(ROWS); // the chat requests carry no virtual key, so they are not metered
  expect(read.body.series).toHaveLength(21);
}, 60_000);

test("a stop while a long series read runs drains and exits 0", async () => {
  const pending = seriesRead().then((r) => r.status, () => "cut");
  await Bun.sleep(50);
  const started = performance.now();
  expect(await gw.stop("SIGTERM", 15_000)).toBe(0);
  expect(performance.now() - started).toBeLessThan(10_000);
  expect(gw.logs.some((line) => line.includes('"stopped"'))).toBe(true);
  await pending;
}, 30_000);
