// A small metrics registry and its Prometheus text exposition (GET /metrics). A series is found by its
// label values through nested maps, one level per label (`at("openai", "chat", "ok")`): no string is
// built and nothing is allocated on an increment once the series exists. Every family writes its
// `# HELP` and `# TYPE` lines from boot, series or not, so a scraper sees the whole set before traffic.

type Labels = Readonly<Record<string, string>>;

export type MetricType = "counter" | "gauge" | "histogram";

/** What a family declares: the exposition's `# HELP`/`# TYPE` and the label names its series carry. */
export interface MetricFamily {
  readonly name: string;
  readonly type: MetricType;
  readonly help: string;
  /** A gauge with `extraLabels` writes these first, then each sample's own. */
  readonly labelNames: readonly string[];
}

/** The data plane's `GET /metrics` and the prometheus exporter's listener answer with this. */
export const EXPOSITION_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

/** HELP text escapes only backslash and newline (the text format's rule; a quote stays as is). */
function header(family: MetricFamily): string {
  return `# HELP ${family.name} ${family.help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}\n# TYPE ${family.name} ${family.type}`;
}

/** JS writes `Infinity` and `NaN`, which the text format spells `+Inf`, `-Inf` and `NaN`. */
function sampleValue(value: number): string {
  if (Number.isFinite(value)) return String(value);
  return Number.isNaN(value) ? "NaN" : value > 0 ? "+Inf" : "-Inf";
}

function child(level: Map<string, unknown>, key: string): Map<string, unknown> {
  let next = level.get(key) as Map<string, unknown> | undefined;
  if (!next) level.set(key, (next = new Map()));
  return next;
}

/** Series by label values (at most three labels: every series of ours has that many or fewer). */
class SeriesTable<S> {
  readonly #root = new Map<string, unknown>();
  /** Every series in creation order, for the exposition. */
  readonly all: { labels: Labels; series: S }[] = [];

  constructor(
    private readonly labelNames: readonly string[],
    private readonly create: () => S,
  ) {}

  at(a = "", b = "", c = ""): S {
    const depth = this.labelNames.length;
    let level = this.#root;
    if (depth >= 2) level = child(level, a);
    if (depth >= 3) level = child(level, b);
    const last = depth === 1 ? a : depth === 2 ? b : depth === 3 ? c : "";
    let series = level.get(last) as S | undefined;
    if (series === undefined) {
      series = this.create();
      level.set(last, series);
      const values = [a, b, c];
      this.all.push({ labels: Object.fromEntries(this.labelNames.map((n, i) => [n, values[i]!])), series });
    }
    return series;
  }

  /** The same lookup from a labels object (for callers off the hot path). */
  of(labels: Labels): S {
    const [a, b, c] = this.labelNames.map((n) => labels[n] ?? "");
    return this.at(a, b, c);
  }
}

export class CounterSeries {
  value = 0;
  inc(by = 1): void {
    this.value += by;
  }
}

export class Counter implements MetricFamily {
  readonly type = "counter";
  readonly #table: SeriesTable<CounterSeries>;

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
  ) {
    if (labelNames.length > 3) throw new Error(`${name}: at most three labels`);
    this.#table = new SeriesTable(labelNames, () => new CounterSeries());
    // An unlabelled counter has its one series from the start: it reads 0 rather than being absent.
    if (labelNames.length === 0) this.#table.at();
  }

  /** The series of these label values, in labelNames order (hot paths keep or look it up here). */
  at(a?: string, b?: string, c?: string): CounterSeries {
    return this.#table.at(a, b, c);
  }

  inc(labels: Labels, by = 1): void {
    this.#table.of(labels).inc(by);
  }

  value(labels: Labels): number {
    return this.#table.of(labels).value;
  }

  expose(): string {
    const lines = [header(this)];
    for (const { labels, series } of this.#table.all) lines.push(`${this.name}${rendered(this.labelNames, labels)} ${sampleValue(series.value)}`);
    return lines.join("\n");
  }
}

/** Label names joined with their values as the exposition writes them, `{a="x",b="y"}`. */
function rendered(labelNames: readonly string[], labels: Labels): string {
  const inner = labelNames.map((n) => `${n}="${escapeLabel(labels[n] ?? "")}"`).join(",");
  return inner ? `{${inner}}` : "";
}

export interface GaugeOptions {
  /**
   * Each sample may carry labels beyond `labelNames` (a key's own labels echoed onto its series), written
   * after the declared ones. The collector owns their names being valid and distinct.
   */
  readonly extraLabels?: boolean;
  /** Whether the family is exposed at all, asked at each scrape (key gauges: only while `keys` is in auth.chain). */
  readonly enabled?: () => boolean;
}

/** A gauge read at scrape time from live state (lane breakers, key totals), so nothing is kept twice. */
export class CollectedGauge implements MetricFamily {
  readonly type = "gauge";

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    private readonly collect: () => Iterable<{ labels: Labels; value: number }>,
    private readonly options: GaugeOptions = {},
  ) {}

  get enabled(): boolean {
    return this.options.enabled?.() ?? true;
  }

  expose(): string {
    const lines = [header(this)];
    for (const { labels, value } of this.collect()) {
      const names = this.options.extraLabels ? [...this.labelNames, ...Object.keys(labels).filter((n) => !this.labelNames.includes(n))] : this.labelNames;
      lines.push(`${this.name}${rendered(names, labels)} ${sampleValue(value)}`);
    }
    return lines.join("\n");
  }
}

/** Prometheus' default buckets reach 10 s; model calls run longer, so these go to 5 minutes. */
export const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300] as const;

export class HistogramSeries {
  readonly counts: number[];
  sum = 0;
  count = 0;

  constructor(private readonly buckets: readonly number[]) {
    this.counts = new Array<number>(buckets.length).fill(0);
  }

  /** Counts per bucket, made cumulative at exposition: one increment per observation. */
  observe(value: number): void {
    let i = 0;
    while (i < this.buckets.length && value > this.buckets[i]!) i++;
    if (i < this.buckets.length) this.counts[i]! += 1;
    this.sum += value;
    this.count += 1;
  }
}

export class Histogram implements MetricFamily {
  readonly type = "histogram";
  readonly #table: SeriesTable<HistogramSeries>;

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    readonly buckets: readonly number[] = DURATION_BUCKETS,
  ) {
    if (labelNames.length > 3) throw new Error(`${name}: at most three labels`);
    this.#table = new SeriesTable(labelNames, () => new HistogramSeries(buckets));
  }

  at(a?: string, b?: string, c?: string): HistogramSeries {
    return this.#table.at(a, b, c);
  }

  observe(labels: Labels, value: number): void {
    this.#table.of(labels).observe(value);
  }

  expose(): string {
    const lines = [header(this)];
    const withLe = [...this.labelNames, "le"];
    for (const { labels, series } of this.#table.all) {
      let cumulative = 0;
      this.buckets.forEach((bound, i) => {
        cumulative += series.counts[i]!;
        lines.push(`${this.name}_bucket${rendered(withLe, { ...labels, le: String(bound) })} ${cumulative}`);
      });
      // The +Inf bucket is every observation, those past the last bound included.
      lines.push(`${this.name}_bucket${rendered(withLe, { ...labels, le: "+Inf" })} ${series.count}`);
      lines.push(`${this.name}_sum${rendered(this.labelNames, labels)} ${sampleValue(series.sum)}`);
      lines.push(`${this.name}_count${rendered(this.labelNames, labels)} ${series.count}`);
    }
    return lines.join("\n");
  }
}

type Family = (Counter | Histogram | CollectedGauge) & { expose(): string };

export class MetricsRegistry {
  readonly #metrics: Family[] = [];

  counter(name: string, help: string, labelNames: readonly string[]): Counter {
    return this.add(new Counter(name, help, labelNames));
  }

  histogram(name: string, help: string, labelNames: readonly string[]): Histogram {
    return this.add(new Histogram(name, help, labelNames));
  }

  gauge(name: string, help: string, labelNames: readonly string[], collect: () => Iterable<{ labels: Labels; value: number }>, options?: GaugeOptions): CollectedGauge {
    return this.add(new CollectedGauge(name, help, labelNames, collect, options));
  }

  /** The families exposed now, in declaration order (a disabled gauge is left out, as from the exposition). */
  families(): MetricFamily[] {
    return this.#metrics.filter(exposed).map(({ name, type, help, labelNames }) => ({ name, type, help, labelNames }));
  }

  expose(): string {
    return `${this.#metrics.filter(exposed).map((m) => m.expose()).join("\n")}\n`;
  }

  private add<M extends Family>(metric: M): M {
    // Two families of one name would make an exposition Prometheus refuses whole.
    if (this.#metrics.some((m) => m.name === metric.name)) throw new Error(`metric ${metric.name} is declared twice`);
    this.#metrics.push(metric);
    return metric;
  }
}

const exposed = (m: Family) => !(m instanceof CollectedGauge) || m.enabled;

/**
 * The data plane's series (gateway-spec.md, "Metrics"). One registry per process (tests build their own).
 * Declared elsewhere, on the same registry: gateway_lane_state (app.ts, read from the routing state) and
 * the key gauges (governance/usage.ts, read from the metering totals).
 */
export function dataPlaneMetrics(registry = new MetricsRegistry()) {
  return {
    registry,
    requests: registry.counter("gateway_requests_total", "Model requests by ingress protocol, pool and outcome (ok, client_error, exhausted, error).", ["ingress_protocol", "pool", "outcome"]),
    duration: registry.histogram("gateway_request_duration_seconds", "Time from a model request's arrival to its answer's last byte (a stream: until it ends or breaks).", ["ingress_protocol", "pool"]),
    attempts: registry.counter("gateway_upstream_attempts_total", "Upstream calls, counted per failover hop.", ["pool", "lane"]),
    failures: registry.counter("gateway_upstream_failures_total", "Upstream failures by disposition (transient_upstream, hard_down, context_length).", ["pool", "lane", "disposition"]),
    trips: registry.counter("gateway_breaker_trips_total", "Breaker trips (each trip to Open, hard-down included).", ["pool", "lane"]),
    failovers: registry.counter("gateway_failovers_total", "Requests moved to another lane, by the failure that moved them (timeout, connect, transient_upstream, hard_down).", ["pool", "reason"]),
    translations: registry.counter("gateway_translations_total", "Cross-protocol translation hops.", ["from", "to"]),
    translationWarnings: registry.counter("gateway_translation_warnings_total", "Members dropped or clamped in translation (each also logged).", ["from", "to"]),
    routePolicySelections: registry.counter("gateway_route_policy_selections_total", "Requests whose lane order a gate hook's route verb chose (abstains and on_error fallbacks not counted).", ["pool", "policy"]),
    routePolicyRejections: registry.counter("gateway_route_policy_rejections_total", "Requests a gate hook's reject verb refused (4xx, nothing dispatched).", ["pool", "policy", "status"]),
    hookEventsDropped: registry.counter("gateway_hook_events_dropped_total", "Tap events dropped because the tap had 1,024 queued.", ["hook"]),
    usageEstimates: registry.counter("gateway_usage_estimated_total", "Metered requests charged an estimate because the upstream reported no usage (each also logged).", ["lane"]),
    /** Added to by the webhook exporter: the record count of each batch it sheds (design/telemetry.md). */
    webhookLogsDropped: registry.counter("gateway_webhook_logs_dropped_total", "Request-log records shed by webhook exporters because every delivery slot (max_in_flight) was busy.", []),
    /**
     * Spec family, and nothing adds to it today: a same-protocol non-stream answer is read whole within
     * limits.max_upstream_response_bytes or not relayed at all (a 502 and a transient fault, failover),
     * so no answer is ever served past the cap and billed zero. It reads 0, as the spec's scrapers expect.
     */
    billingTruncated: registry.counter("gateway_billing_truncated_total", "Same-protocol non-stream answers over the upstream answer cap served and billed zero tokens.", []),
  };
}
export type DataPlaneMetrics = ReturnType<typeof dataPlaneMetrics>;
