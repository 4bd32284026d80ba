// The prometheus exporter on its own (config wiring is elsewhere): its settings schema, the extra
// listener serving the registry's exposition with no credential, 404 elsewhere, and close freeing the port.
import { expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import { prometheusExporter, PrometheusSettingsCfg } from "../../src/telemetry/exporters/prometheus.ts";
import { createLogger } from "../../src/telemetry/logger.ts";
import { EXPOSITION_CONTENT_TYPE, MetricsRegistry } from "../../src/telemetry/metrics.ts";

/** A port the OS had free a moment ago (bound and released). */
function freePort(): number {
  const probe = Bun.serve({ hostname: "127.0.0.1", port: 0, reusePort: false, fetch: () => new Response() });
  const port = probe.port!;
  void probe.stop(true);
  return port;
}

const logger = createLogger({ level: "error", write: () => {} });

test("settings: listen is an optional host:port; nothing else is accepted", () => {
  expect(Value.Check(PrometheusSettingsCfg, {})).toBe(true);
  expect(Value.Check(PrometheusSettingsCfg, { listen: "127.0.0.1:9464" })).toBe(true);
  expect(Value.Check(PrometheusSettingsCfg, { listen: "[::1]:9464" })).toBe(true);
  expect(Value.Check(PrometheusSettingsCfg, { listen: "9464" })).toBe(false);
  expect(Value.Check(PrometheusSettingsCfg, { listen: "127.0.0.1:9464", path: "/m" })).toBe(false);
});

test("without listen: carries metrics, binds nothing, flush and close resolve", async () => {
  const exporter = prometheusExporter("prom", {}, { registry: new MetricsRegistry(), logger });
  expect(exporter).toMatchObject({ name: "prom", module: "prometheus", streams: ["metrics"], address: undefined });
  await exporter.flush();
  await exporter.close();
});

test("with listen: GET /metrics serves the registry's exposition with no credential; other paths 404; close frees the port", async () => {
  const registry = new MetricsRegistry();
  const requests = registry.counter("gateway_requests_total", "Model requests.", ["ingress_protocol", "pool", "outcome"]);
  const port = freePort();
  const exporter = prometheusExporter("prom", { listen: `127.0.0.1:${port}` }, { registry, logger });
  expect(exporter.address).toBe(`127.0.0.1:${port}`);
  const base = `http://127.0.0.1:${port}`;
  try {
    requests.at("openai", "chat", "ok").inc();
    const scraped = await fetch(`${base}/metrics`);
    expect(scraped.status).toBe(200);
    expect(scraped.headers.get("content-type")).toBe(EXPOSITION_CONTENT_TYPE);
    const text = await scraped.text();
    expect(text).toBe(registry.expose());
    expect(text).toContain('gateway_requests_total{ingress_protocol="openai",pool="chat",outcome="ok"} 1');
    // Rendered per scrape: the next one sees the next increment.
    requests.at("openai", "chat", "ok").inc();
    expect(await (await fetch(`${base}/metrics`)).text()).toContain('outcome="ok"} 2');

    for (const path of ["/", "/metrics/", "/stats", "/v1/chat/completions", "/metrics2"]) {
      const other = await fetch(`${base}${path}`);
      expect(other.status).toBe(404);
      expect(((await other.json()) as { error: { code: string } }).error.code).toBe("not_found");
    }
    const posted = await fetch(`${base}/metrics`, { method: "POST", body: "{}" });
    expect(posted.status).toBe(405);
    expect(posted.headers.get("allow")).toBe("GET, HEAD");
  } finally {
    await Promise.all([exporter.close(), exporter.close()]);
  }
  // Refused once closed, and the port can be bound again (no SO_REUSEPORT sharing, nothing left open).
  await expect(fetch(`${base}/metrics`)).rejects.toThrow();
  const again = Bun.serve({ hostname: "127.0.0.1", port, reusePort: false, fetch: () => new Response("again") });
  try {
    expect(await (await fetch(`${base}/metrics`)).text()).toBe("again");
  } finally {
    await again.stop(true);
  }
});

test("a listen address already taken throws, naming the instance's setting", async () => {
  const taken = Bun.serve({ hostname: "127.0.0.1", port: 0, reusePort: false, fetch: () => new Response() });
  try {
    expect(() => prometheusExporter("scrape", { listen: `127.0.0.1:${taken.port}` }, { registry: new MetricsRegistry(), logger })).toThrow(/^export\.scrape\.settings\.listen: cannot listen on 127\.0\.0\.1:\d+/);
  } finally {
    await taken.stop(true);
  }
});
