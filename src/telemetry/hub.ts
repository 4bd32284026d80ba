// Where finished requests go (design/telemetry.md): the running exporter instances that take logs or
// traces, the human-readable access line on stderr (`--log-format text`), and always the admin plane's
// ring of recent records and its live feed (design/console.md). Exporters are swapped whole by a plugin
// reload (the old instances are flushed and closed).
import type { ExportEntry } from "../config/snapshot.ts";
import type { Logger } from "./logger.ts";
import type { MetricsRegistry } from "./metrics.ts";
import type { Exporter, FinishedRequest, RequestRecord, SpanData } from "./records.ts";
import { spanObjects } from "./spans.ts";
import { RecentRequests } from "./recent-requests.ts";
import { LiveFeed } from "./live-feed.ts";

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
  /** Whether requests make spans (a traces exporter runs). */
  tracing = false;
  /**
   * Whether an unmetered request's usage is read for its record: a logs or traces exporter or the access
   * line takes it. The ring alone does not ask for it (the open door then reads none, docs/performance.md).
   */
  readsUsage = false;
  /** GET /requests: every request's record, whether or not an exporter takes it. */
  readonly recent = new RecentRequests();
  /** GET /events: records and breaker changes as they happen. */
  readonly live = new LiveFeed();

  constructor(
    private readonly logger: Logger,
    /** `--log-format text`: one access line per request on stderr. */
    private readonly accessLine: ((record: RequestRecord) => void) | undefined,
    private readonly deps: ExporterDeps,
  ) {
    this.readsUsage = accessLine !== undefined;
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
    this.readsUsage = this.tracing || this.#logs.length > 0 || this.accessLine !== undefined;
    await Promise.all(previous.filter((e) => !next.includes(e)).map((e) => e.close().catch((error: unknown) => this.logger.warn("exporter close failed", { exporter: e.name, error }))));
  }

  /**
   * A request ended: kept in the ring; its record to the live feed and every logs exporter, its spans
   * (when sampled) to every traces exporter. With none of those, no record is built now.
   */
  finished(request: FinishedRequest): void {
    this.recent.push(request);
    if (!this.readsUsage && this.live.readers === 0) return;
    const record = request.record();
    this.live.request(record);
    for (const exporter of this.#logs) exporter.log!(record);
    const trace = this.#traces.length > 0 ? request.trace() : undefined;
    if (trace !== undefined) {
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
