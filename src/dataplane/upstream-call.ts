// Sending a request to a lane's provider: credentials (the provider's own key, or the caller's under
// `upstream_credentials: passthrough`), the provider's static headers, the timeout and client abort.
import { irError, type IrError } from "../ir/index.ts";
import type { ProtocolAdapter } from "../protocols/types.ts";
import type { ResolvedProvider } from "../providers/provider.ts";
import { callUpstream, sessionFor, upstreamUrl, type UpstreamOutcome } from "../transport/upstream.ts";
import type { Exchange } from "./pipeline.ts";

export interface UpstreamRequest {
  readonly path: string;
  readonly body: string;
  /** Extra request headers (same-protocol routes forward a few of the client's). */
  readonly headers?: Record<string, string>;
}

function buildHeaders(egress: ProtocolAdapter, provider: ResolvedProvider, key: string | undefined, extra: Record<string, string> | undefined): Record<string, string> {
  return { "content-type": "application/json", ...extra, ...(key ? egress.authHeaders(key) : {}), ...provider.headers };
}

/**
 * With the provider's own key the headers depend only on the provider (and so on the snapshot): built
 * on a provider's first call and reused. A new snapshot has new provider objects, so nothing goes stale.
 */
const ownHeaders = new WeakMap<ResolvedProvider, Record<string, string>>();

export async function sendUpstream(exchange: Exchange, egress: ProtocolAdapter, upstream: UpstreamRequest): Promise<UpstreamOutcome> {
  const { snapshot, lane, request, ingress, deps } = exchange;
  const provider = lane.provider;
  let headers: Record<string, string>;
  if (snapshot.auth.upstreamCredentials === "passthrough") headers = buildHeaders(egress, provider, ingress.clientCredential(request), upstream.headers);
  else if (upstream.headers && Object.keys(upstream.headers).length > 0) headers = buildHeaders(egress, provider, provider.apiKey?.reveal(), upstream.headers);
  else {
    headers = ownHeaders.get(provider) ?? buildHeaders(egress, provider, provider.apiKey?.reveal(), undefined);
    ownHeaders.set(provider, headers);
  }
  const limits = snapshot.limits;
  const session = sessionFor(provider.origin, limits.pool);
  return callUpstream({ url: upstreamUrl(provider, upstream.path), session, headers, body: upstream.body, clientSignal: request.signal, timeoutMs: limits.upstreamTimeoutMs }, deps.fetch);
}

/** An upstream that gave no HTTP answer, as an IR error for the ingress encoder. */
export function noAnswerError(outcome: Extract<UpstreamOutcome, { ok: false }>): IrError {
  return outcome.reason === "timeout"
    ? irError("timeout", outcome.message, { failure: "transient" })
    : irError("api_error", outcome.message, { status: 502, failure: "transient" });
}
