// The `otlp` exporter (stream `traces`): finished spans go to an OTLP/HTTP collector in batches. A request
// pays for `trace()` (http/protobuf: its spans written into their batch's bytes, a microsecond or two,
// span-queue.ts) or `span()` (http/json: a bound check and a push); delivery runs later, on a timer or
// once a batch is full. Everything is bounded: the queue (past it new spans are dropped and counted), each
// batch's delivery (timeout_ms, retries included, one batch in flight), flush (timeout_ms). A collector
// that is slow, failing or gone costs dropped spans and a rate-limited warning, never a request's time.
import type { Logger } from "../logger.ts";
import type { Exporter, FinishedTrace, SpanData, Stream } from "../records.ts";
import { spanQueue, type TakenBatch } from "./span-queue.ts";
import type { OtlpResource } from "./model.ts";
import { OTLP_DEFAULTS, type OtlpSettings } from "./settings.ts";

export { OtlpSettings, OTLP_DEFAULTS } from "./settings.ts";

export interface OtlpDeps {
  readonly logger: Logger;
  /** InfoView `version`: resource service.version. */
  readonly version: string;
  /** Spans lost: queue full, export failed or timed out, span after close. */
  readonly dropped: { inc(by?: number): void };
  /** Tests inject a collector; the global fetch otherwise. */
  readonly fetch?: typeof fetch;
}

export interface OtlpExporter extends Exporter {
  /** The caller adds gen_ai.input.messages / gen_ai.output.messages to SERVER spans only when true. */
  readonly captureContent: boolean;
  span(span: SpanData): void;
}

/** The OTLP/HTTP spec's retryable answers; anything else is final. */
const RETRYABLE = new Set([429, 502, 503, 504]);
const BACKOFF_FIRST_MS = 250;
const BACKOFF_MAX_MS = 5_000;
/** A collector down for an hour writes one warning a minute, not one per batch. */
const WARN_EVERY_MS = 60_000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function retryAfterMs(header: string | null): number | undefined {
  if (header === null || !/^\d{1,6}$/.test(header.trim())) return undefined;
  return Number(header.trim()) * 1000;
}

/** An error's kind only: a message can carry the endpoint URL, and with it a credential in its query. */
function errorKind(err: unknown): string {
  if (err instanceof Error) return (err as { code?: unknown }).code !== undefined ? String((err as { code?: unknown }).code) : err.name;
  return "error";
}

function buildHeaders(configured: OtlpSettings["headers"], contentType: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(configured ?? {})) {
    if (name.toLowerCase() === "content-type") continue; // the body's type is the protocol's, not a setting
    headers[name] = typeof value === "string" ? value : value.reveal();
  }
  headers["content-type"] = contentType;
  return headers;
}

export function otlpExporter(name: string, settings: OtlpSettings, deps: OtlpDeps): OtlpExporter {
  const protocol = settings.protocol ?? OTLP_DEFAULTS.protocol;
  const timeoutMs = settings.timeout_ms ?? OTLP_DEFAULTS.timeout_ms;
  const maxQueue = settings.max_queue_size ?? OTLP_DEFAULTS.max_queue_size;
  const batchSize = Math.min(settings.max_export_batch_size ?? OTLP_DEFAULTS.max_export_batch_size, maxQueue);
  const resource: OtlpResource = { serviceName: settings.service_name ?? OTLP_DEFAULTS.service_name, serviceVersion: deps.version };
  const queue = spanQueue(protocol === "http/json" ? "http/json" : "http/protobuf", resource, batchSize, maxQueue);
  const headers = buildHeaders(settings.headers, protocol === "http/json" ? "application/json" : "application/x-protobuf");
  const endpoint = settings.endpoint;
  const fetchFn = deps.fetch ?? fetch;
  const { logger, dropped } = deps;

  let closed = false;
  let pumping: Promise<void> | undefined;
  let kickPending = false;
  let lastWarnAt = -Infinity;
  let unwarned = 0;

  function failed(spans: number, fields: Record<string, unknown>): void {
    dropped.inc(spans);
    unwarned += spans;
    const now = performance.now();
    if (now - lastWarnAt < WARN_EVERY_MS) return;
    lastWarnAt = now;
    logger.warn("otlp export failed, spans dropped", { exporter: name, spans_dropped: unwarned, ...fields });
    unwarned = 0;
  }

  /** The oldest batch, retried on a retryable answer until `deadline` (performance.now() time). */
  async function sendOldest(deadline: number): Promise<void> {
    let batch: TakenBatch | undefined;
    const waiting = queue.size;
    try {
      batch = queue.take();
    } catch (err) {
      return failed(waiting, { error: "encode", detail: errorKind(err) });
    }
    if (batch === undefined) return;
    const { body, spans } = batch;
    for (let attempt = 0; ; attempt++) {
      const left = deadline - performance.now();
      if (left <= 0) return failed(spans, { error: "timeout" });
      let answer: Response;
      try {
        answer = await fetchFn(endpoint, { method: "POST", headers, body, signal: AbortSignal.timeout(Math.ceil(left)) });
      } catch (err) {
        // Aborted or refused without an answer: the body may still be read, so the next one is written elsewhere.
        queue.abandon();
        return failed(spans, { error: errorKind(err) });
      }
      // The answer (an ExportTraceServiceResponse, perhaps a partial success) is not read: nothing acts on it.
      void answer.body?.cancel().catch(() => {});
      if (answer.ok) {
        lastWarnAt = -Infinity; // the next failure after a success is worth a line at once
        return;
      }
      if (!RETRYABLE.has(answer.status)) return failed(spans, { status: answer.status });
      const backoff = Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** attempt) * (0.8 + Math.random() * 0.4);
      const wait = Math.max(backoff, retryAfterMs(answer.headers.get("retry-after")) ?? 0);
      if (performance.now() + wait >= deadline) return failed(spans, { status: answer.status, error: "retries exhausted within timeout_ms" });
      await sleep(wait);
    }
  }

  /** Sends batches one at a time: one at least, then on while a full one waits (all: until empty). */
  async function run(all: boolean, deadline: number | undefined): Promise<void> {
    let first = true;
    while (queue.size > 0 && (all || first || queue.full)) {
      first = false;
      await sendOldest(Math.min(deadline ?? Infinity, performance.now() + timeoutMs));
      if (deadline !== undefined && performance.now() >= deadline) return;
    }
  }

  function pump(all: boolean, deadline?: number): Promise<void> {
    pumping ??= run(all, deadline)
      .catch((err) => logger.error("otlp exporter failed", { exporter: name, error: errorKind(err) }))
      .finally(() => {
        pumping = undefined;
      });
    return pumping;
  }

  /** A full batch goes out now, yet not inside the caller's turn. */
  function queued(): void {
    if (queue.full && pumping === undefined && !kickPending) {
      kickPending = true;
      setTimeout(kick, 0);
    }
  }

  const kick = () => {
    kickPending = false;
    void pump(false);
  };

  const timer = setInterval(() => {
    if (queue.size > 0 && pumping === undefined) void pump(false);
  }, settings.schedule_delay_ms ?? OTLP_DEFAULTS.schedule_delay_ms);
  // A pending export never keeps the process alive; SIGTERM flushes explicitly.
  timer.unref();

  async function flush(): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    const work = (async () => {
      while ((queue.size > 0 || pumping !== undefined) && performance.now() < deadline) await (pumping ?? pump(true, deadline));
    })();
    let bound: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([work, new Promise<void>((resolve) => (bound = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(bound);
  }

  return {
    name,
    module: "otlp",
    streams: ["traces"] as readonly Stream[],
    captureContent: settings.capture_content ?? OTLP_DEFAULTS.capture_content,
    span(span: SpanData): void {
      if (closed || !queue.push(span)) return void dropped.inc(1);
      queued();
    },
    ...(queue.pushTrace && {
      trace(trace: FinishedTrace): void {
        if (closed || !queue.pushTrace!(trace)) return void dropped.inc(1 + trace.attempts.length);
        queued();
      },
    }),
    flush,
    async close(): Promise<void> {
      closed = true;
      clearInterval(timer);
      await flush();
    },
  };
}
