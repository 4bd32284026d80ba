// One model request, whatever the ingress protocol: authenticate, read the body, find the pool and a
// lane, then one of three paths: the in-process mock (through the IR), same protocol (bytes pass
// through), or another protocol (through the IR). Errors answer in the ingress protocol's own shape.
import { authenticateIngress } from "../auth/ingress-chain.ts";
import type { ConfigHolder, Snapshot } from "../config/snapshot.ts";
import { closeConnection, BodyTooLargeError } from "../http/serve.ts";
import { irError, type IrError, type IrRequest } from "../ir/index.ts";
import { mockRespond, mockStream } from "../providers/mock.ts";
import type { IngressContext, ProtocolAdapter } from "../protocols/types.ts";
import type { Lane } from "../routing/lane.ts";
import type { Logger } from "../telemetry/logger.ts";
import type { DataPlaneMetrics } from "../telemetry/metrics.ts";
import { isUpstreamTimeout, type UpstreamFetch } from "../transport/upstream.ts";
import { passThrough } from "./passthrough.ts";
import { translate } from "./translate.ts";

export interface PipelineDeps {
  readonly holder: ConfigHolder;
  readonly logger: Logger;
  readonly now: () => number;
  readonly metrics: DataPlaneMetrics;
  /** Injected so tests of the pipeline can see upstream calls; the binary uses fetch. */
  readonly fetch?: UpstreamFetch;
}

/** What every path needs about the request being served. */
export interface Exchange {
  readonly deps: PipelineDeps;
  readonly snapshot: Snapshot;
  readonly ingress: ProtocolAdapter;
  readonly request: Request;
  readonly body: Record<string, unknown>;
  readonly context: IngressContext;
  readonly lane: Lane;
  /** The model the client named (pool or alias). */
  readonly model: string;
  readonly warn: (warning: string) => void;
}

export interface ModelRoute {
  readonly context?: IngressContext;
  /** Direct routes name their lane and skip pool selection. */
  readonly lane?: (snapshot: Snapshot, body: Record<string, unknown>) => Lane | undefined;
}

/** The body as a JSON object, or the caller error to answer with (malformed, or a chunked body over the limit). */
async function readJsonObject(request: Request): Promise<{ ok: true; body: Record<string, unknown> } | { ok: false; error: IrError }> {
  const notAnObject = () => ({ ok: false as const, error: irError("invalid_request", "The request body must be a JSON object.") });
  try {
    const body: unknown = await request.json();
    return typeof body === "object" && body !== null && !Array.isArray(body) ? { ok: true, body: body as Record<string, unknown> } : notAnObject();
  } catch (error) {
    if (!(error instanceof BodyTooLargeError)) return notAnObject();
    return { ok: false, error: irError("request_too_large", error.message) };
  }
}

export async function handleModelRequest(deps: PipelineDeps, ingress: ProtocolAdapter, request: Request, route: ModelRoute = {}): Promise<Response> {
  const snapshot = deps.holder.current;
  if (!authenticateIngress(snapshot, request)) return ingress.encodeError(irError("authentication", "Invalid or missing API key."));
  const read = await readJsonObject(request);
  if (!read.ok) return read.error.kind === "request_too_large" ? closeConnection(ingress.encodeError(read.error)) : ingress.encodeError(read.error);
  const body = read.body;

  const context = route.context ?? {};
  const model = context.pathModel ?? (typeof body.model === "string" ? body.model : undefined);
  if (model === undefined || model === "") return ingress.encodeError(irError("invalid_request", "model: required", { param: "model" }));
  const lane = route.lane ? route.lane(snapshot, body) : snapshot.pools.get(model)?.members[0]?.lane;
  if (!lane) return ingress.encodeError(irError("not_found", `The model \`${model}\` does not exist.`, { code: "model_not_found", param: "model" }));

  const logger = deps.logger;
  const hop = { from: ingress.name, to: lane.provider.protocol };
  // Debug, not warn: a client that always sends a member the IR does not model would flood the log; the
  // counter shows the rate, and debug logging shows which members.
  const warn = (warning: string) => {
    deps.metrics.translationWarnings.inc(hop);
    logger.debug("translation warning", { ...hop, model, warning });
  };
  const exchange: Exchange = { deps, snapshot, ingress, request, body, context, lane, model, warn };

  try {
    if (lane.provider.protocol === ingress.name) return await passThrough(exchange);
    const decoded = ingress.decodeRequest(body, context);
    if (!decoded.ok) return ingress.encodeError(decoded.error);
    decoded.warnings.forEach(warn);
    if (lane.provider.protocol === "mock") return await answerFromMock(exchange, decoded.value);
    deps.metrics.translations.inc(hop);
    return await translate(exchange, decoded.value);
  } catch (error) {
    // A body that stalls after the answer started (the upstream bound is also an idle bound).
    if (isUpstreamTimeout(error)) return ingress.encodeError(irError("timeout", "the upstream stopped answering", { failure: "transient" }));
    logger.error("request failed", { model, lane: lane.name, error });
    return ingress.encodeError(irError("api_error", "The gateway could not complete the request."));
  }
}

async function answerFromMock(exchange: Exchange, request: IrRequest): Promise<Response> {
  const { ingress, lane, deps, warn } = exchange;
  if (request.stream) {
    const bytes = mockStream(lane, request, deps.now).pipeThrough(ingress.createStreamEncoder(request, warn));
    return new Response(bytes, { headers: ingress.streamHeaders });
  }
  const response = await mockRespond(lane, request, deps.now);
  return Response.json(ingress.encodeResponse(response, warn));
}
