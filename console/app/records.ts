// The request-log record (docs/telemetry.md, "Request-log record") as the console reads it from
// GET /requests and the event stream, and the figures the Overview derives from recent ones.
import { adminFetch, AdminApiError } from "./api.ts";

export interface RequestRecord {
  readonly ts: string;
  readonly request_id: string;
  readonly ingress_protocol: string;
  readonly model: string;
  readonly pool: string | null;
  readonly lane: string | null;
  readonly provider: string | null;
  readonly stream: boolean;
  readonly status: number;
  readonly outcome: "ok" | "client_error" | "exhausted" | "error";
  readonly attempts: number;
  readonly key_id: string | null;
  readonly group: string | null;
  readonly principal: string | null;
  readonly usage: { readonly input_tokens: number; readonly output_tokens: number } | null;
  readonly cost_micros: number;
  readonly duration_ms: number;
  readonly ttfb_ms: number | null;
  readonly error: { readonly class: string; readonly message: string } | null;
  readonly [member: string]: unknown;
}

/** A GET the generated client does not cover yet, with the same error handling. */
export async function getJson<T>(path: string): Promise<T> {
  const response = await adminFetch(`/api/v1/admin${path}`, { headers: { accept: "application/json" } });
  const text = await response.text();
  const parsed: unknown = text === "" ? undefined : JSON.parse(text);
  if (!response.ok) {
    const error = (parsed as { error?: { code?: string; message?: string } } | undefined)?.error;
    throw new AdminApiError(response.status, error?.code ?? "internal", error?.message ?? `HTTP ${response.status}`, response.headers.get("retry-after"));
  }
  return parsed as T;
}

export const recentRecords = (limit = 1000) => getJson<{ items: RequestRecord[] }>(`/requests?limit=${limit}`).then((r) => r.items);

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
  const oldest = Math.min(...recent.map((r) => Date.parse(r.ts)));
  const minutes = Math.max(1, (now - oldest) / 60_000);
  return {
    perMinute: recent.length / Math.min(minutes, windowMs / 60_000),
    errorRate: recent.filter((r) => r.outcome === "error" || r.outcome === "exhausted").length / recent.length,
    p50: at(0.5),
    p95: at(0.95),
  };
}
