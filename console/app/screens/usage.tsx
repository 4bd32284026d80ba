// Usage (design/console.md): tokens and spend over time by model, key or group, over 1h, 24h, 7d or 30d
// (GET /usage/series); a chart, the table under it, and the same table as CSV.
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { useEffect, useRef, useState } from "preact/hooks";
import { admin } from "../api.ts";
import { cents, count, ErrorNote, Loading, Table, time, useLoad } from "../ui.tsx";

type SeriesView = Awaited<ReturnType<typeof admin.getUsageSeries>>;

const RANGES = ["1h", "24h", "7d", "30d"] as const;
const BY = ["model", "key", "group"] as const;
const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#ca8a04", "#9333ea", "#0891b2", "#ea580c", "#4b5563"];

export function Chart({ view, measure, note = "; the table below holds the same figures" }: { view: SeriesView; measure: "tokens" | "spend_cents"; note?: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!box.current) return;
    const times: number[] = [];
    for (let t = view.from; t < view.to; t += view.step_secs) times.push(t);
    const columns = view.series.map((s) => {
      const at = new Map(s.points.map((p) => [p.t, p[measure]]));
      return times.map((t) => at.get(t) ?? 0);
    });
    const dark = matchMedia("(prefers-color-scheme: dark)").matches;
    const ink = dark ? "#d1d5db" : "#374151";
    const chart = new uPlot(
      {
        width: Math.max(280, box.current.clientWidth),
        height: 260,
        title: measure === "tokens" ? "Tokens" : "Spend (cents)",
        series: [{}, ...view.series.map((s, i) => ({ label: s.name, stroke: COLORS[i % COLORS.length], width: 1.5 }))],
        axes: [{ stroke: ink, grid: { stroke: dark ? "#374151" : "#e5e7eb" } }, { stroke: ink, grid: { stroke: dark ? "#374151" : "#e5e7eb" } }],
      },
      [times, ...columns],
      box.current,
    );
    return () => chart.destroy();
  }, [view, measure]);
  return <div ref={box} class="chart" role="img" aria-label={`${measure === "tokens" ? "Tokens" : "Spend"} by ${view.by} over ${view.range}${note}`} />;
}

function csv(view: SeriesView): string {
  const quote = (s: string) => (/[",\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s);
  const lines = ["series,time_utc,requests,tokens,spend_cents"];
  for (const s of view.series) for (const p of s.points) lines.push([quote(s.name), new Date(p.t * 1000).toISOString(), p.requests, p.tokens, p.spend_cents.toFixed(4)].join(","));
  return `${lines.join("\n")}\n`;
}

export function Usage() {
  const [range, setRange] = useState<(typeof RANGES)[number]>("24h");
  const [by, setBy] = useState<(typeof BY)[number]>("model");
  const [measure, setMeasure] = useState<"tokens" | "spend_cents">("tokens");
  const loaded = useLoad(() => admin.getUsageSeries({ by, range }), [by, range], 30_000);
  const download = () => {
    if (!loaded.data) return;
    const url = URL.createObjectURL(new Blob([csv(loaded.data)], { type: "text/csv" }));
    const link = document.createElement("a");
    link.href = url;
    link.download = `usage-by-${by}-${range}.csv`;
    link.click();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  };
  return (
    <>
      <h1>Usage</h1>
      <form class="inline" onSubmit={(e) => e.preventDefault()}>
        <label for="usage-by">By</label>
        <select id="usage-by" value={by} onChange={(e) => setBy(e.currentTarget.value as (typeof BY)[number])}>
          {BY.map((b) => (
            <option value={b}>{b}</option>
          ))}
        </select>
        <fieldset class="segmented">
          <legend>Range</legend>
          {RANGES.map((r) => (
            <button type="button" aria-pressed={range === r} onClick={() => setRange(r)}>
              {r}
            </button>
          ))}
        </fieldset>
        <label for="usage-measure">Chart</label>
        <select id="usage-measure" value={measure} onChange={(e) => setMeasure(e.currentTarget.value as "tokens" | "spend_cents")}>
          <option value="tokens">tokens</option>
          <option value="spend_cents">spend</option>
        </select>
        <button type="button" onClick={download} disabled={!loaded.data}>
          Download CSV
        </button>
      </form>
      <ErrorNote error={loaded.error} />
      {!loaded.data && !loaded.error && <Loading what="usage" />}
      {loaded.data && (
        <>
          <Chart view={loaded.data} measure={measure} />
          <Table
            caption={`Usage by ${by} from ${time(loaded.data.from)} to ${time(loaded.data.to)} (UTC)`}
            rows={loaded.data.series}
            rowKey={(s) => s.name}
            empty="No usage in this range."
            columns={[
              { label: by === "key" ? "Key" : by === "group" ? "Group" : "Model", cell: (s) => s.name },
              { label: "Requests", numeric: true, cell: (s) => count(s.total.requests) },
              { label: "Tokens", numeric: true, cell: (s) => count(s.total.tokens) },
              { label: "Spend (cents)", numeric: true, cell: (s) => cents(s.total.spend_cents) },
            ]}
          />
        </>
      )}
    </>
  );
}
