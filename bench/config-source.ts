// What GET /config/source and GET /config/diff cost the admin plane (they run on the event loop the data
// plane shares): a version's source (base with overlay, written back as YAML with its secrets as
// references) and the line diff of two, for configs of 1, 50 and 500 providers (each with a model and a
// pool), the diff of one changed line and of two versions that differ on every provider. In one process,
// no HTTP around it; medians of 31 runs after 20 warm-up ones.
//
//   npx bun bench/config-source.ts          # ~30 s
import { lineDiff } from "../src/admin/line-diff.ts";
import { ConfigLifecycle, loadBoot } from "../src/config/lifecycle.ts";
import { parseConfigText } from "../src/config/load.ts";
import { ConfigHolder } from "../src/config/snapshot.ts";

const ENV = { UP_KEY: "sk-bench-upstream-key-0123456789" };

function configText(providers: number, weight: number, changeAll = false): string {
  const lines = ["providers:"];
  for (let i = 0; i < providers; i++) lines.push(`  p${i}: {protocol: openai, base_url: "http://127.0.0.1:9/v${i}", api_key: "\${UP_KEY}", headers: {x-team: "team-${i}"}}`);
  lines.push("models:");
  for (let i = 0; i < providers; i++) lines.push(`  m${i}: {provider: p${i}, context_window: ${changeAll ? 16384 : 8192}}`);
  lines.push("pools:");
  for (let i = 0; i < providers; i++) lines.push(`  pool${i}: {members: [{model: m${i}, weight: ${i === 0 ? weight : 1}}]}`);
  return `${lines.join("\n")}\n`;
}

function lifecycle(text: string): ConfigLifecycle {
  const boot = loadBoot(parseConfigText(text, "bench", ENV), "bench", {}, ENV);
  if (!boot.result.ok) throw new Error(boot.result.errors.join("; "));
  return new ConfigLifecycle({ holder: new ConfigHolder(boot.result.snapshot), env: ENV, now: Date.now, bootBase: boot.base, bootOverlay: {}, bootConcealed: boot.concealed, stageOverlay: async () => ({ install: () => {}, discard: async () => {} }) });
}

function apply(l: ConfigLifecycle, text: string): number {
  const parsed = parseConfigText(text, "bench", ENV);
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  const planned = l.apply(parsed.tree, { principal: "bench", summary: "bench" }, parsed.concealed);
  if (!planned.ok) throw new Error(planned.message);
  planned.swap();
  return planned.snapshot.version;
}

function median(run: () => unknown): number {
  for (let i = 0; i < 20; i++) run();
  const times: number[] = [];
  for (let i = 0; i < 31; i++) {
    const started = performance.now();
    run();
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b)[15]!;
}

console.log("| providers | source lines | GET /config/source | GET /config/diff, one line changed | of it the line diff | every provider changed | of it the line diff |");
console.log("|---|---|---|---|---|---|---|");
for (const n of [1, 50, 500]) {
  const l = lifecycle(configText(n, 1));
  const v1 = apply(l, configText(n, 2));
  const v2 = apply(l, configText(n, 1, true));
  const source = (v: number) => l.source(l.version(v)!);
  const lines = source(0).split("\n").length - 1;
  const sourceMs = median(() => source(0));
  const oneMs = median(() => lineDiff(source(0), source(v1)));
  const [s0, s1, s2] = [source(0), source(v1), source(v2)];
  const oneDiffMs = median(() => lineDiff(s0, s1));
  const allMs = median(() => lineDiff(source(0), source(v2)));
  const allDiffMs = median(() => lineDiff(s0, s2));
  const ms = (t: number) => `${t.toFixed(2)} ms`;
  console.log(`| ${n} | ${lines} | ${ms(sourceMs)} | ${ms(oneMs)} | ${ms(oneDiffMs)} | ${ms(allMs)} | ${ms(allDiffMs)} |`);
}
