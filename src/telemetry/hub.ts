// Where finished requests go (design/telemetry.md): the running exporter instances that take logs or
// traces, and the human-readable access line on stderr (`--log-format text`). Swapped whole by a plugin
// reload (the old instances are flushed and closed); read by each request once, at its start, to decide
// whether it keeps a trail at all.
import type { ExportEntry } from "../config/snapshot.ts";
import type { Logger } from "./logger.ts";
import type { MetricsRegistry } from "./metrics.ts";
import type { Exporter, FinishedTrace, RequestRecord, SpanData } from "./records.ts";
import { spanObjects } from "./spans.ts";

/** What building an exporter needs besides its entry. */
export interface ExporterDeps {
  readonly logger: Logger;
  readonly registry: MetricsRegistry;
  /** InfoView `version`: the traces' service.version. */
  readonly version: string;
  /** gateway_webhook_logs_dropped_total (declared from boot with the data plane's metrics). */
  readonly webhookDropped: { inc(by?: number): void };
}

export class TelemetryHub {
  #exporters: readonly Exporter[] = [];
  #logs: readonly Exporter[] = [];
  #traces: readonly Exporter[] = [];
  /** Whether a request keeps a trail: some exporter takes logs or traces, or access lines are written. */
  active = false;
  /** Whether requests make spans (a traces exporter runs). */
  tracing = false;

  constructor(
    private readonly logger: Logger,
    /** `--log-format text`: one access line per request on stderr. */
    private readonly accessLine: ((record: RequestRecord) => void) | undefined,
    private readonly deps: ExporterDeps,
  ) {
    this.active = accessLine !== undefined;
  }

  /**
   * The instances `entries` describe, started (a prometheus listener bound); none is installed yet. The
   * modules are loaded only for a config that has exporters. Throws an Error naming every failure, after
   * closing the ones it started.
   */
  async build(entries: readonly ExportEntry[]): Promise<Exporter[]> {
    if (entries.length === 0) return [];
    const { startExporters } = await import("./exporters/index.ts");
    return startExporters(entries, this.deps);
  }

  get exporters(): readonly Exporter[] {
    return this.#exporters;
  }

  /** Installs a new set; the previous instances are flushed and closed (bounded by each one's timeout). */
  async swap(next: readonly Exporter[]): Promise<void> {
    const previous = this.#exporters;
    this.#exporters = next;
    this.#logs = next.filter((e) => e.log !== undefined && e.streams.includes("logs"));
    this.#traces = next.filter((e) => (e.span !== undefined || e.trace !== undefined) && e.streams.includes("traces"));
    this.tracing = this.#traces.length > 0;
    this.active = this.tracing || this.#logs.length > 0 || this.accessLine !== undefined;
    await Promise.all(previous.filter((e) => !next.includes(e)).map((e) => e.close().catch((error: unknown) => this.logger.warn("exporter close failed", { exporter: e.name, error }))));
  }

  /** A request ended: its record to every logs exporter, its spans (when sampled) to every traces exporter. */
  finished(record: RequestRecord, trace: FinishedTrace | undefined): void {
    for (const exporter of this.#logs) exporter.log!(record);
    if (trace !== undefined && this.#traces.length > 0) {
      // Span objects are made only for an exporter that takes them, once for all of those.
      let spans: SpanData[] | undefined;
      for (const exporter of this.#traces) {
        if (exporter.trace) exporter.trace(trace);
        else for (const span of (spans ??= spanObjects(trace))) exporter.span!(span);
      }
    }
    this.accessLine?.(record);
  }

  /** SIGTERM: everything queued is delivered, each exporter bounded by its own timeout. */
  async flush(): Promise<void> {
    await Promise.all(this.#exporters.map((e) => e.flush().catch((error: unknown) => this.logger.warn("exporter flush failed", { exporter: e.name, error }))));
  }

  async close(): Promise<void> {
    await this.swap([]);
  }
}
