// A small metrics registry and its Prometheus text exposition (GET /metrics). A series is found by its
// label values through nested maps, one level per label (`at("openai", "chat", "ok")`): no string is
// built and nothing is allocated on an increment once the series exists.

type Labels = Readonly<Record<string, string>>;

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
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

export class Counter {
  readonly #table: SeriesTable<CounterSeries>;

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
  ) {
    if (labelNames.length > 3) throw new Error(`${name}: at most three labels`);
    this.#table = new SeriesTable(labelNames, () => new CounterSeries());
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
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`];
    for (const { labels, series } of this.#table.all) lines.push(`${this.name}${rendered(this.labelNames, labels)} ${series.value}`);
    return lines.join("\n");
  }
}

/** Label names joined with their values as the exposition writes them, `{a="x",b="y"}`. */
function rendered(labelNames: readonly string[], labels: Labels): string {
  const inner = labelNames.map((n) => `${n}="${escapeLabel(labels[n] ?? "")}"`).join(",");
  return inner ? `{${inner}}` : "";
}

/**
 * A gauge read at scrape time from live state (lane breakers), so nothing is kept twice. `labelNames`
 * null: each sample brings its own (a key's labels are echoed onto its series).
 */
export class CollectedGauge {
  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[] | null,
    private readonly collect: () => Iterable<{ labels: Labels; value: number }>,
  ) {}

  expose(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} gauge`];
    for (const { labels, value } of this.collect()) lines.push(`${this.name}${rendered(this.labelNames ?? Object.keys(labels), labels)} ${value}`);
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

export class Histogram {
  readonly #table: SeriesTable<HistogramSeries>;

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    readonly buckets: readonly number[] = DURATION_BUCKETS,
  ) {
    this.#table = new SeriesTable(labelNames, () => new HistogramSeries(buckets));
  }

  at(a?: string, b?: string, c?: string): HistogramSeries {
    return this.#table.at(a, b, c);
  }

  observe(labels: Labels, value: number): void {
    this.#table.of(labels).observe(value);
  }

  expose(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    const withLe = [...this.labelNames, "le"];
    for (const { labels, series } of this.#table.all) {
      let cumulative = 0;
      this.buckets.forEach((bound, i) => {
        cumulative += series.counts[i]!;
        lines.push(`${this.name}_bucket${rendered(withLe, { ...labels, le: String(bound) })} ${cumulative}`);
      });
      lines.push(`${this.name}_bucket${rendered(withLe, { ...labels, le: "+Inf" })} ${series.count}`);
      lines.push(`${this.name}_sum${rendered(this.labelNames, labels)} ${series.sum}`);
      lines.push(`${this.name}_count${rendered(this.labelNames, labels)} ${series.count}`);
    }
    return lines.join("\n");
  }
}

export class MetricsRegistry {
  readonly #metrics: { expose(): string }[] = [];

  counter(name: string, help: string, labelNames: readonly string[]): Counter {
    return this.add(new Counter(name, help, labelNames));
  }

  histogram(name: string, help: string, labelNames: readonly string[]): Histogram {
    return this.add(new Histogram(name, help, labelNames));
  }

  gauge(name: string, help: string, labelNames: readonly string[] | null, collect: () => Iterable<{ labels: Labels; value: number }>): CollectedGauge {
    return this.add(new CollectedGauge(name, help, labelNames, collect));
  }

  expose(): string {
    return `${this.#metrics.map((m) => m.expose()).join("\n")}\n`;
  }

  private add<M extends { expose(): string }>(metric: M): M {
    this.#metrics.push(metric);
    return metric;
  }
}

/** The data plane's series (gateway-spec.md, "Metrics"). One registry per process (tests build their own). */
export function dataPlaneMetrics(registry = new MetricsRegistry()) {
  return {
    registry,
    requests: registry.counter("gateway_requests_total", "Model requests by ingress protocol, pool and outcome (ok, client_error, exhausted, error).", ["ingress_protocol", "pool", "outcome"]),
    duration: registry.histogram("gateway_request_duration_seconds", "Time from a model request's arrival to its answer's first byte (whole answer when not streamed).", ["ingress_protocol", "pool"]),
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
  };
}
export type DataPlaneMetrics = ReturnType<typeof dataPlaneMetrics>;
