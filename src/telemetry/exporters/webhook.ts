// The `webhook` exporter (design/telemetry.md "Exporters"): request-log records POSTed as JSON arrays.
// `log()` only queues; batches leave from a timer or the next turn of the event loop, and at most
// max_in_flight deliveries run. A batch ready while every slot is busy is shed and counted rather than
// queued, so an endpoint that is slow, failing or gone costs a bounded amount of memory and no request time.
import { Type, type Static } from "@sinclair/typebox";
import type { Logger } from "../logger.ts";
import type { Exporter, RequestRecord } from "../records.ts";

export const WEBHOOK_DEFAULTS = { batch_max: 100, flush_interval_ms: 1_000, max_in_flight: 4, timeout_ms: 5_000, max_retries: 3 } as const;

export const WebhookSettings = Type.Object(
  {
    url: Type.String({ pattern: "^https?://[^\\s]+$", description: "endpoint the batches are POSTed to", "x-expected": "an http(s) URL" }),
    headers: Type.Optional(
      Type.Record(Type.String({ pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]+$" }), Type.String({ pattern: "^[^\\r\\n\\u0000]*$", "x-secret": true }), {
        description: "extra headers sent with each batch (values may be secret references)",
        "x-secret": true,
        additionalProperties: false,
        "x-key": "an HTTP header name (letters, digits and ! # $ % & ' * + . ^ _ ` | ~ -)",
      }),
    ),
    batch_max: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, default: WEBHOOK_DEFAULTS.batch_max, description: "records per POST; a full batch leaves at once" })),
    flush_interval_ms: Type.Optional(Type.Integer({ minimum: 1, maximum: 600_000, default: WEBHOOK_DEFAULTS.flush_interval_ms, description: "a batch leaves once its oldest record is this old" })),
    max_in_flight: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000, default: WEBHOOK_DEFAULTS.max_in_flight, description: "deliveries at once; a batch ready while all run is shed and counted" })),
    timeout_ms: Type.Optional(Type.Integer({ minimum: 1, maximum: 600_000, default: WEBHOOK_DEFAULTS.timeout_ms, description: "bound on each POST, and on a flush" })),
    max_retries: Type.Optional(Type.Integer({ minimum: 0, maximum: 100, default: WEBHOOK_DEFAULTS.max_retries, description: "retries of a 5xx, 429, timeout or connection error (250 ms doubling, ±20%)" })),
  },
  { additionalProperties: false },
);
export type WebhookSettings = Static<typeof WebhookSettings>;

/** Records waiting for a batch, whatever the settings multiply to: the memory an exporter may hold. */
const MAX_PENDING_CAP = 100_000;
const BACKOFF_FIRST_MS = 250;
/** Doubling stops here, so a large max_retries keeps retrying rather than sleeping for hours. */
const BACKOFF_CAP_MS = 30_000;
/** Shedding repeats for as long as the endpoint is slow: one warning a minute says so. */
const WARN_EVERY_MS = 60_000;

export interface WebhookExporterDeps {
  readonly logger: Logger;
  /** gateway_webhook_logs_dropped_total, declared at boot by the caller. */
  readonly dropped: { inc(by?: number): void };
  readonly fetch?: typeof fetch;
}

type Outcome = { readonly ok: true } | { readonly ok: false; readonly retry: boolean; readonly status?: number; readonly error?: string };

export function webhookExporter(name: string, settings: WebhookSettings, deps: WebhookExporterDeps): Exporter {
  const url = settings.url;
  const batchMax = settings.batch_max ?? WEBHOOK_DEFAULTS.batch_max;
  const intervalMs = settings.flush_interval_ms ?? WEBHOOK_DEFAULTS.flush_interval_ms;
  const maxInFlight = settings.max_in_flight ?? WEBHOOK_DEFAULTS.max_in_flight;
  const timeoutMs = settings.timeout_ms ?? WEBHOOK_DEFAULTS.timeout_ms;
  const maxRetries = settings.max_retries ?? WEBHOOK_DEFAULTS.max_retries;
  const maxPending = Math.max(batchMax, Math.min(batchMax * maxInFlight * 4, MAX_PENDING_CAP));
  const doFetch = deps.fetch ?? fetch;
  // The origin alone: a URL's path or query may carry a token, and header values are never logged.
  const target = safeOrigin(url);
  const logger = deps.logger.child({ exporter: name, module: "webhook", target });

  let headers: Headers;
  try {
    headers = new Headers(settings.headers);
  } catch {
    // The error names the header; its value (perhaps a resolved secret) stays out of the message.
    throw new Error(`export ${name}: settings.headers holds a name or value HTTP does not allow`);
  }
  headers.set("content-type", "application/json");

  let pending: RequestRecord[] = [];
  /** performance.now() at each pending record's arrival, to time the interval from the oldest. */
  let arrivals: number[] = [];
  let intervalTimer: ReturnType<typeof setTimeout> | undefined;
  let fullScheduled = false;
  let inFlight = 0;
  const deliveries = new Set<Promise<void>>();
  /** Aborts running deliveries and their backoff sleeps at close. */
  const stop = new AbortController();
  let closed = false;
  let shedSinceWarn = 0;
  let warnedAt = -Infinity;

  const drop = (n: number) => {
    shedSinceWarn += n;
    try {
      deps.dropped.inc(n);
    } catch {
      // A caller's counter failing must not reach log().
    }
  };

  function armInterval(delayMs: number): void {
    if (intervalTimer !== undefined) clearTimeout(intervalTimer);
    intervalTimer = setTimeout(onInterval, Math.max(0, delayMs));
    // Never what keeps the process alive: SIGTERM flushes explicitly.
    intervalTimer.unref();
  }

  function log(record: RequestRecord): void {
    try {
      if (closed || pending.length >= maxPending) return void drop(1);
      pending.push(record);
      arrivals.push(performance.now());
      if (pending.length === 1) armInterval(intervalMs);
      // The POST (serialising, fetch's setup) runs on the next turn, never inside the caller's log().
      if (pending.length >= batchMax && !fullScheduled) {
        fullScheduled = true;
        setImmediate(onFull);
      }
    } catch {
      // Nothing above should throw; a request is never failed for its log record.
    }
  }

  function take(n: number): RequestRecord[] {
    const batch = pending.slice(0, n);
    pending = pending.slice(n);
    arrivals = arrivals.slice(n);
    return batch;
  }

  function onFull(): void {
    fullScheduled = false;
    while (pending.length >= batchMax) send(take(batchMax));
    if (pending.length === 0) {
      if (intervalTimer !== undefined) clearTimeout(intervalTimer);
      intervalTimer = undefined;
    } else {
      armInterval(arrivals[0]! + intervalMs - performance.now());
    }
  }

  function onInterval(): void {
    intervalTimer = undefined;
    while (pending.length > 0) send(take(batchMax));
  }

  function send(batch: RequestRecord[]): void {
    if (inFlight >= maxInFlight) {
      drop(batch.length);
      warnShedIfDue();
      return;
    }
    inFlight++;
    const delivery = deliver(batch).finally(() => {
      inFlight--;
      deliveries.delete(delivery);
    });
    deliveries.add(delivery);
  }

  /** One slot: the first POST and its retries. Never rejects. */
  async function deliver(batch: RequestRecord[]): Promise<void> {
    let body: string;
    try {
      body = JSON.stringify(batch);
    } catch {
      logger.warn("webhook delivery failed", { records: batch.length, attempts: 0, error: "records not serialisable" });
      return;
    }
    let attempts = 0;
    let outcome: Outcome;
    for (;;) {
      attempts++;
      outcome = await post(body);
      if (outcome.ok) return;
      if (!outcome.retry || attempts > maxRetries || stop.signal.aborted) break;
      await sleep(backoffMs(attempts - 1), stop.signal);
      if (stop.signal.aborted) break;
    }
    const reason = stop.signal.aborted ? { error: "closed" } : { status: outcome.status, error: outcome.error };
    logger.warn("webhook delivery failed", { records: batch.length, attempts, ...reason });
  }

  async function post(body: string): Promise<Outcome> {
    try {
      const response = await doFetch(url, {
        method: "POST",
        headers,
        body,
        // A redirect would resend the records and headers wherever the endpoint points; it counts as a failure.
        redirect: "manual",
        signal: AbortSignal.any([AbortSignal.timeout(timeoutMs), stop.signal]),
      });
      // The answer's body is neither read nor logged (it may echo what was sent); the connection is freed.
      await response.body?.cancel().catch(() => undefined);
      if (response.ok) return { ok: true };
      return { ok: false, retry: response.status >= 500 || response.status === 429, status: response.status };
    } catch (error) {
      return { ok: false, retry: true, error: describe(error) };
    }
  }

  function warnShedIfDue(): void {
    const at = performance.now();
    if (at - warnedAt < WARN_EVERY_MS) return;
    warnedAt = at;
    logger.warn("webhook batches shed: every delivery slot was busy", { records: shedSinceWarn, max_in_flight: maxInFlight });
    shedSinceWarn = 0;
  }

  async function flush(): Promise<void> {
    if (intervalTimer !== undefined) clearTimeout(intervalTimer);
    intervalTimer = undefined;
    while (pending.length > 0) send(take(batchMax));
    if (deliveries.size === 0) return;
    let bound: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([Promise.allSettled([...deliveries]), new Promise<void>((resolve) => (bound = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(bound);
  }

  return {
    name,
    module: "webhook",
    streams: ["logs"],
    log,
    flush,
    async close() {
      closed = true;
      await flush();
      // What is still running past the bound is given up; each logs its failure once.
      stop.abort();
      await Promise.allSettled([...deliveries]);
    },
  };
}

/** Backoff before retry n (from 0): 250 ms doubling, ±20% so a fleet's retries do not land together. */
function backoffMs(n: number): number {
  return Math.min(BACKOFF_FIRST_MS * 2 ** n, BACKOFF_CAP_MS) * (0.8 + Math.random() * 0.4);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/** A failed fetch's kind (TimeoutError, ECONNREFUSED…); its message may repeat the URL, so it is left out. */
function describe(error: unknown): string {
  const { name, code } = (typeof error === "object" && error !== null ? error : {}) as { name?: unknown; code?: unknown };
  if (name === "TimeoutError") return "timeout";
  if (typeof code === "string") return code;
  return typeof name === "string" ? name : "error";
}

function safeOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return "(invalid url)";
  }
}
