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
