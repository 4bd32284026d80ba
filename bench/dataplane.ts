// The data-plane load benchmark: direct to a local upstream imitation, through the floor proxy, through
// the gateway, side by side and interleaved in one run. See bench/README.md.
//
//   npm run build && npx bun bench/dataplane.ts [--duration 5] [--warmup 1] [--probe 2] [--chunking first]
//                                              [--gateway dist/gateway] [--startup-runs 10] [--json-out FILE]
//                                              [--scenarios same-nonstream,...] [--conns 1,64]
//
// Layout on a 2-core machine: wrk, the upstream and this script (whose raw client measures time to first
// event) on core 0; the proxy under test on core 1 ("split"). Each one-connection cell is also run with
// the proxy on core 0 ("shared"), where a cross-core wakeup cannot hide the proxy's own cost; the
// one-connection targets are judged there. `--startup-runs` runs bench/startup.ts, which always starts
// dist/gateway (not --gateway). Only 127.0.0.1 is ever contacted.
import type { Subprocess } from "bun";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";

const ROOT = resolve(import.meta.dir, "..");
const { values: opts } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    duration: { type: "string", default: "5" },
    warmup: { type: "string", default: "1" },
    probe: { type: "string", default: "2" },
    chunking: { type: "string", default: "first" },
    gateway: { type: "string", default: join(ROOT, "dist/gateway") },
    "startup-runs": { type: "string", default: "10" },
    "json-out": { type: "string" },
    "keep-tmp": { type: "boolean", default: false },
    /** Comma-separated scenario ids and connection counts, to iterate on one cell (targets for the rest show as missing). */
    scenarios: { type: "string" },
    conns: { type: "string" },
  },
});
const DURATION = Number(opts.duration);
const WARMUP = Number(opts.warmup);
const PROBE_SECS = Number(opts.probe);
const STARTUP_RUNS = Number(opts["startup-runs"]);
const LOAD_CORE = "0";
const PROXY_CORE = "1";
const CONNS_HIGH = 64;
/** A run during which other processes used more than this share of a core is measured again... */
const FOREIGN_LIMIT = 0.1;
/** ...at most twice, and at most this many times in all, so the whole run stays near 5 minutes. */
const RETRY_BUDGET = 6;
const HZ = Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim() || 100);
const BUN = process.execPath;

// --- small helpers ---------------------------------------------------------------------------------------
const log = (message: string) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}`);
const round = (value: number, digits = 2) => (Number.isFinite(value) ? Number(value.toFixed(digits)) : null);
const percentile = (values: number[], p: number) => {
  if (values.length === 0) return NaN;
  const sorted = values.toSorted((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};
function run(cmd: string[], what: string): string {
  const result = Bun.spawnSync(cmd, { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  if (result.exitCode !== 0) throw new Error(`${what} failed (${cmd.join(" ")}):\n${result.stderr.toString()}`);
  return result.stdout.toString();
}
const cpuTicks = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" "); // fields[0] is field 3 (state)
  return Number(fields[11]) + Number(fields[12]); // utime + stime (fields 14, 15)
};
const statusKb = (pid: number, key: "VmRSS" | "VmHWM") => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? NaN);
const mb = (kb: number) => round(kb / 1024, 1);
/** Busy jiffies and total jiffies per core, from /proc/stat. */
function coreTimes(): Record<string, { busy: number; total: number }> {
  const out: Record<string, { busy: number; total: number }> = {};
  for (const line of readFileSync("/proc/stat", "utf8").split("\n")) {
    const match = /^cpu(\d+) (.*)$/.exec(line);
    if (!match) continue;
    const n = match[2]!.trim().split(/\s+/).map(Number);
    const total = n.slice(0, 8).reduce((a, b) => a + b, 0);
    out[match[1]!] = { busy: total - n[3]! - n[4]!, total };
  }
  return out;
}
const busyShare = (before: ReturnType<typeof coreTimes>, after: ReturnType<typeof coreTimes>, core: string) =>
  round((after[core]!.busy - before[core]!.busy) / Math.max(1, after[core]!.total - before[core]!.total), 2);
/** Waits (up to 1 s) until neither core is more than 10% busy over 200 ms: others share this machine. */
async function quiet() {
  const deadline = performance.now() + 1000;
  while (performance.now() < deadline) {
    const before = coreTimes();
    await Bun.sleep(200);
    const after = coreTimes();
    if ((busyShare(before, after, LOAD_CORE) ?? 0) <= 0.1 && (busyShare(before, after, PROXY_CORE) ?? 0) <= 0.1) return;
  }
}
function pin(pid: number, core: string) {
  run(["taskset", "-a", "-p", "-c", core, String(pid)], `pinning ${pid} to core ${core}`);
}

// --- child processes -------------------------------------------------------------------------------------
interface Child {
  readonly name: string;
  readonly proc: Subprocess<"ignore", "pipe", "pipe">;
  readonly lines: string[];
  /** The first JSON log line with msg matching, or an error if the process exits first. */
  readonly ready: Promise<Record<string, any>>;
}
const children: Child[] = [];
function spawnChild(name: string, cmd: string[], env: Record<string, string>, cwd: string, readyMsg: RegExp): Child {
  const proc = Bun.spawn(cmd, { cwd, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", ...env }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const lines: string[] = [];
  let resolveReady!: (value: Record<string, any>) => void;
  let rejectReady!: (error: Error) => void;
  const ready = new Promise<Record<string, any>>((res, rej) => ((resolveReady = res), (rejectReady = rej)));
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    let pending = "";
    for await (const chunk of stream) {
      pending += decoder.decode(chunk, { stream: true });
      let newline: number;
      while ((newline = pending.indexOf("\n")) !== -1) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        if (lines.length < 2000) lines.push(line);
        try {
          const record = JSON.parse(line);
          if (typeof record.msg === "string" && readyMsg.test(record.msg)) resolveReady(record);
        } catch {
          // not a JSON line: kept for the error message
        }
      }
    }
  };
  void Promise.all([pump(proc.stdout), pump(proc.stderr)]).then(() => rejectReady(new Error(`${name} exited (${proc.exitCode}) before it was ready:\n${lines.join("\n")}`)));
  const timer = setTimeout(() => rejectReady(new Error(`${name} not ready within 15 s:\n${lines.join("\n")}`)), 15_000);
  void ready.finally(() => clearTimeout(timer)).catch(() => {});
  const child = { name, proc, lines, ready };
  children.push(child);
  return child;
}
async function stopChild(child: Child) {
  if (child.proc.exitCode !== null || child.proc.signalCode !== null) return;
  child.proc.kill("SIGTERM");
  const exited = await Promise.race([child.proc.exited.then(() => true), Bun.sleep(5000).then(() => false)]);
  if (!exited) {
    child.proc.kill("SIGKILL");
    await child.proc.exited;
  }
}
async function stopAll() {
  await Promise.all(children.map(stopChild));
}
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    for (const child of children) child.proc.kill("SIGKILL");
    process.exit(130);
  });
}

// --- a raw HTTP/1.1 keep-alive client: time to first SSE event and to the end of the response ------------
interface RawAnswer {
  status: number;
  ttfeMs: number;
  totalMs: number;
  body: string;
}
class RawClient {
  private buf = "";
  private pending?: { began: number; resolve: (a: RawAnswer) => void; reject: (e: Error) => void; ttfe?: number };
  private socket?: Awaited<ReturnType<typeof Bun.connect>>;
  private constructor(
    readonly host: string,
    readonly port: number,
  ) {}
  static async open(address: string): Promise<RawClient> {
    const [host, port] = address.split(":");
    const client = new RawClient(host!, Number(port));
    client.socket = await Bun.connect({
      hostname: client.host,
      port: client.port,
      socket: {
        data: (_socket, data) => client.onData(data),
        close: () => client.pending?.reject(new Error("connection closed")),
        error: (_socket, error) => client.pending?.reject(error),
      },
    });
    return client;
  }
  close() {
    this.socket?.end();
  }
  request(raw: string): Promise<RawAnswer> {
    return new Promise((resolve, reject) => {
      this.buf = "";
      this.pending = { began: performance.now(), resolve, reject };
      this.socket!.write(raw);
    });
  }
  private onData(data: Uint8Array) {
    const now = performance.now();
    this.buf += Buffer.from(data).toString("latin1"); // byte = char: chunk sizes count bytes
    const pending = this.pending;
    if (!pending) return;
    const headerEnd = this.buf.indexOf("\r\n\r\n");
    if (headerEnd === -1) return;
    const head = this.buf.slice(0, headerEnd);
    const status = Number(head.slice(9, 12));
    const chunked = /\r\ntransfer-encoding:\s*chunked/i.test(head);
    const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? NaN);
    let body = "";
    let done = false;
    let at = headerEnd + 4;
    if (chunked) {
      for (;;) {
        const lineEnd = this.buf.indexOf("\r\n", at);
        if (lineEnd === -1) break;
        const size = parseInt(this.buf.slice(at, lineEnd), 16);
        if (this.buf.length < lineEnd + 2 + size + 2) break;
        body += this.buf.slice(lineEnd + 2, lineEnd + 2 + size);
        at = lineEnd + 2 + size + 2;
        if (size === 0) {
          done = true;
          break;
        }
      }
    } else if (Number.isFinite(length)) {
      body = this.buf.slice(at, at + length);
      done = body.length === length;
    }
    if (pending.ttfe === undefined && (body.includes("\n\n") || done)) pending.ttfe = now - pending.began;
    if (done) {
      this.pending = undefined;
      pending.resolve({ status, ttfeMs: pending.ttfe!, totalMs: now - pending.began, body });
    }
  }
}

// --- what is measured ------------------------------------------------------------------------------------
type TargetName = "direct" | "floor" | "gateway";
type ScenarioId = "same-nonstream" | "same-stream" | "cross-nonstream" | "cross-stream";
interface Scenario {
  readonly id: ScenarioId;
  readonly label: string;
  readonly cross: boolean;
  readonly stream: boolean;
}
const SCENARIOS: Scenario[] = [
  { id: "same-nonstream" as const, label: "OpenAI -> OpenAI, non-stream", cross: false, stream: false },
  { id: "same-stream" as const, label: "OpenAI -> OpenAI, stream", cross: false, stream: true },
  { id: "cross-nonstream" as const, label: "OpenAI -> Anthropic, non-stream", cross: true, stream: false },
  { id: "cross-stream" as const, label: "OpenAI -> Anthropic, stream", cross: true, stream: true },
].filter((s) => !opts.scenarios || opts.scenarios.split(",").includes(s.id));
type Layout = "shared" | "split";
const CELLS = ([
  { conns: 1, layout: "shared" },
  { conns: 1, layout: "split" },
  { conns: CONNS_HIGH, layout: "split" },
] as { conns: number; layout: Layout }[]).filter((c) => !opts.conns || opts.conns.split(",").map(Number).includes(c.conns));
const TARGETS: TargetName[] = ["direct", "floor", "gateway"];
const DIRECT_MEANS: Record<TargetName, Record<"same" | "cross", string>> = {
  direct: {
    same: "client -> upstream /v1/chat/completions, OpenAI body (model gpt-4o-mini)",
    cross: "client -> upstream /v1/messages, the same request as an Anthropic body (model claude-haiku-4-5)",
  },
  floor: {
    same: "client -> floor proxy -> upstream /v1/chat/completions, OpenAI body (model gpt)",
    cross: "client -> floor proxy -> upstream /v1/messages, Anthropic body relayed untranslated (a floor cannot translate)",
  },
  gateway: {
    same: "client -> gateway /v1/chat/completions (model gpt) -> upstream /v1/chat/completions, bytes pass through",
    cross: "client -> gateway /v1/chat/completions (model claude) -> IR -> upstream /v1/messages, translated both ways",
  },
};

const SYSTEM = "You are a concise assistant for an internal engineering help desk. Answer in two or three sentences and name the first thing to check.";
const USER = "Our build cache keeps missing after we bumped the compiler version last week. Nothing else changed in the repository. What is the most likely cause and what should we check first?";
function openaiBody(model: string, stream: boolean) {
  return JSON.stringify({
    model,
    messages: [
      { role: "system", content: SYSTEM },
      { role: "user", content: USER },
    ],
    temperature: 0.2,
    max_tokens: 256,
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  });
}
function anthropicBody(model: string, stream: boolean) {
  return JSON.stringify({ model, system: SYSTEM, messages: [{ role: "user", content: USER }], temperature: 0.2, max_tokens: 256, ...(stream ? { stream: true } : {}) });
}
interface RequestSpec {
  readonly address: string;
  readonly path: string;
  readonly body: string;
  readonly headers: Record<string, string>;
  /** The wire protocol of the answer the client gets. */
  readonly answers: "openai" | "anthropic";
}
const OPENAI_HEADERS = { "content-type": "application/json", authorization: "Bearer bench-key" };
const ANTHROPIC_HEADERS = { "content-type": "application/json", "x-api-key": "bench-key", "anthropic-version": "2023-06-01" };
function requestFor(target: TargetName, scenario: Scenario, addresses: Record<TargetName, string>): RequestSpec {
  const address = addresses[target];
  const { stream } = scenario;
  if (!scenario.cross || target === "gateway") {
    const model = target === "direct" ? "gpt-4o-mini" : scenario.cross ? "claude" : "gpt";
    return { address, path: "/v1/chat/completions", body: openaiBody(model, stream), headers: OPENAI_HEADERS, answers: "openai" };
  }
  return { address, path: "/v1/messages", body: anthropicBody(target === "direct" ? "claude-haiku-4-5" : "claude", stream), headers: ANTHROPIC_HEADERS, answers: "anthropic" };
}
const rawRequest = (spec: RequestSpec) =>
  `POST ${spec.path} HTTP/1.1\r\nhost: ${spec.address}\r\n${Object.entries(spec.headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("")}content-length: ${Buffer.byteLength(spec.body)}\r\n\r\n${spec.body}`;

/** The answer's text, read the way each vendor's SDK would; throws when the shape is wrong. */
function answerText(spec: RequestSpec, stream: boolean, body: string): string {
  if (!stream) {
    const json = JSON.parse(body);
    if (spec.answers === "openai") {
      if (json.object !== "chat.completion" || typeof json.usage?.total_tokens !== "number") throw new Error("not a chat.completion with usage");
      return json.choices[0].message.content;
    }
    if (json.type !== "message" || typeof json.usage?.output_tokens !== "number") throw new Error("not a message with usage");
    return json.content.map((block: { text?: string }) => block.text ?? "").join("");
  }
  const events = body
    .split("\n\n")
    .filter((e) => e.trim() !== "")
    .map((e) => ({ event: /^event: (.*)$/m.exec(e)?.[1], data: /^data: (.*)$/m.exec(e)?.[1] ?? "" }));
  if (spec.answers === "openai") {
    if (events.at(-1)?.data !== "[DONE]") throw new Error("stream does not end with data: [DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.data));
    if (!chunks.every((c) => c.object === "chat.completion.chunk")) throw new Error("an event is not a chat.completion.chunk");
    if (!chunks.some((c) => c.choices?.[0]?.finish_reason)) throw new Error("no finish_reason in the stream");
    return chunks.map((c) => c.choices?.[0]?.delta?.content ?? "").join("");
  }
  if (events.at(-1)?.event !== "message_stop") throw new Error("stream does not end with message_stop");
  return events
    .map((e) => JSON.parse(e.data))
    .filter((d) => d.type === "content_block_delta")
    .map((d) => d.delta.text ?? "")
    .join("");
}

// --- wrk -------------------------------------------------------------------------------------------------
function wrkScript(spec: RequestSpec, file: string) {
  const headers = Object.entries(spec.headers)
    .map(([k, v]) => `wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`)
    .join("\n");
  writeFileSync(
    file,
    `wrk.method = "POST"
${headers}
wrk.body = [==[${spec.body}]==]
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('\\nWRKJSON {"duration_us":%d,"requests":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"mean_us":%f,"max_us":%d}\\n',
    summary.duration, summary.requests, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.mean, latency.max))
end
`,
  );
}
interface WrkResult {
  duration_us: number;
  requests: number;
  bytes: number;
  connect: number;
  read: number;
  write: number;
  status: number;
  timeout: number;
  p50_us: number;
  p90_us: number;
  p99_us: number;
  mean_us: number;
  max_us: number;
}
function startWrk(script: string, url: string, conns: number, seconds: number) {
  const proc = Bun.spawn(["taskset", "-c", LOAD_CORE, "wrk", "-t1", `-c${conns}`, `-d${seconds}s`, "--timeout", "10s", "-s", script, url], { stdout: "pipe", stderr: "pipe" });
  const result = (async (): Promise<WrkResult> => {
    const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    const line = out.split("\n").find((l) => l.startsWith("WRKJSON "));
    if (!line) throw new Error(`wrk gave no result:\n${out}\n${err}`);
    return JSON.parse(line.slice(8));
  })();
  /** wrk's own CPU time, once it has exited. */
  const cpuSeconds = () => Number(proc.resourceUsage()?.cpuTime.total ?? 0) / 1e6;
  return { result, cpuSeconds };
}

/** Sequential raw requests on one keep-alive connection, until `until()` says stop. */
async function probe(spec: RequestSpec, until: () => boolean): Promise<{ ttfe: number[]; total: number[]; bad: number }> {
  const client = await RawClient.open(spec.address);
  const raw = rawRequest(spec);
  const ttfe: number[] = [];
  const total: number[] = [];
  let bad = 0;
  try {
    while (!until()) {
      const answer = await client.request(raw);
      if (answer.status !== 200) bad++;
      ttfe.push(answer.ttfeMs);
      total.push(answer.totalMs);
    }
  } finally {
    client.close();
  }
  return { ttfe, total, bad };
}

// --- results ---------------------------------------------------------------------------------------------
interface RunResult {
  scenario: ScenarioId;
  target: TargetName;
  conns: number;
  layout: Layout;
  skipped?: string;
  requests?: number;
  rps?: number | null;
  p50_ms?: number | null;
  p90_ms?: number | null;
  p99_ms?: number | null;
  errors?: number;
  added_p50_ms?: number | null;
  ttfe_p50_ms?: number | null;
  ttfe_p99_ms?: number | null;
  ttfe_samples?: number;
  added_ttfe_ms?: number | null;
  proxy_cpu_us_per_req?: number | null;
  upstream_cpu_us_per_req?: number | null;
  core0_busy?: number | null;
  core1_busy?: number | null;
  /** Cores' worth of CPU used during the run by processes outside the benchmark (a shared machine). */
  foreign_cpu?: number | null;
  attempts?: number;
  /** The proxy's VmRSS and VmHWM (peak so far) right after the measured run. */
  proxy_rss_mb?: number | null;
  proxy_hwm_mb?: number | null;
}

async function main() {
  const started = Date.now();
  if (cpus().length < 2) throw new Error("needs at least 2 cores (load + upstream on one, the proxy under test on the other)");
  if (!existsSync(opts.gateway!)) throw new Error(`${opts.gateway} is missing: run \`npm run build\` first`);
  const tmp = mkdtempSync(join(tmpdir(), "gw-dataplane-"));
  log(`work dir ${tmp}`);
  pin(process.pid, LOAD_CORE); // this script's raw client is a load generator too

  // Build what the run needs; the gateway binary is copied so a rebuild during the run cannot swap it.
  const gatewayBin = join(tmp, "gateway");
  copyFileSync(opts.gateway!, gatewayBin);
  const gatewayBuilt = statSync(opts.gateway!).mtime.toISOString();
  run([BUN, "build", "--compile", "--minify", "--bytecode", join(ROOT, "bench/floor-proxy.ts"), "--outfile", join(tmp, "floor-proxy")], "building the floor proxy");
  run([BUN, "build", "--compile", "--minify", join(ROOT, "bench/upstream.ts"), "--outfile", join(tmp, "upstream")], "building the upstream");
  log("built floor-proxy and upstream");

  const upstream = spawnChild("upstream", ["taskset", "-c", LOAD_CORE, join(tmp, "upstream"), "0"], { UPSTREAM_CHUNKING: opts.chunking! }, tmp, /^upstream started$/);
  const upstreamAddress = (await upstream.ready).data as string;
  const floor = spawnChild("floor", ["taskset", "-c", PROXY_CORE, join(tmp, "floor-proxy")], { FLOOR_UPSTREAM: `http://${upstreamAddress}`, FLOOR_PORT: "0" }, tmp, /^floor proxy started$/);
  const gatewayConfig = (dir: string) => {
    const file = join(dir, "gateway.yaml");
    writeFileSync(
      file,
      `listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
store: {module: sqlite, settings: {path: ${dir}/gw.db}}
providers:
  up-openai: {protocol: openai, base_url: "http://${upstreamAddress}/v1", api_key: bench-key}
  up-anthropic: {protocol: anthropic, base_url: "http://${upstreamAddress}", api_key: bench-key}
models:
  gpt: {provider: up-openai, model: gpt-4o-mini}
  claude: {provider: up-anthropic, model: claude-haiku-4-5}
`,
    );
    return file;
  };
  const gateway = spawnChild("gateway", ["taskset", "-c", PROXY_CORE, gatewayBin, "--config", gatewayConfig(tmp)], {}, tmp, /^gateway started$/);
  const addresses: Record<TargetName, string> = { direct: upstreamAddress, floor: (await floor.ready).data, gateway: (await gateway.ready).data };
  const pids: Record<TargetName, number> = { direct: upstream.proc.pid, floor: floor.proc.pid, gateway: gateway.proc.pid };
  log(`upstream ${addresses.direct}, floor ${addresses.floor}, gateway ${addresses.gateway}`);

  await Bun.sleep(1000);
  const idleRss = { floor: statusKb(pids.floor, "VmRSS"), gateway: statusKb(pids.gateway, "VmRSS") };

  // One checked request per scenario and target: status 200, the vendor's shape, the upstream's text.
  const served: Record<string, string | undefined> = {};
  for (const scenario of SCENARIOS) {
    let expected: string | undefined;
    for (const target of TARGETS) {
      const spec = requestFor(target, scenario, addresses);
      const key = `${scenario.id}/${target}`;
      try {
        const response = await fetch(`http://${spec.address}${spec.path}`, { method: "POST", headers: spec.headers, body: spec.body });
        const text = await response.text();
        if (response.status !== 200) throw new Error(`status ${response.status}: ${text.slice(0, 300)}`);
        const got = answerText(spec, scenario.stream, text);
        expected ??= got;
        if (got !== expected) throw new Error(`answer text differs from direct's: ${JSON.stringify(got.slice(0, 120))}`);
        served[key] = undefined;
      } catch (error) {
        served[key] = (error as Error).message;
        log(`check ${key}: ${(error as Error).message}`);
      }
    }
  }

  const totalRuns = SCENARIOS.length * CELLS.length * TARGETS.length;
  const probeSecs = SCENARIOS.filter((s) => s.stream).length * CELLS.filter((c) => c.conns === 1).length * TARGETS.length * PROBE_SECS;
  log(`${totalRuns} runs of ${WARMUP}+${DURATION} s and ${probeSecs} s of first-event probes: about ${Math.round((totalRuns * (WARMUP + DURATION + 0.6) + probeSecs) / 60 * 10) / 10} min`);

  /** One run: wrk warm-up, then the measured wrk run (and, for streams, the first-event probe). */
  async function measure(scenario: Scenario, cell: { conns: number; layout: Layout }, target: TargetName): Promise<RunResult> {
    const result: RunResult = { scenario: scenario.id, target, conns: cell.conns, layout: cell.layout };
    const spec = requestFor(target, scenario, addresses);
    const script = join(tmp, `${scenario.id}-${target}.lua`);
    wrkScript(spec, script);
    const url = `http://${spec.address}${spec.path}`;
    const proxyPid = target === "direct" ? undefined : pids[target];
    if (proxyPid && cell.layout === "shared") pin(proxyPid, LOAD_CORE);
    try {
      await startWrk(script, url, cell.conns, WARMUP).result;
      const ours0 = ourTicks();
      const cores0 = coreTimes();
      const proxy0 = proxyPid ? cpuTicks(proxyPid) : 0;
      const upstream0 = cpuTicks(pids.direct);
      const wrk = startWrk(script, url, cell.conns, DURATION);
      // Under load the raw client is one more connection, measuring time to first event meanwhile.
      let wrkDone = false;
      void wrk.result.finally(() => (wrkDone = true)).catch(() => {});
      const underLoad = scenario.stream && cell.conns > 1 ? probe(spec, () => wrkDone) : undefined;
      const w = await wrk.result;
      const probed = underLoad ? await underLoad : undefined;
      const proxy1 = proxyPid ? cpuTicks(proxyPid) : 0;
      const upstream1 = cpuTicks(pids.direct);
      const cores1 = coreTimes();
      const ours1 = ourTicks();
      const answered = w.requests + (probed?.ttfe.length ?? 0);
      const elapsed = (cores1[LOAD_CORE]!.total - cores0[LOAD_CORE]!.total) / HZ;
      const busy = (c: string) => (cores1[c]!.busy - cores0[c]!.busy) / HZ;
      const foreign = busy(LOAD_CORE) + busy(PROXY_CORE) - (ours1 - ours0) / HZ - wrk.cpuSeconds();
      Object.assign(result, {
        requests: w.requests,
        rps: round(w.requests / (w.duration_us / 1e6), 0),
        p50_ms: round(w.p50_us / 1000, 3),
        p90_ms: round(w.p90_us / 1000, 3),
        p99_ms: round(w.p99_us / 1000, 3),
        errors: w.connect + w.read + w.write + w.status + w.timeout + (probed?.bad ?? 0),
        proxy_cpu_us_per_req: proxyPid ? round((((proxy1 - proxy0) / HZ) * 1e6) / answered, 1) : null,
        upstream_cpu_us_per_req: round((((upstream1 - upstream0) / HZ) * 1e6) / answered, 1),
        core0_busy: busyShare(cores0, cores1, LOAD_CORE),
        core1_busy: busyShare(cores0, cores1, PROXY_CORE),
        foreign_cpu: round(Math.max(0, foreign) / Math.max(elapsed, 0.001), 2),
        proxy_rss_mb: proxyPid ? mb(statusKb(proxyPid, "VmRSS")) : null,
        proxy_hwm_mb: proxyPid ? mb(statusKb(proxyPid, "VmHWM")) : null,
      });
      let firstEvents = probed;
      if (scenario.stream && cell.conns === 1) {
        const until = performance.now() + PROBE_SECS * 1000;
        firstEvents = await probe(spec, () => performance.now() > until);
        result.errors! += firstEvents.bad;
      }
      if (firstEvents) {
        Object.assign(result, {
          ttfe_p50_ms: round(percentile(firstEvents.ttfe, 50), 3),
          ttfe_p99_ms: round(percentile(firstEvents.ttfe, 99), 3),
          ttfe_samples: firstEvents.ttfe.length,
        });
      }
    } catch (error) {
      result.skipped = `run failed: ${(error as Error).message}`;
    } finally {
      if (proxyPid && cell.layout === "shared") pin(proxyPid, PROXY_CORE);
    }
    return result;
  }
  /** CPU ticks of every process of ours that runs during a measured run, wrk aside. */
  const ourTicks = () => cpuTicks(process.pid) + cpuTicks(pids.direct) + cpuTicks(pids.floor) + cpuTicks(pids.gateway);

  const results: RunResult[] = [];
  let retries = 0;
  let rotation = 0;
  // Cell by cell, so the runs that targets compare across scenarios (cross- vs same-protocol CPU at 64
  // connections) are measured minutes apart at most: this shared host drifts more than that over a run.
  for (const cell of CELLS) {
    for (const scenario of SCENARIOS) {
      const order = TARGETS.map((_, i) => TARGETS[(i + rotation) % TARGETS.length]!); // who goes first rotates
      rotation++;
      for (const target of order) {
        const problem = served[`${scenario.id}/${target}`];
        if (problem) {
          results.push({ scenario: scenario.id, target, conns: cell.conns, layout: cell.layout, skipped: `not served: ${problem}` });
          continue;
        }
        // A run during which something outside the benchmark used a core is measured again (twice at most).
        let result!: RunResult;
        for (let attempt = 1; ; attempt++) {
          await quiet();
          result = await measure(scenario, cell, target);
          result.attempts = attempt;
          if (result.skipped || (result.foreign_cpu ?? 0) <= FOREIGN_LIMIT || attempt === 3 || retries >= RETRY_BUDGET) break;
          retries++;
          log(`  something else used ${result.foreign_cpu} of a core during that run; measuring it again`);
        }
        results.push(result);
        log(
          `${scenario.id} c=${cell.conns} ${cell.layout} ${target}: ` +
            (result.skipped ??
              `${result.rps} rps, p50 ${result.p50_ms} ms, p99 ${result.p99_ms} ms, cpu ${result.proxy_cpu_us_per_req} us/req${result.ttfe_p50_ms != null ? `, ttfe ${result.ttfe_p50_ms} ms` : ""}, errors ${result.errors}, cores ${result.core0_busy}/${result.core1_busy}, foreign ${result.foreign_cpu}, rss ${result.proxy_rss_mb} MB (peak ${result.proxy_hwm_mb})`),
        );
      }
    }
  }
  // Added latency and added time to first event: against direct in the same scenario and cell.
  for (const r of results) {
    const direct = results.find((d) => d.target === "direct" && d.scenario === r.scenario && d.conns === r.conns && d.layout === r.layout);
    if (r.target === "direct" || !direct || r.skipped || direct.skipped) continue;
    r.added_p50_ms = round(r.p50_ms! - direct.p50_ms!, 3);
    if (r.ttfe_p50_ms != null && direct.ttfe_p50_ms != null) r.added_ttfe_ms = round(r.ttfe_p50_ms - direct.ttfe_p50_ms, 3);
  }

  const peak = { floor: statusKb(pids.floor, "VmHWM"), gateway: statusKb(pids.gateway, "VmHWM") };
  const afterRss = { floor: statusKb(pids.floor, "VmRSS"), gateway: statusKb(pids.gateway, "VmRSS") };
  const upstreamServed = (await (await fetch(`http://${upstreamAddress}/stats`)).json()) as { served: number };
  const gatewayWarnings = gateway.lines.filter((l) => /"level":"(warn|error)"/.test(l)).length;
  await stopChild(floor);
  await stopChild(gateway);

  // Cold start, spawn to the first proxied chat request answered (proxy on its core, the upstream warm).
  const coldRuns = 5;
  const cold: Record<"floor" | "gateway", number[]> = { floor: [], gateway: [] };
  const coldReady: Record<"floor" | "gateway", number[]> = { floor: [], gateway: [] };
  const coldSpec = (address: string) => requestFor("gateway", SCENARIOS[0]!, { direct: "", floor: address, gateway: address });
  for (let i = 0; i < coldRuns; i++) {
    for (const which of ["floor", "gateway"] as const) {
      const dir = mkdtempSync(join(tmp, `cold-${which}-`));
      const began = performance.now();
      const child =
        which === "floor"
          ? spawnChild("floor (cold)", ["taskset", "-c", PROXY_CORE, join(tmp, "floor-proxy")], { FLOOR_UPSTREAM: `http://${upstreamAddress}`, FLOOR_PORT: "0" }, dir, /^floor proxy started$/)
          : spawnChild("gateway (cold)", ["taskset", "-c", PROXY_CORE, gatewayBin, "--config", gatewayConfig(dir)], {}, dir, /^gateway started$/);
      try {
        const spec = coldSpec((await child.ready).data);
        coldReady[which].push(performance.now() - began);
        const response = await fetch(`http://${spec.address}${spec.path}`, { method: "POST", headers: spec.headers, body: spec.body });
        await response.arrayBuffer();
        if (response.status === 200) cold[which].push(performance.now() - began);
      } catch (error) {
        log(`cold start ${which}: ${(error as Error).message}`);
      } finally {
        await stopChild(child);
      }
    }
  }
  await stopAll();

  // The gateway's own cold-start figure: bench/startup.ts (spawn to first served /healthz), unpinned.
  let startup: any = null;
  if (STARTUP_RUNS > 0) {
    log(`bench/startup.ts ${STARTUP_RUNS}`);
    try {
      const self = Bun.spawnSync(["taskset", "-c", "0-1", BUN, join(ROOT, "bench/startup.ts"), String(STARTUP_RUNS)], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
      startup = JSON.parse(self.stdout.toString());
    } catch (error) {
      log(`bench/startup.ts failed: ${(error as Error).message}`);
    }
  }

  report({ results, served, idleRss, peak, afterRss, cold, coldReady, startup, upstreamServed: upstreamServed.served, gatewayWarnings, gatewayBuilt, started });
  if (!opts["keep-tmp"]) rmSync(tmp, { recursive: true, force: true });
}

// --- the report ------------------------------------------------------------------------------------------
interface Target {
  name: string;
  gateway: number | null;
  floor: number | null;
  ratio: number | null;
  limit: string;
  pass: boolean;
  /** false: shown for information (the split one-connection layout), not counted. */
  judged: boolean;
  note?: string;
}
function report(data: {
  results: RunResult[];
  served: Record<string, string | undefined>;
  idleRss: Record<"floor" | "gateway", number>;
  peak: Record<"floor" | "gateway", number>;
  afterRss: Record<"floor" | "gateway", number>;
  cold: Record<"floor" | "gateway", number[]>;
  coldReady: Record<"floor" | "gateway", number[]>;
  startup: any;
  upstreamServed: number;
  gatewayWarnings: number;
  gatewayBuilt: string;
  started: number;
}) {
  const { results } = data;
  const find = (scenario: ScenarioId, target: TargetName, conns: number, layout: Layout) =>
    results.find((r) => r.scenario === scenario && r.target === target && r.conns === conns && r.layout === layout);
  const fmt = (value: number | null | undefined, digits = 2) => (value == null ? "—" : value.toFixed(digits));
  const num = (value: number | null | undefined) => (value == null ? "—" : Math.abs(value) >= 100 ? value.toFixed(0) : Math.abs(value) >= 10 ? value.toFixed(1) : value.toFixed(3));
  const cleanly = (r?: RunResult) => !!r && !r.skipped && (r.errors ?? 0) <= Math.max(1, (r.requests ?? 0) * 0.001);

  const lines: string[] = [];
  lines.push(`## Data-plane benchmark (${new Date().toISOString().slice(0, 10)})`, "");
  lines.push(
    `Each run: ${WARMUP} s warm-up then ${DURATION} s of wrk (1 thread) load; upstream stream chunking \`${opts.chunking}\`. ` +
      "Layout `shared` = proxy on the load core (core 0, with wrk and the upstream); `split` = proxy alone on core 1. " +
      "CPU/req is the proxy's utime+stime over the measured run divided by requests served. Time to first event (TTFE) " +
      `comes from a raw HTTP client: ${PROBE_SECS} s of sequential requests after the one-connection run, or one extra connection during the 64-connection run.`,
    "",
  );
  lines.push("| scenario | conns | layout | target | req/s | p50 ms | p99 ms | added p50 ms | TTFE p50 ms | added TTFE ms | proxy CPU µs/req | errors |");
  lines.push("|---|---|---|---|---|---|---|---|---|---|---|---|");
  for (const scenario of SCENARIOS)
    for (const cell of CELLS)
      for (const target of TARGETS) {
        const r = find(scenario.id, target, cell.conns, cell.layout);
        if (!r) continue;
        if (r.skipped) {
          lines.push(`| ${scenario.label} | ${cell.conns} | ${cell.layout} | ${target} | ${r.skipped.slice(0, 80).replace(/\|/g, "/")} | | | | | | | |`);
          continue;
        }
        lines.push(
          `| ${scenario.label} | ${cell.conns} | ${cell.layout} | ${target}${(r.foreign_cpu ?? 0) > FOREIGN_LIMIT ? ` (noisy: other processes used ${r.foreign_cpu} core)` : ""} | ${fmt(r.rps, 0)} | ${fmt(r.p50_ms, 3)} | ${fmt(r.p99_ms, 3)} | ${fmt(r.added_p50_ms, 3)} | ${fmt(r.ttfe_p50_ms, 3)} | ${fmt(r.added_ttfe_ms, 3)} | ${fmt(r.proxy_cpu_us_per_req, 0)} | ${r.errors} |`,
        );
      }
  lines.push("", "What each target means per scenario:", "");
  for (const target of TARGETS) lines.push(`- **${target}**: same-protocol cells: ${DIRECT_MEANS[target].same}; cross-protocol cells: ${DIRECT_MEANS[target].cross}.`);

  // Targets, as ratios to the floor proxy in the same run.
  const targets: Target[] = [];
  const ratioTarget = (name: string, gw: RunResult | undefined, fl: RunResult | undefined, pick: (r: RunResult) => number | null | undefined, limit: number, atLeast: boolean, judged = true) => {
    const g = gw && cleanly(gw) ? (pick(gw) ?? null) : null;
    const f = fl && cleanly(fl) ? (pick(fl) ?? null) : null;
    const ratio = g != null && f != null && f > 0 ? round(g / f, 2) : null;
    const pass = ratio != null && (atLeast ? ratio >= limit : ratio <= limit);
    const note = gw?.skipped ?? (gw && !cleanly(gw) ? `${gw.errors} errors` : f != null && f <= 0 ? "floor figure not positive" : undefined);
    targets.push({ name, gateway: g, floor: f, ratio, limit: `${atLeast ? ">=" : "<="} ${limit}x floor`, pass, judged, note });
  };
  const same = (id: ScenarioId, t: TargetName, conns: number, layout: Layout = "split") => find(id, t, conns, layout);
  ratioTarget("same-protocol non-stream, 64 conns: throughput (req/s)", same("same-nonstream", "gateway", 64), same("same-nonstream", "floor", 64), (r) => r.rps, 0.8, true);
  ratioTarget("same-protocol non-stream, 64 conns: CPU per request (µs)", same("same-nonstream", "gateway", 64), same("same-nonstream", "floor", 64), (r) => r.proxy_cpu_us_per_req, 1.5, false);
  // One connection: judged with the proxy on the load core, where its own cost is not hidden behind a
  // cross-core wakeup; the split layout is shown for information.
  for (const layout of ["shared", "split"] as const)
    for (const scenario of SCENARIOS)
      ratioTarget(`${scenario.label}, 1 conn (${layout}): added p50 (ms)`, same(scenario.id, "gateway", 1, layout), same(scenario.id, "floor", 1, layout), (r) => r.added_p50_ms, 2, false, layout === "shared");
  for (const layout of ["shared", "split"] as const)
    for (const scenario of SCENARIOS.filter((s) => s.stream))
      ratioTarget(`${scenario.label}, 1 conn (${layout}): added time to first event (ms)`, same(scenario.id, "gateway", 1, layout), same(scenario.id, "floor", 1, layout), (r) => r.added_ttfe_ms, 2, false, layout === "shared");
  for (const stream of [false, true]) {
    const cross = same(stream ? "cross-stream" : "cross-nonstream", "gateway", 64);
    const samep = same(stream ? "same-stream" : "same-nonstream", "gateway", 64);
    const g = cross && cleanly(cross) ? (cross.proxy_cpu_us_per_req ?? null) : null;
    const s = samep && cleanly(samep) ? (samep.proxy_cpu_us_per_req ?? null) : null;
    const ratio = g != null && s != null && s > 0 ? round(g / s, 2) : null;
    targets.push({
      name: `gateway CPU per request, cross-protocol vs same-protocol, ${stream ? "stream" : "non-stream"}, 64 conns (µs; "floor" column = same-protocol)`,
      gateway: g,
      floor: s,
      ratio,
      limit: "<= 1.5x same-protocol",
      pass: ratio != null && ratio <= 1.5,
      judged: true,
      note: cross?.skipped ?? samep?.skipped,
    });
  }
  const startupP50 = data.startup?.cold_start_ms?.p50 ?? null;
  const absolute = (name: string, value: number | null, limit: number, unit: string, note?: string) =>
    targets.push({ name, gateway: value, floor: null, ratio: null, limit: `< ${limit} ${unit}`, pass: value != null && value < limit, judged: true, note });
  absolute("cold start, spawn to first served request (bench/startup.ts p50, ms)", startupP50, 50, "ms");
  absolute("idle RSS (MB)", mb(data.idleRss.gateway), 60, "MB");
  absolute(`peak RSS over the run, incl. ${CONNS_HIGH} conns (VmHWM, MB)`, mb(data.peak.gateway), 150, "MB");

  lines.push("", "| target | gateway | floor | ratio | limit | result |", "|---|---|---|---|---|---|");
  for (const t of targets)
    lines.push(`| ${t.name} | ${num(t.gateway)} | ${num(t.floor)} | ${fmt(t.ratio, 2)} | ${t.limit} | ${t.judged ? "" : "(info) "}${t.pass ? "PASS" : "FAIL"}${t.note ? ` (${t.note.slice(0, 80).replace(/\|/g, "/")})` : ""} |`);

  const coldP50 = (values: number[]) => round(percentile(values, 50), 1);
  lines.push("", "| memory and start | floor proxy | gateway |", "|---|---|---|");
  lines.push(`| idle RSS (VmRSS, 1 s after start), MB | ${mb(data.idleRss.floor)} | ${mb(data.idleRss.gateway)} |`);
  lines.push(`| peak RSS (VmHWM after all cells), MB | ${mb(data.peak.floor)} | ${mb(data.peak.gateway)} |`);
  lines.push(`| RSS after the run (VmRSS), MB | ${mb(data.afterRss.floor)} | ${mb(data.afterRss.gateway)} |`);
  lines.push(`| spawn to its "started" log line, p50 of ${data.coldReady.gateway.length}, ms | ${fmt(coldP50(data.coldReady.floor), 1)} | ${fmt(coldP50(data.coldReady.gateway), 1)} |`);
  lines.push(`| spawn to first proxied chat request answered (same-protocol non-stream), p50 of ${data.cold.gateway.length}, ms | ${fmt(coldP50(data.cold.floor), 1)} | ${fmt(coldP50(data.cold.gateway), 1)} |`);
  lines.push(`| bench/startup.ts: spawn to first /healthz, p50 / p90 of ${data.startup?.runs ?? 0}, ms | | ${fmt(startupP50, 1)} / ${fmt(data.startup?.cold_start_ms?.p90, 1)} |`);
  const judged = targets.filter((t) => t.judged);
  const passed = judged.filter((t) => t.pass).length;
  lines.push("", `**${passed} of ${judged.length} targets pass** (FAIL: ${judged.filter((t) => !t.pass).map((t) => t.name).join("; ") || "none"}).`);
  lines.push("", `Upstream answered ${data.upstreamServed} requests; the gateway logged ${data.gatewayWarnings} warn/error lines (the open-relay and open-admin warnings of this config are 2).`);
  lines.push("", "(info) rows: the one-connection split layout, shown but not counted.");
  console.log(lines.join("\n"));

  const json = {
    date: new Date().toISOString(),
    machine: { cores: cpus().length, cpu: cpus()[0]?.model, kernel: run(["uname", "-r"], "uname").trim(), bun: Bun.version, wrk: "4.1.0" },
    command: `bun bench/dataplane.ts ${Bun.argv.slice(2).join(" ")}`.trim(),
    git: run(["git", "rev-parse", "--short", "HEAD"], "git").trim() + (run(["git", "status", "--porcelain", "src"], "git").trim() ? " (src has uncommitted changes)" : ""),
    gateway_binary_built: data.gatewayBuilt,
    settings: { duration_s: DURATION, warmup_s: WARMUP, probe_s: PROBE_SECS, upstream_chunking: opts.chunking, load_core: LOAD_CORE, proxy_core: PROXY_CORE, wrk_threads: 1 },
    wall_s: round((Date.now() - data.started) / 1000, 0),
    results,
    targets,
    memory_mb: { idle: { floor: mb(data.idleRss.floor), gateway: mb(data.idleRss.gateway) }, peak: { floor: mb(data.peak.floor), gateway: mb(data.peak.gateway) }, after: { floor: mb(data.afterRss.floor), gateway: mb(data.afterRss.gateway) } },
    cold_start_ms: { started_line: { floor: data.coldReady.floor.map((v) => round(v, 1)), gateway: data.coldReady.gateway.map((v) => round(v, 1)) }, first_proxied_request: { floor: data.cold.floor.map((v) => round(v, 1)), gateway: data.cold.gateway.map((v) => round(v, 1)) }, startup_ts: data.startup },
    upstream_served: data.upstreamServed,
  };
  console.log("\n```json\n" + JSON.stringify(json, null, 2) + "\n```");
  if (opts["json-out"]) writeFileSync(opts["json-out"], JSON.stringify(json, null, 2));
}

try {
  await main();
} finally {
  await stopAll();
}
