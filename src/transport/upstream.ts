// One upstream call, through the gateway's own HTTP/1.1 client (http1.ts: keep-alive pools per origin, the
// answer's body pushed from the socket). A client that goes away aborts the call (its connection is
// closed: mid-stream at once, while the answer is awaited at the next 250 ms sweep), so an abandoned
// request stops costing upstream tokens.
//
// `limits.upstream_request_timeout_secs` is the longest the upstream may stay silent, like nginx's
// proxy_read_timeout: before its answer starts (504 in the caller's shape) and between the bytes of a
// stream (the stream ends with the protocol's error). One sweep every 250 ms checks it for every
// connection (http1-pool.ts): a per-call timer cost about a tenth of the proxy's CPU per request
// (docs/performance.md).
import type { ResolvedProvider } from "../providers/provider.ts";
import type { UpstreamBody } from "./body.ts";
import { send } from "./http1.ts";
import { type HeaderList, NameSet } from "./http1-head.ts";

export interface UpstreamCall {
  readonly url: string;
  /** The keep-alive pool's settings (boot-scoped: the first call to an origin fixes its pool). */
  readonly pool: PoolSettings;
  readonly headers: Record<string, string>;
  /** This call's own headers beside the provider's (http1.ts Http1Call.extra). */
  readonly extra?: Record<string, string>;
  readonly body: string;
  /** Aborts when the client disconnects (Request.signal). */
  readonly clientSignal: AbortSignal;
  readonly timeoutMs: number;
  /** An answer to be read whole: its body is left in its content encoding for readAnswer to decode within the cap. */
  readonly whole: boolean;
}

/**
 * Why an upstream gave no answer the gateway could use, as a word routing and metrics know: no HTTP answer
 * (timeout, connect), an answer too large, cut short or undecodable, a redirect (never followed), or the
 * client left first.
 */
export type FaultReason = "timeout" | "connect" | "client_gone" | "too_large" | "cut_short" | "unreadable" | "redirect";

/** An upstream fault; `message` is the gateway's own short wording (transportCause), never Bun's. */
export interface UpstreamFault {
  readonly ok: false;
  readonly reason: FaultReason;
  readonly message: string;
}

/** An upstream's answer: its status and headers, and its body as the data plane reads it (body.ts). */
export interface UpstreamAnswer {
  readonly status: number;
  /** A 2xx. */
  readonly ok: boolean;
  readonly headers: HeaderList;
  readonly body: UpstreamBody;
  /** The body is still in its Content-Encoding (a `whole` call), for readAnswer to decode within its cap. */
  readonly encoded: boolean;
}

export type UpstreamOutcome = { readonly ok: true; readonly answer: UpstreamAnswer } | UpstreamFault;


/** The upstream client fails with this when the upstream stayed silent past the bound (also while a body is read). */
export const isUpstreamTimeout = (error: unknown) => error instanceof Error && error.name === "TimeoutError";

/** The upstream client fails with this when the client's own signal aborted the call (the client left). */
export const isClientGone = (error: unknown) => error instanceof Error && error.name === "AbortError";

/**
 * A transport error as a short cause of our own: clients and logs hear these words, not Bun's (whose
 * messages suggested `verbose: true` to fetch()). The one place such errors are put into words.
 */
export function transportCause(error: unknown): string {
  if (isUpstreamTimeout(error)) return "timed out";
  const code = typeof (error as { code?: unknown } | null)?.code === "string" ? (error as { code: string }).code : "";
  if (code === "ECONNREFUSED") return "connection refused";
  if (code === "ECONNRESET" || code === "EPIPE" || code === "ConnectionClosed") return "connection reset";
  if (code === "ENOTFOUND" || code.startsWith("EAI_") || code.startsWith("DNS")) return "DNS lookup failed";
  if (code === "EPROTO" || /CERT|TLS|SSL|SIGNATURE|ISSUER/.test(code)) return "TLS handshake or certificate failed";
  if (code === "EBADRESPONSE") return "malformed HTTP answer";
  if (code === "EPROXY" || code === "ERR_INVALID_PROXY") return "the proxy (HTTPS_PROXY / HTTP_PROXY) refused or is unusable";
  return "connection failed";
}

export async function callUpstream(call: UpstreamCall): Promise<UpstreamOutcome> {
  try {
    // A stream's body is decoded as it comes (it is bounded per event downstream); an answer read whole is
    // left in its coding for readAnswer to inflate within the cap (a 0.5 MB gzip bomb would be 512 MB).
    const answer = await send({ url: call.url, headers: call.headers, extra: call.extra, body: call.body, signal: call.clientSignal, timeoutMs: call.timeoutMs, pool: call.pool, decode: !call.whole });
    const status = answer.status;
    // A redirect is neither followed (the provider's key would go along) nor relayed (the client would
    // follow it to a host no one configured): an upstream fault, like any answer the gateway cannot use.
    if (status >= 300 && status < 400) {
      answer.body.cancel();
      return { ok: false, reason: "redirect", message: `upstream answered ${status}, a redirect the gateway does not follow` };
    }
    return { ok: true, answer: { status, ok: status >= 200 && status < 300, headers: answer.headers, body: answer.body, encoded: answer.encoded } };
  } catch (error) {
    if (call.clientSignal.aborted) return CLIENT_GONE;
    if (isUpstreamTimeout(error)) return { ok: false, reason: "timeout", message: `upstream stayed silent for ${call.timeoutMs / 1000} s` };
    return { ok: false, reason: "connect", message: `upstream unreachable: ${transportCause(error)}` };
  }
}

export const CLIENT_GONE: UpstreamFault = { ok: false, reason: "client_gone", message: "client disconnected" };

export interface PoolSettings {
  /** Idle keep-alive connections kept per upstream host; 0 closes each after its answer. */
  readonly maxIdlePerHost: number;
  readonly idleTimeoutSecs: number;
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
export const NOT_RELAYED = new NameSet([
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

/** Upstream response headers worth relaying to the client (content type, request ids, rate-limit info), as a Response's init takes them. */
export function relayHeaders(upstream: HeaderList): [string, string][] {
  return upstream.relayed(NOT_RELAYED);
}

/** What reading an answer's headers takes: the upstream client's HeaderList, or (in tests) a Headers. */
export type HeaderReader = Pick<Headers, "get">;
