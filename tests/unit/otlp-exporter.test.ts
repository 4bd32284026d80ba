// The `otlp` exporter against a local imitation of an OTLP/HTTP collector: batches by delay and by size,
// both encodings decodable, retryable answers retried within timeout_ms, an absent or hanging collector
// never reaching span()'s caller, a full queue dropping and counting, flush sending everything.
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import { createLogger } from "../../src/telemetry/logger.ts";
import { otlpExporter, OtlpSettings, type OtlpExporter } from "../../src/telemetry/otlp/exporter.ts";
import type { SpanData } from "../../src/telemetry/records.ts";
import { Secret } from "../../src/config/secret.ts";
import { spansIn } from "../support/otlp-decode.ts";
import { finishedTrace, tracedAttempt, traceLane } from "../support/records.ts";
import { until } from "../support/until.ts";

interface Received {
  contentType: string;
  headers: Headers;
  spans: { spanId: string; name: string }[];
}

/** Answers each request with the next scripted status (then 200); "hang" never answers. */
let script: (number | "hang")[] = [];
let received: Received[] = [];
const hanging: (() => void)[] = [];
const collector = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    const body = new Uint8Array(await request.arrayBuffer());
    const contentType = request.headers.get("content-type") ?? "";
    received.push({ contentType, headers: request.headers, spans: spansIn(body, contentType) });
    const next = script.shift() ?? 200;
    if (next === "hang") return new Promise<Response>((resolve) => hanging.push(() => resolve(new Response(""))));
    return new Response("", { status: next });
  },
});
const ENDPOINT = `http://127.0.0.1:${collector.port}/v1/traces`;
afterAll(() => collector.stop(true));

let exporters: OtlpExporter[] = [];
afterEach(async () => {
  for (const release of hanging.splice(0)) release();
  await Promise.all(exporters.map((e) => e.close()));
  exporters = [];
  script = [];
  received = [];
});

function make(settings: Partial<OtlpSettings> = {}) {
  const lines: string[] = [];
  let dropped = 0;
  const exporter = otlpExporter(
    "tracing",
    { endpoint: ENDPOINT, ...settings },
    { logger: createLogger({ level: "debug", write: (line) => lines.push(line) }), version: "9.9.9", dropped: { inc: (by = 1) => (dropped += by) } },
  );
  exporters.push(exporter);
  return { exporter, lines, dropped: () => dropped };
}

let seq = 0;
function spanData(name = "chat m"): SpanData {
  const now = BigInt(Date.now()) * 1_000_000n;
  return {
    traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
    spanId: (++seq).toString(16).padStart(16, "0"),
    parentSpanId: null,
    traceState: null,
    name,
    kind: "server",
    startTimeUnixNano: now,
    endTimeUnixNano: now + 1_000_000n,
    attributes: { "gen_ai.request.model": "m", "gen_ai.usage.input_tokens": 12 },
    status: { code: "unset" },
  };
}

const sent = () => received.reduce((n, r) => n + r.spans.length, 0);

describe("settings", () => {
  test("the schema takes the design's settings and refuses unknown ones, a non-http endpoint, an unknown protocol", () => {
    expect(Value.Check(OtlpSettings, { endpoint: "http://c:4318/v1/traces" })).toBe(true);
    expect(Value.Check(OtlpSettings, { endpoint: "https://c/v1/traces", protocol: "http/json", headers: { authorization: "Bearer x" }, timeout_ms: 10000, schedule_delay_ms: 5000, max_queue_size: 2048, max_export_batch_size: 512, service_name: "gw", capture_content: true })).toBe(true);
    expect(Value.Check(OtlpSettings, { endpoint: "http://c", verbose: true })).toBe(false);
    expect(Value.Check(OtlpSettings, { endpoint: "ftp://c" })).toBe(false);
    expect(Value.Check(OtlpSettings, { endpoint: "http://c", protocol: "grpc" })).toBe(false);
    expect(Value.Check(OtlpSettings, { endpoint: "http://c", max_queue_size: 0 })).toBe(false);
    expect(Value.Check(OtlpSettings, {})).toBe(false);
  });

  test("the instance: module otlp, stream traces, capture_content exposed (default false)", () => {
    expect(make().exporter).toMatchObject({ name: "tracing", module: "otlp", streams: ["traces"], captureContent: false });
    expect(make({ capture_content: true }).exporter.captureContent).toBe(true);
  });
});

describe("batching", () => {
  test("spans below a batch go out once schedule_delay_ms passes", async () => {
    const { exporter } = make({ schedule_delay_ms: 150 });
    for (let i = 0; i < 3; i++) exporter.span(spanData());
    await Bun.sleep(50);
    expect(received).toHaveLength(0);
    await until(() => received.length === 1, 2_000);
    expect(received[0]!.spans).toHaveLength(3);
  });

  test("max_export_batch_size waiting spans go out at once; the rest wait for the delay or a flush", async () => {
    const { exporter } = make({ schedule_delay_ms: 60_000, max_export_batch_size: 10 });
    for (let i = 0; i < 25; i++) exporter.span(spanData());
    await until(() => received.length === 2, 2_000);
    expect(received.map((r) => r.spans.length)).toEqual([10, 10]);
    await Bun.sleep(100);
    expect(received).toHaveLength(2);
    await exporter.flush();
    expect(received.map((r) => r.spans.length)).toEqual([10, 10, 5]);
  });

  test("flush sends everything pending, in batches, in order", async () => {
    const { exporter, dropped } = make({ schedule_delay_ms: 60_000, max_export_batch_size: 512 });
    const ids: string[] = [];
    for (let i = 0; i < 1200; i++) {
      const s = spanData();
      ids.push(s.spanId);
      exporter.span(s);
    }
    await exporter.flush();
    expect(received.map((r) => r.spans.length)).toEqual([512, 512, 176]);
    expect(received.flatMap((r) => r.spans.map((s) => s.spanId))).toEqual(ids);
    expect(dropped()).toBe(0);
  });
});

describe("encodings", () => {
  for (const [protocol, contentType] of [
    ["http/protobuf", "application/x-protobuf"],
    ["http/json", "application/json"],
  ] as const) {
    test(`${protocol}: ${contentType}, configured headers (secrets revealed), a body that decodes to the spans`, async () => {
      const { exporter } = make({ protocol, headers: { "x-tenant": "t1", authorization: new Secret("Bearer s3cret", "literal"), "Content-Type": "text/plain" } });
      const a = spanData("chat a");
      const b = spanData("chat b");
      exporter.span(a);
      exporter.span(b);
      await exporter.flush();
      expect(received).toHaveLength(1);
      expect(received[0]!.contentType).toBe(contentType);
      expect(received[0]!.headers.get("x-tenant")).toBe("t1");
      expect(received[0]!.headers.get("authorization")).toBe("Bearer s3cret");
      expect(received[0]!.spans).toEqual([
        { spanId: a.spanId, name: "chat a" },
        { spanId: b.spanId, name: "chat b" },
      ]);
    });
  }

  test("protocol defaults to http/protobuf", async () => {
    const { exporter } = make();
    exporter.span(spanData());
    await exporter.flush();
    expect(received[0]!.contentType).toBe("application/x-protobuf");
  });
});

describe("failures", () => {
  test("503 then 200: retried, delivered once, nothing dropped or logged", async () => {
    script = [503];
    const { exporter, dropped, lines } = make();
    exporter.span(spanData());
    await exporter.flush();
    expect(received.map((r) => r.spans.length)).toEqual([1, 1]);
    expect(dropped()).toBe(0);
    expect(lines).toEqual([]);
  });

  test("429/502/503/504 keep being retried only within timeout_ms; then the batch is dropped, counted, warned once", async () => {
    script = [429, 502, 504, 503, 503, 503, 503, 503, 503, 503];
    const { exporter, dropped, lines } = make({ timeout_ms: 700 });
    exporter.span(spanData());
    exporter.span(spanData());
    const started = performance.now();
    await exporter.flush();
    expect(performance.now() - started).toBeLessThan(1_000);
    // flush returns at timeout_ms; an attempt still in flight then is counted when its abort lands.
    await until(() => dropped() === 2, 2_000);
    expect(received.length).toBeGreaterThanOrEqual(2);
    expect(received.length).toBeLessThan(6);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: "warn", exporter: "tracing", spans_dropped: 2 });
  });

  test("another status is not retried: dropped, counted; a second failure within the minute is counted, not logged", async () => {
    script = [400, 500];
    const { exporter, dropped, lines } = make({ headers: { authorization: "Bearer top-secret-value" } });
    exporter.span(spanData());
    await exporter.flush();
    exporter.span(spanData());
    await exporter.flush();
    expect(received).toHaveLength(2);
    expect(dropped()).toBe(2);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ status: 400, spans_dropped: 1 });
    expect(lines.join("")).not.toContain("top-secret-value");
  });

  test("an endpoint that refuses connections: span() never throws, flush ends, spans counted, one warning without header values", async () => {
    const closedServer = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
    const port = closedServer.port;
    closedServer.stop(true);
    const lines: string[] = [];
    let dropped = 0;
    const exporter = otlpExporter(
      "down",
      { endpoint: `http://127.0.0.1:${port}/v1/traces?api_key=query-secret`, headers: { "x-api-key": "header-secret" }, max_export_batch_size: 4 },
      { logger: createLogger({ write: (line) => lines.push(line) }), version: "1", dropped: { inc: (by = 1) => (dropped += by) } },
    );
    exporters.push(exporter);
    for (let i = 0; i < 10; i++) expect(() => exporter.span(spanData())).not.toThrow();
    await exporter.flush();
    expect(dropped).toBe(10);
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain("header-secret");
    expect(lines[0]).not.toContain("query-secret");
  });

  test("a hanging collector: flush gives up after timeout_ms and the batch is counted", async () => {
    script = ["hang"];
    const { exporter, dropped } = make({ timeout_ms: 300 });
    exporter.span(spanData());
    const started = performance.now();
    await exporter.flush();
    expect(performance.now() - started).toBeLessThan(800);
    await until(() => dropped() === 1, 2_000);
  });
});

describe("the queue", () => {
  test("full: new spans are dropped and counted, the queued ones still delivered", async () => {
    script = ["hang"];
    const { exporter, dropped } = make({ max_queue_size: 5, max_export_batch_size: 5, timeout_ms: 2_000 });
    for (let i = 0; i < 8; i++) exporter.span(spanData());
    expect(dropped()).toBe(3);
    await until(() => received.length === 1); // the 5 queued spans are in flight and the collector hangs
    for (let i = 0; i < 7; i++) exporter.span(spanData());
    expect(dropped()).toBe(5); // 5 queued again behind the hanging batch
    for (const release of hanging.splice(0)) release();
    await exporter.flush();
    expect(received.map((r) => r.spans.length)).toEqual([5, 5]);
  });

  // What span() costs is measured by bench/telemetry.ts; here, that a hanging collector never holds it.
  test("span() returns at once while the collector hangs: queued up to max_queue_size, the rest dropped and counted", async () => {
    script = ["hang", "hang", "hang"];
    const spans = Array.from({ length: 10_000 }, () => spanData());
    const queuing = make({ timeout_ms: 300, max_queue_size: 10_000 });
    const shedding = make({ timeout_ms: 300 });
    for (const exporter of [queuing.exporter, shedding.exporter]) for (const s of spans) expect(exporter.span(s)).toBeUndefined();
    expect(queuing.dropped()).toBe(0);
    expect(shedding.dropped()).toBe(10_000 - 2048);
  });

  test("trace(): a request's spans written straight into the batch go out whole, split across batches at max_export_batch_size", async () => {
    const { exporter, dropped } = make({ schedule_delay_ms: 60_000, max_export_batch_size: 2 });
    const gpt = traceLane("gpt", "openai", "http://127.0.0.1:9/v1", "gpt-4o-mini");
    const claude = traceLane("claude", "anthropic", "http://127.0.0.1:9", "claude-haiku-4-5");
    exporter.trace!(finishedTrace({ model: "chat" }, [tracedAttempt(gpt, 1, { status: 503, error: "503" }), tracedAttempt(claude, 2)]));
    await exporter.flush();
    expect(received.map((r) => r.spans.length)).toEqual([2, 1]);
    expect(received.flatMap((r) => r.spans.map((s) => s.name))).toEqual(["chat chat", "chat gpt-4o-mini", "chat claude-haiku-4-5"]);
    expect(dropped()).toBe(0);
  });

  test("trace(): a request whose spans do not all fit is dropped whole, every span counted", async () => {
    const { exporter, dropped } = make({ schedule_delay_ms: 60_000, max_queue_size: 4, max_export_batch_size: 4 });
    const gpt = traceLane("gpt", "openai", "http://127.0.0.1:9/v1", "gpt-4o-mini");
    const twoSpans = () => finishedTrace({}, [tracedAttempt(gpt, 1)]);
    const threeSpans = finishedTrace({}, [tracedAttempt(gpt, 1), tracedAttempt(gpt, 2)]);
    exporter.trace!(twoSpans());
    exporter.trace!(threeSpans); // 2 + 3 > 4: none of its spans is queued
    exporter.trace!(twoSpans());
    expect(dropped()).toBe(3);
    await exporter.flush();
    expect(sent()).toBe(4);
  });

  test("close flushes, stops the timer, and later spans are dropped and counted", async () => {
    const { exporter, dropped } = make({ schedule_delay_ms: 60_000 });
    exporter.span(spanData());
    await exporter.close();
    expect(sent()).toBe(1);
    exporter.span(spanData());
    expect(dropped()).toBe(1);
  });
});
