// Sending a request to a lane's provider: credentials (the provider's own key, or the caller's under
// `upstream_credentials: passthrough`), the provider's static headers, the timeout and client abort.
import type { HeaderReader } from "../transport/upstream.ts";
import { ESTIMATE_WARNING } from "../ir/estimate.ts";
import { irError, type IrUsage } from "../ir/index.ts";
import type { AttemptResult, LaneTicket } from "../routing/failover.ts";
import type { ProtocolAdapter } from "../protocols/types.ts";
import type { ResolvedProvider } from "../providers/provider.ts";
import { Signer } from "../transport/sigv4.ts";
import type { Snapshot } from "../config/snapshot.ts";
import { readAnswer, type AnswerRead } from "../transport/answer.ts";
import type { UpstreamBody } from "../transport/body.ts";
import { SseEventTooLarge } from "../transport/sse.ts";
import { callUpstream, isUpstreamTimeout, upstreamUrl, type UpstreamFault, type UpstreamOutcome } from "../transport/upstream.ts";
import type { Exchange } from "./exchange.ts";

export interface UpstreamRequest {
  readonly path: string;
  readonly body: string;
  /** A non-stream call: its answer is read whole (readWhole), within the cap. */
  readonly whole: boolean;
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

/**
 * The trace context an upstream call carries: this attempt's CLIENT span as `traceparent` (and the incoming
 * `tracestate`) when the request is traced; else the client's own, passed on unchanged; else none.
 */
function traceHeaders(exchange: Exchange): Record<string, string> | undefined {
  const trace = exchange.trace;
  if (trace) return trace.tracestate === null ? { traceparent: trace.traceparent } : { traceparent: trace.traceparent, tracestate: trace.tracestate };
  const incoming = exchange.request.headers.get("traceparent");
  if (incoming === null) return undefined;
  const state = exchange.request.headers.get("tracestate");
  return state === null ? { traceparent: incoming } : { traceparent: incoming, tracestate: state };
}

export function sendUpstream(exchange: Exchange, egress: ProtocolAdapter, upstream: UpstreamRequest): Promise<UpstreamOutcome> {
  const { snapshot, lane, request, ingress } = exchange;
  const provider = lane.provider;
  const traced = traceHeaders(exchange);
  const extra = traced ? { ...upstream.headers, ...traced } : upstream.headers;
  if (snapshot.auth.upstreamCredentials === "passthrough") {
    const headers = buildHeaders(egress, provider, ingress.clientCredential(request), extra);
    return callProvider(snapshot, provider, upstream, headers, request.signal, false);
  }
  // A signed request signs every header it carries, so a forwarded one joins the signed set.
  const forwarded = extra !== undefined && Object.keys(extra).length > 0 ? extra : undefined;
  if (forwarded && provider.aws) return callProvider(snapshot, provider, upstream, buildHeaders(egress, provider, provider.apiKey?.reveal(), forwarded), request.signal, true);
  return callProvider(snapshot, provider, upstream, ownKeyHeaders(egress, provider), request.signal, true, forwarded);
}

/** The provider's own key and static headers: the same for every call, so built once per provider. */
export function ownKeyHeaders(egress: ProtocolAdapter, provider: ResolvedProvider): Record<string, string> {
  let headers = ownHeaders.get(provider);
  if (!headers) ownHeaders.set(provider, (headers = buildHeaders(egress, provider, provider.apiKey?.reveal(), undefined)));
  return headers;
}

/** One call to a provider; Bedrock with AWS keys (and its own credentials) is signed per request. */
export function callProvider(
  snapshot: Snapshot,
  provider: ResolvedProvider,
  upstream: UpstreamRequest,
  headers: Record<string, string>,
  signal: AbortSignal,
  sign: boolean,
  /** A client's forwarded headers, beside the provider's own (never with a signed request: see sendUpstream). */
  extra?: Record<string, string>,
): Promise<UpstreamOutcome> {
  const limits = snapshot.limits;
  const url = upstreamUrl(provider, upstream.path);
  const signed = provider.aws && sign ? { ...headers, ...signerOf(provider, provider.aws).sign("POST", url, headers, upstream.body) } : headers;
  return callUpstream({ url, pool: limits.pool, headers: signed, extra, body: upstream.body, clientSignal: signal, timeoutMs: limits.upstreamTimeoutMs, whole: upstream.whole });
}

/** One signer per provider (and so per snapshot): its signing key and header block outlive a request. */
const signers = new WeakMap<ResolvedProvider, Signer>();

function signerOf(provider: ResolvedProvider, aws: NonNullable<ResolvedProvider["aws"]>): Signer {
  let signer = signers.get(provider);
  if (!signer) {
    const credentials = { accessKeyId: aws.accessKeyId.reveal(), secretAccessKey: aws.secretAccessKey.reveal(), sessionToken: aws.sessionToken?.reveal() };
    signers.set(provider, (signer = new Signer(credentials, provider.region ?? "us-east-1", "bedrock")));
  }
  return signer;
}

/** An upstream that gave no usable answer (none, too large, cut short): a failure routing may fail over from, told in the caller's shape. */
export function noAnswerFailure(ingress: ProtocolAdapter, outcome: UpstreamFault): AttemptResult<Response> {
  const error =
    outcome.reason === "timeout" ? irError("timeout", outcome.message, { failure: "transient" }) : irError("api_error", outcome.message, { status: 502, failure: "transient" });
  const cause = outcome.reason === "timeout" || outcome.reason === "connect" || outcome.reason === "client_gone" ? outcome.reason : "upstream";
  return { ok: false, error, cause, relay: () => ingress.encodeError(error) };
}

/** An upstream answer read whole, within `limits.max_upstream_response_bytes` and the request's deadline. */
export function readWhole(exchange: Exchange, ticket: LaneTicket, outcome: Extract<UpstreamOutcome, { ok: true }>): AnswerRead | Promise<AnswerRead> {
  const { snapshot, deps, request } = exchange;
  return readAnswer(outcome.answer, { maxBytes: snapshot.limits.maxUpstreamResponseBytes, deadline: ticket.deadline ?? Infinity, now: deps.now, clientSignal: request.signal });
}

/**
 * Why a 2xx is not the answer its protocol promises, or undefined when its content type fits: a stream's
 * must be the stream's own (`streamType`: the adapter's stream content type), a whole answer's JSON. An
 * absent content type is let through (the body is judged instead). Only a media type that looks like one
 * is quoted.
 */
export function contentTypeProblem(headers: HeaderReader, streamType?: string): string | undefined {
  const header = headers.get("content-type");
  if (header === null) return undefined;
  const media = mediaType(header);
  const wanted = streamType === undefined ? "JSON" : mediaType(streamType);
  if (streamType === undefined ? media === "application/json" || media.endsWith("+json") : media === wanted) return undefined;
  const shown = /^[a-z0-9.+-]{1,40}\/[a-z0-9.+-]{1,60}$/.test(media) ? media : "an unrecognised type";
  return `the upstream answered 2xx with content of type ${shown}, not ${wanted}`;
}

/** The media type alone, lowercase; the usual exact `application/json`, and the last header seen again, take no copy. */
function mediaType(contentType: string): string {
  if (contentType === "application/json") return contentType;
  if (contentType !== lastType[0]) lastType = [contentType, contentType.split(";", 1)[0]!.trim().toLowerCase()];
  return lastType[1];
}
/** An upstream sends one content type for all its streams: `text/event-stream; charset=utf-8` is cut once. */
let lastType: readonly [string, string] = ["", ""];

/**
 * A 2xx that is not the answer its protocol promises (a stream that ended or broke before its first byte,
 * a wrong content type, a body that is not a JSON object): an upstream fault routing may fail over from,
 * never relayed. The message names the cause, never the body; a `body` given is dropped unread.
 */
export function badAnswerFailure(ingress: ProtocolAdapter, message: string, body?: UpstreamBody): AttemptResult<Response> {
  body?.cancel();
  const error = irError("api_error", message, { status: 502, failure: "transient" });
  return { ok: false, error, cause: "upstream", relay: () => ingress.encodeError(error) };
}

/**
 * The first piece of an upstream stream, read before anything reaches the client (until then the request
 * may fail over), or the failure that came instead: a stall, a break, or an end before any byte.
 */
export async function firstPiece(body: UpstreamBody, ingress: ProtocolAdapter): Promise<{ ok: true; value: Uint8Array } | { ok: false; failure: AttemptResult<Response> }> {
  try {
    for (;;) {
      const piece = await body.read();
      if (piece === null) return { ok: false, failure: endedBeforeFirst(ingress) };
      if (piece.byteLength > 0) return { ok: true, value: piece };
    }
  } catch (error) {
    return { ok: false, failure: failedBeforeFirst(ingress, error) };
  }
}

/** A stream that ended before its first item. */
export const endedBeforeFirst = (ingress: ProtocolAdapter) => badAnswerFailure(ingress, "the upstream stream ended before it began");

/** A stream that failed before its first item: the upstream stalled, broke off, or sent an event past the cap. */
export function failedBeforeFirst(ingress: ProtocolAdapter, error: unknown): AttemptResult<Response> {
  if (isUpstreamTimeout(error)) return noAnswerFailure(ingress, { ok: false, reason: "timeout", message: "the upstream stopped answering" });
  return badAnswerFailure(ingress, error instanceof SseEventTooLarge ? error.message : "the upstream stream broke off before it began");
}

/** Marks a charge the upstream gave no usage for: one warning line and the lane's estimate counter (docs/operations.md). */
export function markEstimate(exchange: Exchange, usage: IrUsage): void {
  exchange.deps.metrics.usageEstimates.at(exchange.lane.name).inc();
  exchange.deps.logger.warn(ESTIMATE_WARNING, { model: exchange.model, lane: exchange.lane.name, ...usage });
}
