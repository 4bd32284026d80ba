// The telemetry path's own cost, in one process: what a request pays for its trail and what the exporters
// do with it, with no HTTP around it, so a few tenths of a microsecond show (under wrk they drown in the
// host's noise; bench/compare.sh with `exp:` gives the whole gateway's figure). Per mode, CPU time (user
// + system, this process) per request over N requests, exporters' background work included:
//   trail   a trail made and ended per request, kept by the ring of recent requests (no record built), no exporter
//   record  the same with its record built (as the text access line alone has it)
//   spans   + its SERVER and CLIENT spans built as objects (a traces exporter that drops them)
//   encode  + instead its spans written as protobuf, as the otlp exporter does (never sent)
//   otlp    + the otlp exporter (http/protobuf to a collector stand-in in a child process)
//   file    the trail and the file exporter (JSON Lines to a file in a temporary directory)
//   both    file and otlp
// and the protobuf encoder alone (microseconds per span, a batch of 512 GenAI spans encoded again and again).
//
//   npx bun bench/telemetry.ts [N=200000] [MODES=trail,record,spans,encode,otlp,file,both]
//
// Run it on an idle machine; taskset -c 1 keeps it on one core. Talks only to 127.0.0.1.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../src/telemetry/logger.ts";
import { TelemetryHub } from "../src/telemetry/hub.ts";
import { RequestTrail } from "../src/telemetry/trail.ts";
import { fileExporter } from "../src/telemetry/exporters/file.ts";
import { otlpExporter } from "../src/telemetry/otlp/exporter.ts";
import { encodeSpan, ProtobufSpanOut } from "../src/telemetry/otlp/encode-protobuf.ts";
import { writeSpans } from "../src/telemetry/spans.ts";
import { ProtoWriter } from "../src/telemetry/otlp/protobuf-writer.ts";
import type { Exporter, SpanData } from "../src/telemetry/records.ts";
import type { Lane } from "../src/routing/lane.ts";
import type { IngressPrincipal } from "../src/auth/ingress-chain.ts";

const N = Number(Bun.argv[2] ?? 200_000);
const dir = mkdtempSync(join(tmpdir(), "gw-telemetry-bench-"));
const logger = createLogger({ level: "warn", write: (line) => process.stderr.write(`${line}\n`) });

// A collector that takes every export and answers at once, in its own process (its work is not ours).
const sink = Bun.spawn(["bun", "-e", `const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: async (r) => (await r.arrayBuffer(), new Response("{}", { headers: { "content-type": "application/json" } })) }); console.log(s.port);`], { stdout: "pipe" });
const first = await sink.stdout.getReader().read();
const sinkPort = Number(new TextDecoder().decode(first.value).trim());

const lane = { name: "gpt", provider: { name: "up-openai", protocol: "openai", baseUrl: "http://127.0.0.1:9/v1" }, upstreamModel: "gpt-4o-mini", contextWindow: null, maxConcurrent: null, maxRequests: null } as unknown as Lane;
const principal = { module: "keys", id: "key_0123456789abcdef", group: "bench-dev" } as unknown as IngressPrincipal;
const headers = new Headers({ "content-type": "application/json" });
const body = { model: "gpt", max_tokens: 256, temperature: 0.2 };
const usage = { inputNoCache: 52, inputCacheRead: 0, inputCacheWrite: 0, output: 38, outputReasoning: 0 };

function exportersFor(mode: string): Exporter[] {
  const out: Exporter[] = [];
  // The otlp exporter's cost taken apart: spans built and dropped; built and encoded, never sent.
  if (mode === "spans") out.push({ name: "spans", module: "bench", streams: ["traces"], span: () => {}, flush: async () => {}, close: async () => {} });
  if (mode === "encode") {
    const writer = new ProtoWriter(64 * 1024);
    const spanOut = new ProtobufSpanOut(() => (writer.length > 512 * 1024 && writer.reset(), writer));
    out.push({ name: "encode", module: "bench", streams: ["traces"], trace: (t) => writeSpans(t, spanOut), flush: async () => {}, close: async () => {} });
  }
  if (mode === "file" || mode === "both") out.push(fileExporter("requests", { path: join(dir, `${mode}.jsonl`) }, { logger }));
  if (mode === "otlp" || mode === "both") out.push(otlpExporter("traces", { endpoint: `http://127.0.0.1:${sinkPort}/v1/traces`, protocol: "http/protobuf" }, { logger, version: "bench", dropped: { inc: () => {} } }));
  return out;
}

/** What the pipeline does with a non-stream request's trail. */
function request(hub: TelemetryHub, id: number): void {
  const trail = new RequestTrail(hub, `bench-${id}`, "openai", headers);
  trail.principal = principal;
  trail.model = "gpt";
  trail.requested(body);
  trail.pool = "gpt";
  trail.attempt(lane);
  trail.attemptEnded(200, undefined);
  trail.usage(usage, 42);
  trail.answered(200, "ok");
}

/** n requests; a turn of the event loop every 64. */
async function requests(hub: TelemetryHub, n: number, from: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    request(hub, from + i);
    if (i % 64 === 63) await new Promise((resolve) => setImmediate(resolve));
  }
}

const newHub = () => new TelemetryHub(logger, undefined, { logger, registry: undefined as never, version: "bench", webhookDropped: { inc: () => {} } });

async function mode(name: string): Promise<number> {
  const hub = newHub();
  await hub.swap(exportersFor(name));
  // `record`: the record built with nowhere to go, as with the text access line alone; `trail`: the ring alone.
  if (name === "record") hub.readsUsage = true;
  await requests(hub, 50_000, 0); // warm-up: the JIT's tiers
  await hub.flush();
  const before = process.cpuUsage();
  await requests(hub, N, 50_000);
  await hub.flush();
  const used = process.cpuUsage(before);
  await hub.close();
  return (used.user + used.system) / N;
}

function encoderMicros(): { perSpan: number; bytesPerSpan: number } {
  const spans: SpanData[] = [];
  const hub = newHub();
  void hub.swap([{ name: "capture", module: "capture", streams: ["traces"], span: (s) => void spans.push(s), flush: async () => {}, close: async () => {} }]);
  for (let i = 0; spans.length < 512; i++) request(hub, i);
  const writer = new ProtoWriter(512 * 1024);
  const encodeAll = () => {
    writer.reset();
    for (const s of spans) encodeSpan(writer, s);
    return writer.length;
  };
  let bytes = 0;
  for (let i = 0; i < 1000; i++) bytes += encodeAll();
  const rounds = 3000;
  const before = process.cpuUsage();
  for (let i = 0; i < rounds; i++) bytes += encodeAll();
  const used = process.cpuUsage(before);
  return { perSpan: (used.user + used.system) / rounds / spans.length, bytesPerSpan: bytes / (rounds + 1000) / spans.length };
}

try {
  const results: Record<string, number> = {};
  for (const name of (Bun.argv[3] ?? "trail,record,spans,encode,otlp,file,both").split(",")) results[name] = await mode(name);
  for (const [name, micros] of Object.entries(results)) console.log(`${name.padEnd(6)} ${micros.toFixed(2)} µs per request`);
  const encoder = encoderMicros();
  console.log(`encoder ${encoder.perSpan.toFixed(2)} µs per span (${Math.round(encoder.bytesPerSpan)} bytes)`);
} finally {
  sink.kill();
  rmSync(dir, { recursive: true, force: true });
}
