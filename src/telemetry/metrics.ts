// A small metrics registry and its Prometheus text exposition (GET /metrics). Counters are keyed by
// their label values joined once per increment; series live in a Map, so an increment is one lookup.

type Labels = Readonly<Record<string, string>>;

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

export class Counter {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  readonly #series = new Map<string, { labels: Labels; value: number }>();

  constructor(name: string, help: string, labelNames: readonly string[]) {
    this.name = name;
    this.help = help;
    this.labelNames = labelNames;
  }

  inc(labels: Labels, by = 1): void {
    const key = this.labelNames.map((n) => labels[n] ?? "").join("\u0000");
    const series = this.#series.get(key);
    if (series) series.value += by;
    else this.#series.set(key, { labels, value: by });
  }

  value(labels: Labels): number {
    return this.#series.get(this.labelNames.map((n) => labels[n] ?? "").join("\u0000"))?.value ?? 0;
  }

  expose(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`];
    for (const { labels, value } of this.#series.values()) lines.push(`${this.name}${rendered(this.labelNames, labels)} ${value}`);
    return lines.join("\n");
  }
}

/** Label names joined with their values as the exposition writes them, `{a="x",b="y"}`. */
function rendered(labelNames: readonly string[], labels: Labels): string {
  const inner = labelNames.map((n) => `${n}="${escapeLabel(labels[n] ?? "")}"`).join(",");
  return inner ? `{${inner}}` : "";
}

/** A gauge read at scrape time from live state (lane breakers), so nothing is kept twice. */
export class CollectedGauge {
  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    private readonly collect: () => Iterable<{ labels: Labels; value: number }>,
  ) {}

  expose(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} gauge`];
    for (const { labels, value } of this.collect()) lines.push(`${this.name}${rendered(this.labelNames, labels)} ${value}`);
    return lines.join("\n");
  }
}

/** Prometheus' default buckets reach 10 s; model calls run longer, so these go to 5 minutes. */
export const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300] as const;

export class Histogram {
  readonly #series = new Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    readonly buckets: readonly number[] = DURATION_BUCKETS,
  ) {}

  observe(labels: Labels, value: number): void {
    const key = this.labelNames.map((n) => labels[n] ?? "").join("\u0000");
    let series = this.#series.get(key);
    if (!series) this.#series.set(key, (series = { labels, counts: new Array<number>(this.buckets.length).fill(0), sum: 0, count: 0 }));
    // Counts per bucket, made cumulative at exposition: one increment per observation.
    let i = 0;
    while (i < this.buckets.length && value > this.buckets[i]!) i++;
    if (i < this.buckets.length) series.counts[i]! += 1;
    series.sum += value;
    series.count += 1;
  }

  expose(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const { labels, counts, sum, count } of this.#series.values()) {
      let cumulative = 0;
      this.buckets.forEach((bound, i) => {
        cumulative += counts[i]!;
        lines.push(`${this.name}_bucket${rendered([...this.labelNames, "le"], { ...labels, le: String(bound) })} ${cumulative}`);
      });
      lines.push(`${this.name}_bucket${rendered([...this.labelNames, "le"], { ...labels, le: "+Inf" })} ${count}`);
      lines.push(`${this.name}_sum${rendered(this.labelNames, labels)} ${sum}`);
      lines.push(`${this.name}_count${rendered(this.labelNames, labels)} ${count}`);
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

  gauge(name: string, help: string, labelNames: readonly string[], collect: () => Iterable<{ labels: Labels; value: number }>): CollectedGauge {
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
  };
}
export type DataPlaneMetrics = ReturnType<typeof dataPlaneMetrics>;
