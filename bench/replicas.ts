// A governed request's CPU with the store on PostgreSQL against the same on sqlite (issue 20's "at most
// 1.5x"): two gateways with bench/gateway-config.ts's governance (three-level group chain, limits, a
// minted key), one per store, each alone on core 1 under wrk -c64 from core 0, alternating 3 s runs
// after 15 s of load each; PostgreSQL (Debian's, started as tests/support/postgres.ts does) on core 0.
// Prints CPU per request and wrk's p50 per round, the medians, their ratio and the added p50 (the
// reservation's round trip: the chain has limits), and the ledger's request count.
//
//   npm run build && npx bun bench/replicas.ts            # ~2 min; ROUNDS=6, PACED_RPS=1000
//
// Needs taskset and wrk, like dataplane.ts; talks only to 127.0.0.1.
import { mkdtempSync, writeFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { startPostgres } from "../tests/support/postgres.ts";
import { GOVERNANCE_YAML, GOVERNANCE_ENV, mintKey } from "./gateway-config.ts";
const ROOT = join(import.meta.dir, "..");
const BIN = join(ROOT, "dist/gateway");
const pg = await startPostgres({ dir: mkdtempSync(join(tmpdir(), "bench-pg-")) });
Bun.spawnSync(["sh", "-c", `for p in $(pgrep -f 'postgres -D'); do taskset -a -p -c 0 $p >/dev/null; done`]);
const url = await pg.createDatabase("bench");
const up = Bun.spawn(["taskset", "-c", "0", process.execPath, join(ROOT, "bench/upstream.ts"), "40411"], { stdout: "ignore", stderr: "ignore" });
await Bun.sleep(800);
const base = (store: string) => `listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\n${store}\nproviders:\n  up-openai: {protocol: openai, base_url: "http://127.0.0.1:40411/v1", api_key: bench-key}\nmodels:\n  gpt-4o-mini: {provider: up-openai}\n${GOVERNANCE_YAML}`;
const variants: Record<string, string> = { sqlite: "store: {module: sqlite, settings: {path: DIR/gw.db}}", postgres: "store: {module: postgres, settings: {url: {env: GW_PG_URL}}}" };
const gws: Record<string, { pid: number; data: string; token: string }> = {};
for (const [name, store] of Object.entries(variants)) {
  const dir = mkdtempSync(join(tmpdir(), `bench-${name}-`));
  writeFileSync(join(dir, "g.yaml"), base(store).replaceAll("DIR", dir));
  const proc = Bun.spawn(["taskset", "-c", "1", BIN, "--config", join(dir, "g.yaml")], { env: { ...process.env, ...GOVERNANCE_ENV, GW_PG_URL: url }, stderr: "pipe", stdout: "ignore" });
  const reader = proc.stderr.getReader(); let buf = "";
  for (;;) { const { value, done } = await reader.read(); if (done) throw new Error(buf); buf += new TextDecoder().decode(value); if (/gateway started/.test(buf)) break; }
  void (async () => { for (;;) { const r = await reader.read(); if (r.done) break; } })();
  const data = /"data":"([^"]+)"/.exec(buf)![1]!, admin = /"admin":"([^"]+)"/.exec(buf)![1]!;
  gws[name] = { pid: proc.pid, data, token: await mintKey(admin) };
}
const lua = (token: string) => { const f = join(tmpdir(), `bench-replicas-${token.slice(-6)}.lua`); writeFileSync(f, `wrk.method = "POST"\nwrk.headers["content-type"] = "application/json"\nwrk.headers["authorization"] = "Bearer ${token}"\nwrk.body = [==[{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello in five words."}],"max_tokens":32}]==]\n`); return f; };
const ticks = (pid: number) => { const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" "); return Number(f[11]) + Number(f[12]); };
const wrk = (g: { data: string; token: string }, secs: number) => Bun.spawnSync(["taskset", "-c", "0", "wrk", "-t1", "-c64", "--latency", `-d${secs}s`, "-s", lua(g.token), `http://${g.data}/v1/chat/completions`]).stdout.toString();
for (const g of Object.values(gws)) wrk(g, 15);
const res: Record<string, number[]> = { sqlite: [], postgres: [] };
const p50s: Record<string, number[]> = { sqlite: [], postgres: [] };
/** wrk's 50th percentile latency in ms. */
const p50 = (out: string) => { const m = /50%\s+([\d.]+)(us|ms|s)\b/.exec(out); return m ? Number(m[1]) * (m[2] === "us" ? 1e-3 : m[2] === "s" ? 1e3 : 1) : NaN; };
for (let r = 0; r < Number(process.env.ROUNDS ?? 6); r++) for (const [name, g] of Object.entries(gws)) {
  const t0 = ticks(g.pid); const out = wrk(g, 3); const t1 = ticks(g.pid);
  const n = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0); const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? "0";
  const us = ((t1 - t0) / 100) * 1e6 / n; res[name]!.push(us); p50s[name]!.push(p50(out));
  console.log(`${name} round ${r}: ${us.toFixed(1)} us/req, p50 ${p50(out).toFixed(2)} ms, ${n} req, non2xx ${non2xx}`);
}
const med = (a: number[]) => a.toSorted((x, y) => x - y)[Math.floor(a.length / 2)]!;
console.log(`median sqlite ${med(res.sqlite!).toFixed(1)} postgres ${med(res.postgres!).toFixed(1)} ratio ${(med(res.postgres!) / med(res.sqlite!)).toFixed(2)}`);
console.log(`p50 at 64 connections: sqlite ${med(p50s.sqlite!).toFixed(2)} ms, postgres ${med(p50s.postgres!).toFixed(2)} ms, added ${(med(p50s.postgres!) - med(p50s.sqlite!)).toFixed(2)} ms`);
// The reservation's own cost, not the queue a saturated closed loop builds: 64 connections paced to a rate
// both stores sustain (PACED_RPS, default 1000/s), each request's latency timed by this process.
const PACED_RPS = Number(process.env.PACED_RPS ?? 1000);
const body = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Say hello in five words." }], max_tokens: 32 });
async function paced(g: { data: string; token: string }, secs: number): Promise<number[]> {
  const times: number[] = [];
  const gap = (64 * 1000) / PACED_RPS;
  const end = performance.now() + secs * 1000;
  await Promise.all(Array.from({ length: 64 }, async (_, c) => {
    await Bun.sleep((c * gap) / 64);
    while (performance.now() < end) {
      const t0 = performance.now();
      const r = await fetch(`http://${g.data}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${g.token}` }, body });
      await r.arrayBuffer();
      const took = performance.now() - t0;
      if (r.ok) times.push(took);
      await Bun.sleep(Math.max(0, gap - took));
    }
  }));
  return times.sort((a, b) => a - b);
}
const pacedP50: Record<string, number[]> = { sqlite: [], postgres: [] };
for (let r = 0; r < 3; r++) for (const [name, g] of Object.entries(gws)) {
  const times = await paced(g, 4);
  const at = (q: number) => times[Math.floor(times.length * q)]!;
  pacedP50[name]!.push(at(0.5));
  console.log(`${name} paced ${PACED_RPS}/s round ${r}: p50 ${at(0.5).toFixed(2)} ms, p90 ${at(0.9).toFixed(2)} ms, ${times.length} ok`);
}
console.log(`paced p50 at 64 connections, ${PACED_RPS}/s: sqlite ${med(pacedP50.sqlite!).toFixed(2)} ms, postgres ${med(pacedP50.postgres!).toFixed(2)} ms, added ${(med(pacedP50.postgres!) - med(pacedP50.sqlite!)).toFixed(2)} ms`);
const ledger = (await pg.sql("SELECT COALESCE(SUM(requests),0)::bigint AS n FROM ledger", "bench")) as { n: string }[];
console.log("postgres ledger requests", ledger[0]!.n);
for (const g of Object.values(gws)) process.kill(g.pid, "SIGTERM");
up.kill(); await Bun.sleep(1500); await pg.stop(); process.exit(0);
