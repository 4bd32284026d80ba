// One model request, whatever the ingress protocol: authenticate, read the body, find the pool, then let
// the routing engine try its lanes (routing/failover.ts). Each attempt takes one of three paths: the
// in-process mock (through the IR), same protocol (bytes pass through), or another protocol (through
// the IR). Errors answer in the ingress protocol's own shape.
import { authenticateIngress } from "../auth/ingress-chain.ts";
import type { ConfigHolder, Snapshot } from "../config/snapshot.ts";
import { closeConnection, BodyTooLargeError } from "../http/serve.ts";
import { irError, type IrError, type IrRequest } from "../ir/index.ts";
import { mockRespond, mockStream } from "../providers/mock.ts";
import type { IngressContext, ProtocolAdapter } from "../protocols/types.ts";
import { route as routeRequest, type AttemptResult, type LaneTicket, type Routed, type RoutingCounters } from "../routing/failover.ts";
import type { Lane } from "../routing/lane.ts";
import type { Pool } from "../routing/pool.ts";
import { LANE_DEFAULT_CELL, type RoutingState } from "../routing/state.ts";
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
  /** Breakers and lane counters, shared by every request and kept across config swaps. */
  readonly routing: RoutingState;
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

/** A body that cannot become IR: the caller's 400, told before any lane is judged. */
class DecodeRefused extends Error {
  constructor(readonly error: IrError) {
    super(error.message);
  }
}

export async function handleModelRequest(deps: PipelineDeps, ingress: ProtocolAdapter, request: Request, route: ModelRoute = {}): Promise<Response> {
  const started = performance.now();
  const snapshot = deps.holder.current;
  let poolLabel = "";
  const done = (response: Response, outcome: "ok" | "client_error" | "exhausted" | "error") => {
    deps.metrics.requests.at(ingress.name, poolLabel, outcome).inc();
    deps.metrics.duration.at(ingress.name, poolLabel).observe((performance.now() - started) / 1000);
    return response;
  };
  const refuse = (error: IrError) => done(ingress.encodeError(error), "client_error");

  if (!authenticateIngress(snapshot, request)) return refuse(irError("authentication", "Invalid or missing API key."));
  const read = await readJsonObject(request);
  if (!read.ok) return read.error.kind === "request_too_large" ? closeConnection(refuse(read.error)) : refuse(read.error);
  const body = read.body;

  const context = route.context ?? {};
  const model = context.pathModel ?? (typeof body.model === "string" ? body.model : undefined);
  if (model === undefined || model === "") return refuse(irError("invalid_request", "model: required", { param: "model" }));
  const pool = route.lane ? directPool(snapshot, route.lane(snapshot, body)) : snapshot.pools.get(model);
  if (!pool) return refuse(irError("not_found", `The model \`${model}\` does not exist.`, { code: "model_not_found", param: "model" }));
  poolLabel = pool.name;

  const logger = deps.logger;
  // The IR is built once, on the first lane that needs it (a same-protocol lane never does).
  let ir: IrRequest | undefined;
  const decode = (exchange: Exchange): IrRequest => {
    if (ir) return ir;
    const decoded = ingress.decodeRequest(body, context);
    if (!decoded.ok) throw new DecodeRefused(decoded.error);
    decoded.warnings.forEach(exchange.warn);
    return (ir = decoded.value);
  };
  const attempt = (lane: Lane, ticket: LaneTicket): Promise<AttemptResult<Response>> => {
    // Debug, not warn: a client that always sends a member the IR does not model would flood the log;
    // the counter shows the rate, and debug logging shows which members.
    const warn = (warning: string) => {
      deps.metrics.translationWarnings.at(ingress.name, lane.provider.protocol).inc();
      logger.debug("translation warning", { from: ingress.name, to: lane.provider.protocol, model, warning });
    };
    const exchange: Exchange = { deps, snapshot, ingress, request, body, context, lane, model, warn };
    if (lane.provider.protocol === ingress.name) return passThrough(exchange, ticket);
    const decoded = decode(exchange);
    if (lane.provider.protocol === "mock") return answerFromMock(exchange, decoded, ticket);
    deps.metrics.translations.at(ingress.name, lane.provider.protocol).inc();
    return translate(exchange, decoded, ticket);
  };

  let routed: Routed<Response>;
  try {
    routed = await routeRequest(pool, { state: deps.routing, counters: routingCounters(deps.metrics), poolNamed: (name) => snapshot.pools.get(name), attempt });
  } catch (error) {
    if (error instanceof DecodeRefused) return refuse(error.error);
    // A body that stalls after the answer started (the upstream bound is also an idle bound).
    if (isUpstreamTimeout(error)) return done(ingress.encodeError(irError("timeout", "the upstream stopped answering", { failure: "transient" })), "error");
    logger.error("request failed", { model, pool: pool.name, error });
    return done(ingress.encodeError(irError("api_error", "The gateway could not complete the request.")), "error");
  }
  if (routed.kind === "answer") return done(routed.value, "ok");
  if (routed.kind === "relay") return done(routed.value, routed.failure === "caller" || routed.failure === "context_length" ? "client_error" : "error");
  const exhausted = irError("overloaded", `Every lane of \`${model}\` is cooling down or at capacity; retry after ${routed.retryAfterSecs} s.`, { retryAfterSecs: routed.retryAfterSecs });
  return done(ingress.encodeError(exhausted), "exhausted");
}

/** A direct route's one lane, as a pool over the lane-default cell (the one /stats shows). */
function directPool(snapshot: Snapshot, lane: Lane | undefined): Pool | undefined {
  if (!lane) return undefined;
  const { breaker, failover } = snapshot.laneDefaults;
  return { name: LANE_DEFAULT_CELL, members: [{ lane, weight: 1 }], breaker, failover, onExhausted: "reject", hooks: [], implicit: true };
}

const countersByMetrics = new WeakMap<DataPlaneMetrics, RoutingCounters>();
/** The routing engine's counters, as this process's metric series (built once). */
function routingCounters(metrics: DataPlaneMetrics): RoutingCounters {
  let counters = countersByMetrics.get(metrics);
  if (!counters) {
    counters = {
      attempt: (pool, lane) => metrics.attempts.at(pool, lane).inc(),
      failure: (pool, lane, disposition) => metrics.failures.at(pool, lane, disposition).inc(),
      trip: (pool, lane) => metrics.trips.at(pool, lane).inc(),
      failover: (pool, reason) => metrics.failovers.at(pool, reason).inc(),
    };
    countersByMetrics.set(metrics, counters);
  }
  return counters;
}

async function answerFromMock(exchange: Exchange, request: IrRequest, ticket: LaneTicket): Promise<AttemptResult<Response>> {
  const { ingress, lane, deps, warn } = exchange;
  if (request.stream) {
    const bytes = mockStream(lane, request, deps.now).pipeThrough(ingress.createStreamEncoder(request, warn));
    return { ok: true, value: new Response(settleWhenRead(bytes, ticket), { headers: ingress.streamHeaders }), settlesLater: true };
  }
  const response = await mockRespond(lane, request, deps.now);
  return { ok: true, value: Response.json(ingress.encodeResponse(response, warn)) };
}

/** Settles a stream's ticket when the client has read it to the end (or left). */
function settleWhenRead(bytes: ReadableStream<Uint8Array>, ticket: LaneTicket): ReadableStream<Uint8Array> {
  const reader = bytes.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) {
        ticket.ok();
        controller.close();
      } else controller.enqueue(value);
    },
    cancel(reason) {
      ticket.released();
      return reader.cancel(reason);
    },
  });
}
