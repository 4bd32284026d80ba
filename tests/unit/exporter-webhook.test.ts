import { afterEach, describe, expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import { webhookExporter, WebhookSettings } from "../../src/telemetry/exporters/webhook.ts";
import { createLogger } from "../../src/telemetry/logger.ts";
import { Counter } from "../../src/telemetry/metrics.ts";
import type { Exporter, RequestRecord } from "../../src/telemetry/records.ts";
import { requestRecord } from "../support/records.ts";
import { until } from "../support/until.ts";

interface Seen {
  readonly at: number;
  readonly headers: Headers;
  readonly records: RequestRecord[];
}

/** A receiver answering each POST as `answer` says (a status, or "hang" for never). */
function receiver(answer: (n: number) => number | "hang" = () => 200) {
  const seen: Seen[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const records = (await req.json()) as RequestRecord[];
      seen.push({ at: performance.now(), headers: req.headers, records });
      const a = answer(seen.length);
      if (a === "hang") return new Promise<Response>(() => {});
      return new Response(a === 200 ? "ok" : "no", { status: a });
    },
  });
  servers.push(server);
  return { seen, url: `http://127.0.0.1:${server.port}/ingest?token=url-secret` };
}

const servers: ReturnType<typeof Bun.serve>[] = [];
const exporters: Exporter[] = [];
afterEach(async () => {
  // Receivers first: a hanging one would otherwise hold each close for its full timeout_ms.
  for (const s of servers.splice(0)) s.stop(true);
  await Promise.all(exporters.splice(0).map((e) => e.close()));
});

function setup(settings: WebhookSettings, fetchFn?: typeof fetch) {
  const warnings: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const logger = createLogger({
    level: "warn",
    write: (line) => {
      raw.push(line);
      warnings.push(JSON.parse(line));
    },
  });
  const dropped = new Counter("gateway_webhook_logs_dropped_total", "request-log records the webhook exporters shed", []).at();
  const exporter = webhookExporter("hook", settings, { logger, dropped, ...(fetchFn ? { fetch: fetchFn } : {}) });
  exporters.push(exporter);
  return { exporter, warnings, raw, dropped };
}

const ids = (seen: Seen[]) => seen.map((s) => s.records.map((r) => r.request_id));

describe("webhook exporter", () => {
  test("settings: an http(s) url required, bounds on the numbers, nothing else", () => {
    expect(Value.Check(WebhookSettings, { url: "https://logs.example.com/in", headers: { authorization: "Bearer x" }, batch_max: 10_000, max_retries: 0 })).toBe(true);
    expect(Value.Check(WebhookSettings, {})).toBe(false);
    expect(Value.Check(WebhookSettings, { url: "ftp://logs.example.com" })).toBe(false);
    expect(Value.Check(WebhookSettings, { url: "https://x", batch_max: 0 })).toBe(false);
    expect(Value.Check(WebhookSettings, { url: "https://x", batch_max: 10_001 })).toBe(false);
    expect(Value.Check(WebhookSettings, { url: "https://x", flush_interval_ms: 0 })).toBe(false);
    expect(Value.Check(WebhookSettings, { url: "https://x", max_in_flight: 0 })).toBe(false);
    expect(Value.Check(WebhookSettings, { url: "https://x", timeout_ms: 1.5 })).toBe(false);
    expect(Value.Check(WebhookSettings, { url: "https://x", max_retries: -1 })).toBe(false);
    expect(Value.Check(WebhookSettings, { url: "https://x", headers: { "bad name": "v" } })).toBe(false);
    expect(Value.Check(WebhookSettings, { url: "https://x", headers: { "x-a": "v\r\nx-b: injected" } })).toBe(false);
    expect(Value.Check(WebhookSettings, { url: "https://x", retries: 1 })).toBe(false);
  });

  test("a full batch leaves at once, JSON array with content-type and the configured headers", async () => {
    const { seen, url } = receiver();
    const { exporter } = setup({ url, batch_max: 3, flush_interval_ms: 60_000, headers: { authorization: "Bearer hook-secret", "x-tenant": "t1", "Content-Type": "text/plain" } });
    for (let i = 0; i < 7; i++) exporter.log!(requestRecord(i));
    await until(() => seen.length === 2, 2_000);
    expect(ids(seen)).toEqual([
      ["req-0", "req-1", "req-2"],
      ["req-3", "req-4", "req-5"],
    ]);
    expect(seen[0]!.records[0]).toEqual(requestRecord(0));
    const h = seen[0]!.headers;
    expect(h.get("content-type")).toBe("application/json");
    expect(h.get("authorization")).toBe("Bearer hook-secret");
    expect(h.get("x-tenant")).toBe("t1");
    // The seventh waits for the interval (a minute here) or a flush.
    await Bun.sleep(100);
    expect(seen).toHaveLength(2);
    await exporter.flush();
    expect(ids(seen)[2]).toEqual(["req-6"]);
  });

  test("a partial batch leaves once its oldest record is flush_interval_ms old", async () => {
    const { seen, url } = receiver();
    const { exporter } = setup({ url, batch_max: 100, flush_interval_ms: 150 });
    const start = performance.now();
    exporter.log!(requestRecord(1));
    await Bun.sleep(50);
    exporter.log!(requestRecord(2));
    await until(() => seen.length === 1, 2_000);
    expect(seen[0]!.at - start).toBeGreaterThanOrEqual(140);
    expect(seen[0]!.at - start).toBeLessThan(1_000);
    expect(ids(seen)).toEqual([["req-1", "req-2"]]);
  });

  test("a 500 is retried in the same slot: the receiver sees the batch twice, nothing lost or warned", async () => {
    const { seen, url } = receiver((n) => (n === 1 ? 500 : 200));
    const { exporter, warnings, dropped } = setup({ url, batch_max: 2, flush_interval_ms: 60_000 });
    exporter.log!(requestRecord(1));
    exporter.log!(requestRecord(2));
    await until(() => seen.length === 2, 3_000);
    expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(190); // 250 ms -20%
    expect(ids(seen)).toEqual([
      ["req-1", "req-2"],
      ["req-1", "req-2"],
    ]);
    await exporter.flush();
    expect(seen).toHaveLength(2);
    expect(warnings).toEqual([]);
    expect(dropped.value).toBe(0);
  });

  test("a 400 is not retried; one warning naming neither header values nor the URL's query", async () => {
    const { seen, url } = receiver(() => 400);
    const { exporter, warnings, raw } = setup({ url, batch_max: 1, max_retries: 3, headers: { authorization: "Bearer hook-secret" } });
    exporter.log!(requestRecord(1));
    await exporter.flush();
    await Bun.sleep(400); // a retry would have come by now
    expect(seen).toHaveLength(1);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: "warn", msg: "webhook delivery failed", exporter: "hook", status: 400, records: 1, attempts: 1 });
    expect(raw.join("")).not.toContain("hook-secret");
    expect(raw.join("")).not.toContain("url-secret");
  });

  test("a hanging endpoint is bounded by timeout_ms, retried, then warned", async () => {
    const { seen, url } = receiver(() => "hang");
    const { exporter, warnings } = setup({ url, batch_max: 1, timeout_ms: 150, max_retries: 1 });
    const start = performance.now();
    exporter.log!(requestRecord(1));
    await until(() => warnings.length === 1, 3_000);
    const took = performance.now() - start;
    expect(took).toBeGreaterThanOrEqual(2 * 150 + 190);
    expect(took).toBeLessThan(1_500);
    expect(seen).toHaveLength(2);
    expect(warnings[0]).toMatchObject({ error: "timeout", attempts: 2, records: 1 });
  });

  test("flush waits for a hanging delivery no longer than timeout_ms", async () => {
    const { url } = receiver(() => "hang");
    const { exporter } = setup({ url, batch_max: 5, timeout_ms: 300, max_retries: 3 });
    exporter.log!(requestRecord(1));
    const start = performance.now();
    await exporter.flush();
    const took = performance.now() - start;
    expect(took).toBeGreaterThanOrEqual(280);
    expect(took).toBeLessThan(800);
    // close gives up the retries at once rather than sleeping them out.
    const closing = performance.now();
    await exporter.close();
    expect(performance.now() - closing).toBeLessThan(800);
  });

  test("an endpoint that is down never throws from log(); connection errors are retried, then warned", async () => {
    const closed = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
    const port = closed.port;
    closed.stop(true);
    let calls = 0;
    const counting: typeof fetch = Object.assign((input: string | URL | Request, init?: RequestInit) => {
      calls++;
      return fetch(input, init);
    }, fetch);
    const { exporter, warnings, dropped } = setup({ url: `http://127.0.0.1:${port}/in`, batch_max: 10, max_retries: 1, timeout_ms: 1_000 }, counting);
    for (let i = 0; i < 10; i++) expect(() => exporter.log!(requestRecord(i))).not.toThrow();
    await until(() => warnings.length === 1, 3_000);
    expect(calls).toBe(2);
    expect(warnings[0]).toMatchObject({ msg: "webhook delivery failed", records: 10, attempts: 2 });
    expect(String(warnings[0]!.error)).toMatch(/ECONNREFUSED|ConnectionRefused/);
    expect(dropped.value).toBe(0);
  });

  test("saturated: a batch ready while max_in_flight deliveries run is shed and counted", async () => {
    const { seen, url } = receiver(() => "hang");
    const { exporter, dropped, warnings } = setup({ url, batch_max: 10, max_in_flight: 1, timeout_ms: 5_000, max_retries: 0 });
    for (let i = 0; i < 10; i++) exporter.log!(requestRecord(i));
    await until(() => seen.length === 1, 2_000);
    for (let i = 10; i < 40; i++) {
      exporter.log!(requestRecord(i));
      if (i % 10 === 9) await Bun.sleep(5);
    }
    await until(() => dropped.value === 30, 2_000);
    expect(seen).toHaveLength(1);
    expect(warnings.some((w) => String(w.msg).includes("shed"))).toBe(true);
  });

  test("records waiting for a batch are bounded (batch_max * max_in_flight * 4), shedding into the same counter", () => {
    const { exporter, dropped } = setup({ url: "http://127.0.0.1:9/never", batch_max: 1, max_in_flight: 1, max_retries: 0 });
    for (let i = 0; i < 10; i++) exporter.log!(requestRecord(i));
    expect(dropped.value).toBe(6);
  });

  test("log() takes well under a millisecond while the endpoint hangs (1,000 calls)", async () => {
    const { seen, url } = receiver(() => "hang");
    const { exporter, dropped } = setup({ url, batch_max: 50, max_in_flight: 4, timeout_ms: 5_000, max_retries: 0 });
    const record = requestRecord(1);
    const took: number[] = [];
    for (let round = 0; round < 10; round++) {
      for (let i = 0; i < 100; i++) {
        const t = performance.now();
        exporter.log!(record);
        took.push(performance.now() - t);
      }
      await Bun.sleep(2); // lets batches leave, so later calls meet every slot busy
    }
    await until(() => seen.length === 4, 2_000);
    expect(dropped.value).toBeGreaterThan(0);
    took.sort((a, b) => a - b);
    const total = took.reduce((a, b) => a + b, 0);
    expect(total / took.length).toBeLessThan(0.05);
    expect(took[Math.floor(took.length * 0.99)]!).toBeLessThan(0.25);
  });
});
