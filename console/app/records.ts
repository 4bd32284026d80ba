// The request-log records the console reads (GET /requests, the event stream), and the figures the
// Overview derives from the recent ones.
import { admin } from "./api.ts";

/** The request-log record, as GET /requests and the event stream carry it. */
export type RequestRecord = Awaited<ReturnType<typeof admin.getRequests>>["items"][number];

export const recentRecords = (limit = RING) => admin.getRequests({ limit: String(limit) }).then((r) => r.items);

/** How many records GET /requests keeps (docs/admin-api.md). */
export const RING = 1000;

export interface Figures {
  readonly perMinute: number;
  readonly errorRate: number | null;
  readonly p50: number | null;
  readonly p95: number | null;
}

/** Requests per minute, error share and duration percentiles over the records of the last `windowMs`. */
export function figures(records: readonly RequestRecord[], now: number, windowMs = 5 * 60_000): Figures {
  const recent = records.filter((r) => now - Date.parse(r.ts) <= windowMs);
  if (recent.length === 0) return { perMinute: 0, errorRate: null, p50: null, p95: null };
  const durations = recent.map((r) => r.duration_ms).sort((a, b) => a - b);
  const at = (q: number) => durations[Math.min(durations.length - 1, Math.floor(q * durations.length))]!;
  // The ring keeps 1,000 records: when they all fall inside the window, they cover only its last part.
  const oldest = Math.min(...recent.map((r) => Date.parse(r.ts)));
  const covered = records.length >= RING && recent.length === records.length ? Math.max(1000, now - oldest) : windowMs;
  return {
    perMinute: recent.length / (covered / 60_000),
    errorRate: recent.filter((r) => r.outcome === "error" || r.outcome === "exhausted").length / recent.length,
    p50: at(0.5),
    p95: at(0.95),
  };
}
