// What a long GET /usage/series costs the data plane, on the built binary over a sqlite ledger of ~1 M
// rows (tests/support/ledger-seed.ts: 300 keys, 8 models, spread over 29 days, written into the file
// before the start). Mock chat requests and GET /healthz are sent one after another, first with nothing
// else running, then while the 30-day series by key is read (the console's Usage screen); each is timed
// from send to its whole answer. Run it on two builds to compare them:
//
//   npm run build && npx bun bench/usage-series-stall.ts [--gateway dist/gateway] [--rows 1000000] [--reads 3]
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { LISTEN_ANY, startGateway } from "../tests/support/gateway.ts";
import { seedLedger } from "../tests/support/ledger-seed.ts";

const { values: opts } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    gateway: { type: "string", default: resolve(import.meta.dir, "../dist/gateway") },
    rows: { type: "string", default: "1000000" },
    reads: { type: "string", default: "3" },
  },
});
const ENV = { GW_ADMIN: "bench-usage-series-stall-admin" };
const CONFIG = `${LISTEN_ANY}
store: {module: sqlite, settings: {path: ./state/gateway.db}}
providers:
  local: {protocol: mock}
models:
  mock-1: {provider: local}
pools:
  chat: {members: [{model: mock-1}]}
auth:
  admin_auth: [admin-tokens]
  admin_tokens: [{token: {env: GW_ADMIN}}]
`;

const first = await startGateway(CONFIG, { env: ENV, binary: opts.gateway });
await first.stop();
const seeded = performance.now();
seedLedger(join(first.dir, "state/gateway.db"), Number(opts.rows));
console.log(`${opts.gateway}: ${opts.rows} ledger rows seeded in ${((performance.now() - seeded) / 1000).toFixed(1)} s`);
const gw = await startGateway(CONFIG, { env: ENV, dir: first.dir, binary: opts.gateway });

const requests = {
  chat: () => fetch(`${gw.data}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer k" }, body: JSON.stringify({ model: "chat", messages: [{ role: "user", content: "hi" }] }) }),
  healthz: () => fetch(`${gw.data}/healthz`),
};
const seriesRead = () => fetch(`${gw.admin}/usage/series?by=key&range=30d`, { headers: { "x-admin-token": ENV.GW_ADMIN } }).then((r) => r.arrayBuffer());

async function timed(send: () => Promise<Response>): Promise<number> {
  const started = performance.now();
  await (await send()).arrayBuffer();
  return performance.now() - started;
}

/** Sends chat and /healthz in turn until `until` resolves (or `count` of each when none); their times in ms. */
async function probe(until: Promise<unknown> | undefined, count = 200): Promise<{ chat: number[]; healthz: number[] }> {
  const out = { chat: [] as number[], healthz: [] as number[] };
  let done = until === undefined;
  void until?.then(() => (done = true));
  for (let i = 0; until ? !done : i < count; i++) {
    out.chat.push(await timed(requests.chat));
    out.healthz.push(await timed(requests.healthz));
  }
  return out;
}

const fmt = (ms: number[]) => {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!.toFixed(2);
  return `n ${s.length}, p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${s[s.length - 1]!.toFixed(1)} ms`;
};

try {
  await probe(undefined, 500); // warm-up
  // The first read starts the worker (where there is one): what that start holds the data plane for.
  const firstRead = await probe(seriesRead());
  console.log(`first read:  chat ${fmt(firstRead.chat)}; healthz ${fmt(firstRead.healthz)}`);
  const idle = await probe(undefined);
  console.log(`idle:        chat ${fmt(idle.chat)}; healthz ${fmt(idle.healthz)}`);
  const during = { chat: [] as number[], healthz: [] as number[] };
  const readMs: number[] = [];
  for (let i = 0; i < Number(opts.reads); i++) {
    const started = performance.now();
    const read = seriesRead().then(() => readMs.push(performance.now() - started));
    await Bun.sleep(20);
    const seen = await probe(read);
    during.chat.push(...seen.chat);
    during.healthz.push(...seen.healthz);
  }
  console.log(`30d reads:   ${readMs.map((ms) => `${(ms / 1000).toFixed(2)} s`).join(", ")}`);
  console.log(`during them: chat ${fmt(during.chat)}; healthz ${fmt(during.healthz)}`);
} finally {
  await gw.stop();
}
