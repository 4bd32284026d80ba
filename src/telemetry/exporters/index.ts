// The built-in exporter modules by name, and starting a config's `export:` entries (design/telemetry.md).
// Loaded only when a config has exporters (TelemetryHub.build).
import type { ExportEntry } from "../../config/snapshot.ts";
import type { ExporterDeps } from "../hub.ts";
import type { Counter, MetricsRegistry } from "../metrics.ts";
import { otlpExporter, type OtlpSettings } from "../otlp/exporter.ts";
import { prometheusExporter, type PrometheusSettings } from "./prometheus.ts";
import { fileExporter, type FileSettings } from "./file.ts";
import { webhookExporter, type WebhookSettings } from "./webhook.ts";
import { Secret } from "../../config/secret.ts";
import type { Exporter } from "../records.ts";

type Start = (entry: ExportEntry, deps: ExporterDeps) => Exporter | Promise<Exporter>;

const spanDrops = new WeakMap<MetricsRegistry, Counter>();
/** Declared with the first otlp exporter (a reload reuses it): spans lost per exporter. */
function spansDropped(registry: MetricsRegistry): Counter {
  let counter = spanDrops.get(registry);
  if (!counter) spanDrops.set(registry, (counter = registry.counter("gateway_trace_spans_dropped_total", "Spans an otlp exporter lost: its queue full, an export failed or timed out.", ["exporter"])));
  return counter;
}

/** Header values that were secret references, revealed for the exporter that sends them (and only there). */
function revealedHeaders(settings: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const headers = settings.headers as Record<string, unknown> | undefined;
  if (!headers) return { ...settings };
  return { ...settings, headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, v instanceof Secret ? v.reveal() : v])) };
}

const MODULES: Readonly<Record<string, Start>> = {
  file: (entry, deps) => fileExporter(entry.name, entry.settings as FileSettings, { logger: deps.logger }),
  webhook: (entry, deps) => webhookExporter(entry.name, revealedHeaders(entry.settings) as WebhookSettings, { logger: deps.logger, dropped: deps.webhookDropped }),
  prometheus: (entry, deps) => prometheusExporter(entry.name, entry.settings as PrometheusSettings, { registry: deps.registry, logger: deps.logger }),
  otlp: (entry, deps) => otlpExporter(entry.name, entry.settings as OtlpSettings, { logger: deps.logger, version: deps.version, dropped: spansDropped(deps.registry).at(entry.name) }),
};

/** Every entry started, or an Error naming every one that could not be (those started are closed). */
export async function startExporters(entries: readonly ExportEntry[], deps: ExporterDeps): Promise<Exporter[]> {
  const started: Exporter[] = [];
  const problems: string[] = [];
  for (const entry of entries) {
    const start = MODULES[entry.module];
    if (!start) {
      problems.push(`export.${entry.name}.module: ${JSON.stringify(entry.module)} is not an exporter this build runs`);
      continue;
    }
    try {
      started.push(await start(entry, deps));
    } catch (error) {
      problems.push(`export.${entry.name}: ${(error as Error).message}`);
    }
  }
  if (problems.length > 0) {
    await Promise.all(started.map((e) => e.close().catch(() => undefined)));
    throw new Error(problems.join("; "));
  }
  return started;
}
