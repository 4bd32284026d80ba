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
    for (const { labels, value } of this.#series.values()) {
      const rendered = this.labelNames.map((n) => `${n}="${escapeLabel(labels[n] ?? "")}"`).join(",");
      lines.push(`${this.name}${rendered ? `{${rendered}}` : ""} ${value}`);
    }
    return lines.join("\n");
  }
}

export class MetricsRegistry {
  readonly #counters: Counter[] = [];

  counter(name: string, help: string, labelNames: readonly string[]): Counter {
    const counter = new Counter(name, help, labelNames);
    this.#counters.push(counter);
    return counter;
  }

  expose(): string {
    return `${this.#counters.map((c) => c.expose()).join("\n")}\n`;
  }
}

/** The data plane's series. One registry per process (tests build their own). */
export function dataPlaneMetrics(registry = new MetricsRegistry()) {
  return {
    registry,
    translations: registry.counter("gateway_translations_total", "Cross-protocol translation hops.", ["from", "to"]),
    translationWarnings: registry.counter("gateway_translation_warnings_total", "Members dropped or clamped in translation (each also logged).", ["from", "to"]),
  };
}
export type DataPlaneMetrics = ReturnType<typeof dataPlaneMetrics>;
