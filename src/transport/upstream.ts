// Upstream HTTP: Bun's fetch, which keeps connections alive and reuses them per host. Every call is
// bounded by `limits.upstream_request_timeout_secs` (the whole exchange, streaming included) and is
// aborted the moment the client goes away, so an abandoned request stops costing upstream tokens.
import type { ResolvedProvider } from "../providers/provider.ts";

export interface UpstreamCall {
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly body: string;
  /** Aborts when the client disconnects (Request.signal). */
  readonly clientSignal: AbortSignal;
  readonly timeoutMs: number;
}

export type UpstreamOutcome =
  /** `release()` ends the exchange's timer: call it once the body has been read or relayed. */
  | { readonly ok: true; readonly response: Response; readonly release: () => void }
  /** No HTTP answer: refused, reset, DNS, TLS, timed out, or the client left first. */
  | { readonly ok: false; readonly reason: "timeout" | "connect" | "client_gone"; readonly message: string };

export type UpstreamFetch = (url: string, init: RequestInit) => Promise<Response>;

/**
 * One controller per call, aborted by the client leaving or by the timer. The timer is cleared when
 * the caller releases the exchange: a 300 s timer left pending per request would keep every finished
 * request's closure alive for five minutes (AbortSignal.timeout cannot be cleared).
 */
export async function callUpstream(call: UpstreamCall, fetchImpl: UpstreamFetch = fetch): Promise<UpstreamOutcome> {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, call.timeoutMs);
  const onClientGone = () => controller.abort();
  call.clientSignal.addEventListener("abort", onClientGone, { once: true });
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    // The client-abort listener is left in place: it dies with the request, and aborting a finished
    // fetch does nothing.
    clearTimeout(timer);
  };
  try {
    const response = await fetchImpl(call.url, { method: "POST", headers: call.headers, body: call.body, signal: controller.signal, redirect: "manual" });
    return { ok: true, response, release };
  } catch (error) {
    release();
    if (call.clientSignal.aborted) return { ok: false, reason: "client_gone", message: "client disconnected" };
    if (timedOut) return { ok: false, reason: "timeout", message: `upstream did not answer within ${call.timeoutMs / 1000} s` };
    return { ok: false, reason: "connect", message: `upstream unreachable: ${(error as Error).message}` };
  }
}

/** base_url + path + the provider's extra query parameters, built once per call from resolved parts. */
export function upstreamUrl(provider: ResolvedProvider, path: string): string {
  const base = `${provider.baseUrl}${path}`;
  const query = Object.entries(provider.query);
  if (query.length === 0) return base;
  const params = new URLSearchParams(query);
  return `${base}${base.includes("?") ? "&" : "?"}${params.toString()}`;
}

/** Headers that describe one hop and must not be forwarded (RFC 9110 section 7.6.1), plus ones we set. */
export const HOP_BY_HOP = new Set([
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
]);

/** Upstream response headers worth relaying to the client (content type, request ids, rate-limit info). */
export function relayHeaders(upstream: Headers): Headers {
  // A native copy, then the few deletions, costs less than filtering name by name in JS.
  const out = new Headers(upstream);
  for (const name of HOP_BY_HOP) out.delete(name);
  return out;
}
