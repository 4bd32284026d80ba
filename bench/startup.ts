// Cold start (spawn -> first COMPLETED chat request) and idle RSS of the gateway binary, on two configs:
//   default   the embedded default: no --config, in an empty directory, no vendor key in the environment
//             (the mock provider behind the pool `default`); it listens on 127.0.0.1:8080 and :8081, so
//             when either is taken the printed default (--print-default-config) with two free ports is
//             run instead, and the output says so;
//   six       six providers, one per wire protocol (OpenAI, Anthropic, Responses, Gemini, Bedrock, Cohere)
//             on bench/upstream.ts (started here), twenty models, and governance: auth.chain [keys] with
//             a virtual key minted once through the admin API, and a three-level group chain with limits.
// Each config is started once first (creating its store, minting the key) and not measured; then `runs`
// starts each, interleaved: the clock runs from spawn until a chat request (OpenAI chat completions,
// non-stream: `default` to the mock, `six` with the key to the upstream) answers 200 with a
// chat.completion, retried every millisecond while the port refuses; VmRSS is read 1 s later.
// Run: `npm run build && bun bench/startup.ts [runs] [--gateway PATH]`; prints JSON. bench/dataplane.ts
// runs it and judges the p50s. Only 127.0.0.1 is contacted.
import type { Subprocess } from "bun";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { GATEWAY_ENV, GOVERNANCE_ENV, GOVERNANCE_YAML, mintKey, providersYaml } from "./gateway-config.ts";

const { values: opts, positionals } = parseArgs({
  args: Bun.argv.slice(2),
  allowPositionals: true,
  options: { gateway: { type: "string", default: resolve(import.meta.dir, "../dist/gateway") } },
});
const binary = resolve(opts.gateway!);
const runs = Number(positionals[0] ?? 20);
const IDLE_MS = 1000;
const GIVE_UP_MS = 10_000;
const BASE_ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp" };

const rssKb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? NaN);
const percentile = (values: number[], p: number) => values.toSorted((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))] ?? NaN;
const fixed = (value: number) => (Number.isFinite(value) ? +value.toFixed(1) : null);
function freePort(): number {
  const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = listener.port;
  listener.stop(true);
  return port;
}
function portTaken(port: number): boolean {
  try {
    Bun.listen({ hostname: "127.0.0.1", port, socket: { data() {} } }).stop(true);
    return false;
  } catch {
    return true;
  }
}

/** The twenty models of `six`: alias, provider, the upstream's model id (the imitation answers any). */
const MODELS: [string, string, string][] = [
  ["gpt", "up-openai", "gpt-4o-mini"],
  ["gpt-4o", "up-openai", "gpt-4o"],
  ["gpt-4.1", "up-openai", "gpt-4.1"],
  ["o4-mini", "up-openai", "o4-mini"],
  ["claude", "up-anthropic", "claude-haiku-4-5"],
  ["claude-sonnet", "up-anthropic", "claude-sonnet-4-5"],
  ["claude-opus", "up-anthropic", "claude-opus-4-1"],
  ["rsp", "up-responses", "gpt-4.1-mini"],
  ["rsp-5", "up-responses", "gpt-5"],
  ["rsp-5-mini", "up-responses", "gpt-5-mini"],
  ["gemini", "up-gemini", "gemini-2.5-flash"],
  ["gemini-pro", "up-gemini", "gemini-2.5-pro"],
  ["gemini-lite", "up-gemini", "gemini-2.5-flash-lite"],
  ["claude-bedrock", "up-bedrock", "us.anthropic.claude-haiku-4-5-20251001-v1:0"],
  ["sonnet-bedrock", "up-bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"],
  ["nova-bedrock", "up-bedrock", "us.amazon.nova-pro-v1:0"],
  ["command", "up-cohere", "command-a-03-2025"],
  ["command-r", "up-cohere", "command-r-08-2024"],
  ["command-r-plus", "up-cohere", "command-r-plus-08-2024"],
  ["command-r7b", "up-cohere", "command-r7b-12-2024"],
];

interface Setup {
  readonly name: string;
  readonly how: string;
  readonly cwd: string;
  readonly args: string[];
  readonly env: Record<string, string>;
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly body: string;
}
const chat = (model: string) => JSON.stringify({ model, messages: [{ role: "user", content: "hello" }] });

async function embeddedDefault(): Promise<Setup> {
  const cwd = mkdtempSync(join(tmpdir(), "gw-startup-default-"));
  const common = { name: "default", cwd, env: BASE_ENV, headers: { "content-type": "application/json" }, body: chat("default") };
  if (!portTaken(8080) && !portTaken(8081)) return { ...common, how: "no --config: the embedded default", args: [], url: "http://127.0.0.1:8080/v1/chat/completions" };
  const printed = Bun.spawnSync([binary, "--print-default-config"], { env: BASE_ENV, stdout: "pipe" }).stdout.toString();
  const port = freePort();
  const admin = freePort();
  const text = printed.replace("127.0.0.1:8080", `127.0.0.1:${port}`).replace("127.0.0.1:8081", `127.0.0.1:${admin}`);
  if (text === printed) throw new Error("--print-default-config: no 127.0.0.1:8080 to move");
  writeFileSync(join(cwd, "gateway.yaml"), text);
  return { ...common, how: "8080 or 8081 taken: the printed embedded default with two free ports, as ./gateway.yaml", args: [], url: `http://127.0.0.1:${port}/v1/chat/completions` };
}

async function sixProviders(upstream: string): Promise<Setup> {
  const cwd = mkdtempSync(join(tmpdir(), "gw-startup-six-"));
  const port = freePort();
  const admin = freePort();
  const file = join(cwd, "gateway.yaml");
  writeFileSync(
    file,
    `listen: 127.0.0.1:${port}\nadmin_listen: 127.0.0.1:${admin}\nstore: {module: sqlite, settings: {path: ${cwd}/gw.db}}\n` +
      providersYaml(upstream) +
      `models:\n${MODELS.map(([alias, provider, model]) => `  ${alias}: {provider: ${provider}, model: "${model}"}\n`).join("")}` +
      GOVERNANCE_YAML,
  );
  const env = { ...BASE_ENV, ...GATEWAY_ENV, ...GOVERNANCE_ENV };
  // The key lives in the store: minted on a first start, it is there for every measured one.
  const proc = Bun.spawn([binary, "--config", file], { cwd, env, stdout: "ignore", stderr: "ignore" });
  try {
    await untilAnswered(`http://127.0.0.1:${port}/healthz`, { method: "GET" }, () => true);
    const key = await mintKey(`127.0.0.1:${admin}`);
    return {
      name: "six",
      how: `six providers (one per protocol) on the bench upstream, ${MODELS.length} models, auth.chain [keys] with a minted key, a three-level group chain`,
      cwd,
      args: ["--config", file],
      env,
      url: `http://127.0.0.1:${port}/v1/chat/completions`,
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: chat("gpt"),
    };
  } finally {
    await stop(proc);
  }
}

/** Retries while the listener refuses (or answers otherwise than `ok`); the time at the first good answer. */
async function untilAnswered(url: string, init: RequestInit, ok: (status: number, text: string) => boolean): Promise<number> {
  const deadline = performance.now() + GIVE_UP_MS;
  let last = "no answer";
  for (;;) {
    try {
      const response = await fetch(url, { ...init, keepalive: false, headers: { ...(init.headers as Record<string, string>), connection: "close" } });
      const text = await response.text();
      if (response.status === 200 && ok(response.status, text)) return performance.now();
      last = `${response.status} ${text.slice(0, 200)}`;
    } catch (error) {
      last = (error as Error).message; // not listening yet
    }
    if (performance.now() > deadline) throw new Error(`${url}: nothing good within ${GIVE_UP_MS} ms (last: ${last})`);
    await Bun.sleep(1);
  }
}
async function stop(proc: Subprocess) {
  proc.kill("SIGTERM");
  const exited = await Promise.race([proc.exited.then(() => true), Bun.sleep(5000).then(() => false)]);
  if (!exited) proc.kill("SIGKILL");
  await proc.exited;
}
const isCompletion = (_: number, text: string) => {
  try {
    return JSON.parse(text).object === "chat.completion";
  } catch {
    return false;
  }
};

async function startOnce(setup: Setup): Promise<{ ms: number; rssMb: number }> {
  const began = performance.now();
  const proc = Bun.spawn([binary, ...setup.args], { cwd: setup.cwd, env: setup.env, stdout: "ignore", stderr: "ignore" });
  try {
    const answered = await untilAnswered(setup.url, { method: "POST", headers: setup.headers, body: setup.body }, isCompletion);
    await Bun.sleep(IDLE_MS);
    return { ms: answered - began, rssMb: rssKb(proc.pid) / 1024 };
  } finally {
    await stop(proc);
  }
}

const upstream = Bun.spawn([process.execPath, join(import.meta.dir, "upstream.ts"), "0"], { env: BASE_ENV, stdout: "pipe", stderr: "inherit" });
try {
  const reader = upstream.stdout.getReader();
  const first = new TextDecoder().decode((await reader.read()).value);
  reader.releaseLock();
  const upstreamAddress = JSON.parse(first.split("\n")[0]!).data as string;
  const setups = [await embeddedDefault(), await sixProviders(upstreamAddress)];
  const figures = new Map(setups.map((s) => [s.name, { ms: [] as number[], rss: [] as number[], failures: [] as string[] }]));
  for (const setup of setups) await startOnce(setup).catch(() => {}); // the store is created here, not measured
  for (let i = 0; i < runs; i++)
    for (const setup of setups) {
      const f = figures.get(setup.name)!;
      try {
        const { ms, rssMb } = await startOnce(setup);
        f.ms.push(ms);
        f.rss.push(rssMb);
      } catch (error) {
        f.failures.push((error as Error).message);
      }
    }
  const configs = Object.fromEntries(
    setups.map((s) => {
      const f = figures.get(s.name)!;
      return [
        s.name,
        {
          how: s.how,
          first_request_ms: { p50: fixed(percentile(f.ms, 50)), p90: fixed(percentile(f.ms, 90)), max: fixed(Math.max(...f.ms)), all: f.ms.map(fixed) },
          idle_rss_mb: { p50: fixed(percentile(f.rss, 50)), max: fixed(Math.max(...f.rss)) },
          failures: f.failures,
        },
      ];
    }),
  );
  console.log(JSON.stringify({ runs, binary, binary_mb: fixed(statSync(binary).size / 1048576), configs }, null, 2));
  for (const s of setups) rmSync(s.cwd, { recursive: true, force: true });
} finally {
  upstream.kill("SIGTERM");
  await upstream.exited;
}
