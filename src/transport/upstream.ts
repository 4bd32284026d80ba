// Upstream HTTP: Bun's fetch, which keeps connections alive and reuses them per host. The client's own
// signal is the fetch's, so a client that goes away aborts the upstream call natively, at once, and an
// abandoned request stops costing upstream tokens.
//
// `limits.upstream_request_timeout_secs` is the longest the upstream may stay silent, like nginx's
// proxy_read_timeout: before its answer starts (504 in the caller's shape) and between the bytes of a
// stream (the stream ends with the protocol's error). It is Bun's socket idle timer, which costs nothing
// per call but moves in coarse steps (docs/operations.md). A per-call timer, AbortController and client
// listener, or a shared deadline joined with AbortSignal.any, each cost about a tenth of the proxy's
// CPU per request (docs/performance.md).
import type { ResolvedProvider } from "../providers/provider.ts";

export interface UpstreamCall {
  readonly url: string;
  /** The connection pool of the upstream's host (sessionFor). */
  readonly session: Bun.FetchSession;
  readonly headers: Record<string, string>;
  readonly body: string;
  /** Aborts when the client disconnects (Request.signal). */
  readonly clientSignal: AbortSignal;
  readonly timeoutMs: number;
}

/**
 * Why an upstream gave no answer the gateway could use, as a word routing and metrics know: no HTTP answer
 * (timeout, connect), an answer too large or cut short, or the client left first.
 */
export type FaultReason = "timeout" | "connect" | "client_gone" | "too_large" | "cut_short";

/** An upstream fault; `message` is the gateway's own short wording (transportCause), never Bun's. */
export interface UpstreamFault {
  readonly ok: false;
  readonly reason: FaultReason;
  readonly message: string;
}

export type UpstreamOutcome = { readonly ok: true; readonly response: Response } | UpstreamFault;

export type UpstreamFetch = (url: string, init: BunFetchRequestInit) => Promise<Response>;

/** Bun's fetch rejects with this when the upstream stayed silent past the bound (also while a body is read). */
export const isUpstreamTimeout = (error: unknown) => error instanceof Error && error.name === "TimeoutError";

/**
 * A transport error as a short cause of our own: clients and logs hear these words, not Bun's (whose
 * messages suggest `verbose: true` to fetch()). The one place such errors are put into words.
 */
export function transportCause(error: unknown): string {
  if (isUpstreamTimeout(error)) return "timed out";
  const code = typeof (error as { code?: unknown } | null)?.code === "string" ? (error as { code: string }).code : "";
  if (code === "ECONNREFUSED") return "connection refused";
  if (code === "ECONNRESET" || code === "EPIPE" || code === "ConnectionClosed") return "connection reset";
  if (code === "ENOTFOUND" || code.startsWith("EAI_") || code.startsWith("DNS")) return "DNS lookup failed";
  if (code === "EPROTO" || /CERT|TLS|SSL|SIGNATURE|ISSUER/.test(code)) return "TLS handshake or certificate failed";
  return "connection failed";
}

export async function callUpstream(call: UpstreamCall, fetchImpl: UpstreamFetch = fetch): Promise<UpstreamOutcome> {
  try {
    const response = await fetchImpl(call.url, { method: "POST", headers: call.headers, body: call.body, signal: call.clientSignal, redirect: "manual", timeout: call.timeoutMs, session: call.session });
    return { ok: true, response };
  } catch (error) {
    if (call.clientSignal.aborted) return CLIENT_GONE;
    if (isUpstreamTimeout(error)) return { ok: false, reason: "timeout", message: `upstream stayed silent for ${call.timeoutMs / 1000} s` };
    return { ok: false, reason: "connect", message: `upstream unreachable: ${transportCause(error)}` };
  }
}

const CLIENT_GONE: UpstreamFault = { ok: false, reason: "client_gone", message: "client disconnected" };

/** The bounds on reading an upstream's answer whole (a non-stream answer, or an error body). */
export interface AnswerBounds {
  /** `limits.max_upstream_response_bytes`, counted after decompression. */
  readonly maxBytes: number;
  /** The request's deadline (`failover.timeout_secs`) on `now`'s clock; Infinity = none. */
  readonly deadline: number;
  readonly now: () => number;
  readonly clientSignal: AbortSignal;
}

export type AnswerRead = { readonly ok: true; readonly bytes: Uint8Array } | UpstreamFault;

/**
 * The answer's body as bytes, read piece by piece so that neither a huge (or decompression-bomb) answer
 * nor a trickling one holds the request: past `maxBytes` or the deadline the read stops and the upstream
 * connection is dropped. The deadline is looked at as each piece arrives (no timer per request); silence
 * between pieces is already bounded by the socket idle timer (upstream_request_timeout_secs).
 */
export async function readAnswer(response: Response, bounds: AnswerBounds): Promise<AnswerRead> {
  const body = response.body;
  if (!body) return { ok: true, bytes: EMPTY };
  // A declared size over the cap (and no compression to change it) is refused before a byte is read.
  const declared = Number(response.headers.get("content-length") ?? 0);
  if (declared > bounds.maxBytes && !response.headers.has("content-encoding")) return drop(body, tooLarge(bounds.maxBytes));
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > bounds.maxBytes) return drop(reader, tooLarge(bounds.maxBytes));
      chunks.push(value);
      if (bounds.now() > bounds.deadline) return drop(reader, { ok: false, reason: "timeout", message: "the upstream's answer was still arriving at the request's deadline (failover.timeout_secs)" });
    }
  } catch (error) {
    if (bounds.clientSignal.aborted) return CLIENT_GONE;
    if (isUpstreamTimeout(error)) return { ok: false, reason: "timeout", message: "the upstream stopped answering" };
    return { ok: false, reason: "cut_short", message: `the upstream's answer was cut short: ${transportCause(error)}` };
  }
  return { ok: true, bytes: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total) };
}

const EMPTY = new Uint8Array(0);

/** Decodes answers read as bytes (one decoder: it holds no state between calls). */
export const utf8 = new TextDecoder();

const tooLarge = (max: number): UpstreamFault => ({ ok: false, reason: "too_large", message: `the upstream's answer is larger than limits.max_upstream_response_bytes (${max} bytes)` });

/** Stops reading (which closes the upstream connection) and answers with the fault. */
function drop(source: { cancel(): Promise<void> }, fault: UpstreamFault): UpstreamFault {
  source.cancel().catch(() => {});
  return fault;
}

export interface PoolSettings {
  /** Idle keep-alive connections kept per upstream host; 0 closes each after its answer. */
  readonly maxIdlePerHost: number;
  readonly idleTimeoutSecs: number;
}

/**
 * One connection pool per upstream origin, for the life of the process: the pool limits are
 * boot-scoped, and a config swap that keeps a provider keeps its warm connections.
 */
const sessions = new Map<string, Bun.FetchSession>();

export function sessionFor(origin: string, pool: PoolSettings): Bun.FetchSession {
  let session = sessions.get(origin);
  if (session === undefined) {
    const keepAlive = pool.maxIdlePerHost > 0 && pool.idleTimeoutSecs > 0 && { idleTimeout: pool.idleTimeoutSecs, maxIdleSockets: pool.maxIdlePerHost };
    session = new Bun.FetchSession({ keepAlive });
    sessions.set(origin, session);
  }
  return session;
}

/** base_url + path + the provider's extra query parameters (encoded once, at config load). */
export function upstreamUrl(provider: ResolvedProvider, path: string): string {
  const base = `${provider.baseUrl}${path}`;
  if (provider.queryString === "") return base;
  return `${base}${base.includes("?") ? "&" : "?"}${provider.queryString}`;
}

/**
 * Upstream response headers not relayed to the client: those that describe one hop (RFC 9110 section
 * 7.6.1), the body framing Bun sets itself, and cookies, which belong to the gateway's own connection
 * to the provider (a bot-management cookie, say), never to the gateway's clients.
 */
export const NOT_RELAYED = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "content-length",
  "content-encoding",
  "host",
  "set-cookie",
]);

/** Upstream response headers worth relaying to the client (content type, request ids, rate-limit info). */
export function relayHeaders(upstream: Headers): Headers {
  // A native copy, then the few deletions: cheaper than filtering name by name in JS, and a Headers
  // object is handed to the Response as it is.
  const out = new Headers(upstream);
  for (const name of NOT_RELAYED) out.delete(name);
  return out;
}
