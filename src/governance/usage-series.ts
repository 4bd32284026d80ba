// GET /usage/series arithmetic: the range's fixed step and window, the top series by spend with the rest
// as "(other)", and the pricing every usage view uses (rate-card.ts spendMicros per (key, model) sum).
import type { GatewayConfig } from "../config/schema.ts";
import type { LedgerStore } from "../store/ledger.ts";
import type { LedgerDimension, LedgerNamedSum, LedgerStepSum } from "../store/ledger-series.ts";
import { centsOf, spendMicros, tokensOf } from "./rate-card.ts";

/** Steps give at most 168 points; fixed per range so two reads within one step agree. */
export const USAGE_RANGES = {
  "1h": { secs: 3600, step_secs: 60 },
  "24h": { secs: 86_400, step_secs: 900 },
  "7d": { secs: 7 * 86_400, step_secs: 3600 },
  "30d": { secs: 30 * 86_400, step_secs: 6 * 3600 },
} as const;
export type UsageRange = keyof typeof USAGE_RANGES;

/** Series shown on their own; the console's chart stays legible and the answer bounded. */
export const MAX_SERIES = 20;
export const OTHER_SERIES = "(other)";
/** The series of keys bound to no group (group names cannot contain parentheses). */
export const NO_GROUP_SERIES = "(no group)";

export interface SeriesWindow {
  /** Epoch seconds, inclusive: a multiple of the step. */
  readonly from: number;
  /** Epoch seconds, exclusive: the end of the step holding `now`. */
  readonly to: number;
  readonly step_secs: number;
}

/** The range's steps ending with the one in progress at `nowMs`. */
export function seriesWindow(range: UsageRange, nowMs: number): SeriesWindow {
  const { secs, step_secs } = USAGE_RANGES[range];
  const to = (Math.floor(nowMs / 1000 / step_secs) + 1) * step_secs;
  return { from: to - secs, to, step_secs };
}

type Pricing = Pick<GatewayConfig, "rate_card" | "per_request_fee">;

interface Totals {
  requests: number;
  tokens: number;
  spendMicros: number;
}

const add = (totals: Totals, sum: LedgerNamedSum | LedgerStepSum, pricing: Pricing) => {
  totals.requests += sum.requests;
  totals.tokens += tokensOf(sum);
  totals.spendMicros += spendMicros(pricing, sum.model, sum, sum.requests);
};

export interface RankedSeries {
  /** The store's names of the series shown on their own, by spend, tokens, then name. */
  readonly keep: string[];
  readonly totals: Map<string, Totals>;
  /** The rest summed, or null when every series is shown. */
  readonly other: Totals | null;
}

/** Each name's totals over the range, the top MAX_SERIES kept and the rest summed. */
export function rankSeries(sums: readonly LedgerNamedSum[], pricing: Pricing): RankedSeries {
  const totals = new Map<string, Totals>();
  for (const sum of sums) {
    let t = totals.get(sum.name);
    if (!t) totals.set(sum.name, (t = { requests: 0, tokens: 0, spendMicros: 0 }));
    add(t, sum, pricing);
  }
  const ranked = [...totals.entries()].sort(([an, a], [bn, b]) => b.spendMicros - a.spendMicros || b.tokens - a.tokens || (an < bn ? -1 : an > bn ? 1 : 0));
  const keep = ranked.slice(0, MAX_SERIES).map(([name]) => name);
  let other: Totals | null = null;
  for (const [, t] of ranked.slice(MAX_SERIES)) {
    other ??= { requests: 0, tokens: 0, spendMicros: 0 };
    other.requests += t.requests;
    other.tokens += t.tokens;
    other.spendMicros += t.spendMicros;
  }
  return { keep, totals: new Map(ranked.slice(0, MAX_SERIES)), other };
}

export interface SeriesPoint {
  /** Epoch seconds: the step's start. */
  readonly t: number;
  readonly requests: number;
  readonly tokens: number;
  readonly spend_cents: number;
}

export interface UsageSeries {
  readonly name: string;
  readonly total: { readonly requests: number; readonly tokens: number; readonly spend_cents: number };
  /** Steps with no ledger rows are left out. */
  readonly points: SeriesPoint[];
}

const view = (t: Totals) => ({ requests: t.requests, tokens: t.tokens, spend_cents: centsOf(t.spendMicros) });

/** The series of `ranked`, in its order and "(other)" last, with the points of `steps`. */
export function buildSeries(by: LedgerDimension, ranked: RankedSeries, steps: readonly LedgerStepSum[], pricing: Pricing): UsageSeries[] {
  const points = new Map<string | null, Map<number, Totals>>();
  for (const step of steps) {
    let byStep = points.get(step.name);
    if (!byStep) points.set(step.name, (byStep = new Map()));
    let t = byStep.get(step.t);
    if (!t) byStep.set(step.t, (t = { requests: 0, tokens: 0, spendMicros: 0 }));
    add(t, step, pricing);
  }
  const pointsOf = (name: string | null): SeriesPoint[] =>
    [...(points.get(name) ?? new Map<number, Totals>()).entries()].sort(([a], [b]) => a - b).map(([t, totals]) => ({ t: Math.floor(t / 1000), ...view(totals) }));
  const series: UsageSeries[] = ranked.keep.map((name) => ({ name: by === "group" && name === "" ? NO_GROUP_SERIES : name, total: view(ranked.totals.get(name)!), points: pointsOf(name) }));
  if (ranked.other) series.push({ name: OTHER_SERIES, total: view(ranked.other), points: pointsOf(null) });
  return series;
}

/** The view: the range's totals per name pick the series, then one read of their points. */
export async function readSeries(ledger: LedgerStore, pricing: Pricing, by: LedgerDimension, range: UsageRange, nowMs: number, keyId?: string) {
  const window = seriesWindow(range, nowMs);
  const query = { from: window.from * 1000, to: window.to * 1000, by, ...(keyId === undefined ? {} : { keyId }) };
  const ranked = rankSeries(await ledger.namedSums(query), pricing);
  const steps = await ledger.stepSums({ ...query, step: window.step_secs * 1000, keep: ranked.keep });
  return { by, range, step_secs: window.step_secs, from: window.from, to: window.to, series: buildSeries(by, ranked, steps, pricing) };
}
