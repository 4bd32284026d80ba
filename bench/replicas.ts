// A governed request's CPU with the store on PostgreSQL against the same on sqlite (issue 20's "at most
// 1.5x"): two gateways with bench/gateway-config.ts's governance (three-level group chain, limits, a
// minted key), one per store, each alone on core 1 under wrk -c64 from core 0, alternating 3 s runs
// after 15 s of load each; PostgreSQL (Debian's, started as tests/support/postgres.ts does) on core 0.
// Prints CPU per request per round, the medians and their ratio, and the ledger's request count.
//
//   npm run build && npx bun bench/replicas.ts            # ~1.5 min; ROUNDS=6
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
const wrk = (g: { data: string; token: string }, secs: number) => Bun.spawnSync(["taskset", "-c", "0", "wrk", "-t1", "-c64", `-d${secs}s`, "-s", lua(g.token), `http://${g.data}/v1/chat/completions`]).stdout.toString();
for (const g of Object.values(gws)) wrk(g, 15);
const res: Record<string, number[]> = { sqlite: [], postgres: [] };
for (let r = 0; r < Number(process.env.ROUNDS ?? 6); r++) for (const [name, g] of Object.entries(gws)) {
  const t0 = ticks(g.pid); const out = wrk(g, 3); const t1 = ticks(g.pid);
  const n = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0); const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? "0";
  const us = ((t1 - t0) / 100) * 1e6 / n; res[name]!.push(us);
  
  console.log(`${name} round ${r}: ${us.toFixed(1)} us/req, ${n} req, non2xx ${non2xx}`);
}
const med = (a: number[]) => a.toSorted((x, y) => x - y)[Math.floor(a.length / 2)]!;
console.log(`median sqlite ${med(res.sqlite!).toFixed(1)} postgres ${med(res.postgres!).toFixed(1)} ratio ${(med(res.postgres!) / med(res.sqlite!)).toFixed(2)}`);
const ledger = (await pg.sql("SELECT COALESCE(SUM(requests),0)::bigint AS n FROM ledger", "bench")) as { n: string }[];
console.log("postgres ledger requests", ledger[0]!.n);
for (const g of Object.values(gws)) process.kill(g.pid, "SIGTERM");
up.kill(); await Bun.sleep(1500); await pg.stop(); process.exit(0);
