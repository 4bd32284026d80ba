// Cold start (spawn -> first served /healthz) and idle RSS of dist/gateway on the embedded-default
// shape. Run: `npm run build && bun bench/startup.ts [runs]`. Figures go into docs/performance.md.
import { mkdtempSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const binary = resolve(import.meta.dir, "../dist/gateway");
const runs = Number(Bun.argv[2] ?? 20);
const dir = mkdtempSync(join(tmpdir(), "gw-bench-"));
const port = 18000 + Math.floor(Math.random() * 1000);
const config = join(dir, "gateway.yaml");
writeFileSync(
  config,
  `listen: 127.0.0.1:${port}\nadmin_listen: 127.0.0.1:${port + 1}\nstore: {module: sqlite, settings: {path: ${dir}/gw.db}}\n` +
    "providers: {local: {protocol: mock}}\nmodels: {mock-1: {provider: local}}\npools: {default: {members: [{model: mock-1}]}}\n",
);

const rssKb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(require("node:fs").readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
const percentile = (values: number[], p: number) => values.toSorted((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!;

const starts: number[] = [];
const rss: number[] = [];
for (let i = 0; i < runs; i++) {
  const began = performance.now();
  const proc = Bun.spawn([binary, "--config", config, "--log-level", "error"], { stdout: "ignore", stderr: "ignore" });
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200) break;
    } catch {
      // not listening yet
    }
    await Bun.sleep(1);
  }
  starts.push(performance.now() - began);
  await Bun.sleep(1000);
  rss.push(rssKb(proc.pid) / 1024);
  proc.kill("SIGTERM");
  await proc.exited;
}
console.log(
  JSON.stringify(
    {
      runs,
      cold_start_ms: { p50: +percentile(starts, 50).toFixed(1), p90: +percentile(starts, 90).toFixed(1), max: +Math.max(...starts).toFixed(1) },
      idle_rss_mb: { p50: +percentile(rss, 50).toFixed(1), max: +Math.max(...rss).toFixed(1) },
      binary_mb: +(statSync(binary).size / 1048576).toFixed(1),
    },
    null,
    2,
  ),
);
