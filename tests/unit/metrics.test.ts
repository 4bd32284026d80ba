import { expect, test } from "bun:test";
import { MetricsRegistry } from "../../src/telemetry/metrics.ts";

test("counters expose in the Prometheus text format, one series per label set, values escaped", () => {
  const registry = new MetricsRegistry();
  const hops = registry.counter("gateway_translations_total", "Cross-protocol translation hops.", ["from", "to"]);
  hops.inc({ from: "openai", to: "anthropic" });
  hops.inc({ from: "openai", to: "anthropic" });
  hops.inc({ from: "anthropic", to: 'odd"\\name' }, 3);
  expect(hops.value({ from: "openai", to: "anthropic" })).toBe(2);
  expect(registry.expose()).toBe(
    [
      "# HELP gateway_translations_total Cross-protocol translation hops.",
      "# TYPE gateway_translations_total counter",
      'gateway_translations_total{from="openai",to="anthropic"} 2',
      'gateway_translations_total{from="anthropic",to="odd\\"\\\\name"} 3',
      "",
    ].join("\n"),
  );
});

test("every family writes HELP and TYPE before it has a series; an unlabelled counter reads 0 from the start", () => {
  const registry = new MetricsRegistry();
  registry.counter("a_total", "A counter.", ["pool"]);
  registry.counter("b_total", "Unlabelled.", []);
  registry.histogram("c_seconds", "A histogram.", ["pool"]);
  registry.gauge("d", "A gauge.", ["pool"], () => []);
  expect(registry.expose()).toBe(
    ["# HELP a_total A counter.", "# TYPE a_total counter", "# HELP b_total Unlabelled.", "# TYPE b_total counter", "b_total 0", "# HELP c_seconds A histogram.", "# TYPE c_seconds histogram", "# HELP d A gauge.", "# TYPE d gauge", ""].join("\n"),
  );
  expect(registry.families()).toEqual([
    { name: "a_total", type: "counter", help: "A counter.", labelNames: ["pool"] },
    { name: "b_total", type: "counter", help: "Unlabelled.", labelNames: [] },
    { name: "c_seconds", type: "histogram", help: "A histogram.", labelNames: ["pool"] },
    { name: "d", type: "gauge", help: "A gauge.", labelNames: ["pool"] },
  ]);
});

test("HELP escapes backslash and newline only; values spell infinities and NaN as the text format does", () => {
  const registry = new MetricsRegistry();
  registry.gauge("g", 'Two\nlines, a \\ and a "quote".', ["lane"], () => [
    { labels: { lane: "up" }, value: Infinity },
    { labels: { lane: "down" }, value: -Infinity },
    { labels: { lane: "odd" }, value: NaN },
  ]);
  expect(registry.expose().split("\n")).toEqual(['# HELP g Two\\nlines, a \\\\ and a "quote".', "# TYPE g gauge", 'g{lane="up"} +Inf', 'g{lane="down"} -Inf', 'g{lane="odd"} NaN', ""]);
});

test("histograms: cumulative buckets, le=\"+Inf\" counting every observation, then _sum and _count", () => {
  const registry = new MetricsRegistry();
  const h = registry.histogram("h_seconds", "H.", ["pool"]);
  for (const v of [0.001, 0.2, 7, 400]) h.at("p").observe(v);
  const lines = registry.expose().split("\n");
  expect(lines).toContain('h_seconds_bucket{pool="p",le="0.005"} 1');
  expect(lines).toContain('h_seconds_bucket{pool="p",le="0.25"} 2');
  expect(lines).toContain('h_seconds_bucket{pool="p",le="10"} 3');
  expect(lines).toContain('h_seconds_bucket{pool="p",le="300"} 3');
  expect(lines).toContain('h_seconds_bucket{pool="p",le="+Inf"} 4');
  expect(lines).toContain('h_seconds_sum{pool="p"} 407.201');
  expect(lines).toContain('h_seconds_count{pool="p"} 4');
  expect(lines.filter((l) => l.startsWith("h_seconds_bucket")).length).toBe(16);
});

test("a gauge with extraLabels writes its declared labels first, then each sample's; enabled() hides the whole family", () => {
  const registry = new MetricsRegistry();
  let on = false;
  const samples: { labels: Record<string, string>; value: number }[] = [{ labels: { key: "k1", team: "blue" }, value: 12 }, { labels: { key: "k2" }, value: 0 }];
  registry.gauge("gateway_key_spend_cents", "Spend.", ["key"], () => samples, { extraLabels: true, enabled: () => on });
  expect(registry.expose()).toBe("\n");
  expect(registry.families()).toEqual([]);
  on = true;
  expect(registry.expose()).toBe(['# HELP gateway_key_spend_cents Spend.', "# TYPE gateway_key_spend_cents gauge", 'gateway_key_spend_cents{key="k1",team="blue"} 12', 'gateway_key_spend_cents{key="k2"} 0', ""].join("\n"));
  expect(registry.families().map((f) => f.labelNames)).toEqual([["key"]]);
});

test("a family name declared twice is refused", () => {
  const registry = new MetricsRegistry();
  registry.counter("x_total", "X.", []);
  expect(() => registry.gauge("x_total", "X again.", [], () => [])).toThrow(/declared twice/);
});
