// One model request, whatever the ingress protocol: authenticate, read the body, find the pool, then let
// the routing engine try its lanes (routing/failover.ts). Each attempt takes one of three paths: the
// in-process mock (through the IR), same protocol (bytes pass through), or another protocol (through
// the IR). Errors answer in the ingress protocol's own shape.
import type { IngressPrincipal } from "../auth/ingress-chain.ts";
import { poolFor, type Snapshot } from "../config/snapshot.ts";
import { closeConnection } from "../http/serve.ts";
import { irError, type IrError, type IrRequest } from "../ir/index.ts";
import type { RequestMeter } from "../governance/metering.ts";
import type { InboundSlot } from "./inbound-limit.ts";
import { modelNameProblem } from "./model-name.ts";
import { parseBody, parseBodyBytes, readBodyBytes, readBodyText, type Refusal } from "./request-body.ts";
import type { IngressContext, ProtocolAdapter } from "../protocols/types.ts";
import { gateRequest, type Hooked } from "../hooks/request.ts";
import { decodeIr } from "./decode.ts";
import { route as routeRequest, type AttemptResult, type LaneTicket, type RouteOptions, type Routed, type RoutingCounters } from "../routing/failover.ts";
import type { Lane } from "../routing/lane.ts";
import type { Pool } from "../routing/pool.ts";
import { LANE_DEFAULT_CELL, type RoutingState } from "../routing/state.ts";
import type { DataPlaneMetrics } from "../telemetry/metrics.ts";
import { isUpstreamTimeout } from "../transport/upstream.ts";
import type { Exchange, PipelineDeps, StreamWatcher } from "./exchange.ts";
import { RequestTrail } from "../telemetry/trail.ts";
import { attemptEnded, trailCounters, TrailMeter } from "./request-trail.ts";
import { requestIdOf } from "../telemetry/trace-context.ts";
import { answerFromMock } from "./mock-path.ts";
import { passThrough } from "./passthrough.ts";
import { translate } from "./translate.ts";
import { unknownModelMessage } from "./unknown.ts";

export interface ModelRoute {
  readonly context?: IngressContext;
  /** Direct routes name their lane and skip pool selection. */
  readonly lane?: (snapshot: Snapshot, body: Record<string, unknown>) => Lane | undefined;
}

type Admission = { ok: true; principal: IngressPrincipal; body: Record<string, unknown> } | Refusal;
const UNAUTHENTICATED: Admission = { ok: false, error: irError("authentication", "Invalid or missing API key.") };

/**
 * The caller's principal and body. A credential in a header is judged before the body is read; a
 * SigV4-signed Bedrock request signs its body, so that body is read first and verified as the bytes it
 * signed (the same buffer the body is parsed from).
 */
async function admit(deps: PipelineDeps, snapshot: Snapshot, ingress: ProtocolAdapter, request: Request): Promise<Admission> {
  const authorization = ingress.name === "bedrock" ? request.headers.get("authorization") : null;
  const signed = authorization !== null && authorization.startsWith(SIGV4_SCHEME);
  if (!signed) {
    let principal = deps.auth.authenticate(snapshot, { token: ingress.clientCredential(request) });
    if (principal instanceof Promise) principal = await principal;
    if (!principal) return UNAUTHENTICATED;
    if (principal.refusal !== undefined) return { ok: false, error: irError("permission", principal.refusal) };
    const read = await readBodyText(request, snapshot.limits.bodyReadTimeoutMs);
    if (!read.ok) return read;
    const parsed = parseBody(read.value);
    return parsed.ok ? { ok: true, principal, body: parsed.body } : parsed;
  }
  const read = await readBodyBytes(request, snapshot.limits.bodyReadTimeoutMs);
  if (!read.ok) return read;
  const caller = await deps.auth.authenticate(snapshot, { token: undefined, signed: { method: request.method, url: request.url, headers: request.headers, body: read.value } });
  if (!caller) return UNAUTHENTICATED;
  const parsed = parseBodyBytes(read.value);
  return parsed.ok ? { ok: true, principal: caller, body: parsed.body } : parsed;
}

const SIGV4_SCHEME = "AWS4-HMAC-SHA256 ";

/** A body that cannot become IR: the caller's 400, told before any lane is judged. */
class DecodeRefused extends Error {
  constructor(readonly error: IrError) {
    super(error.message);
  }
}

type Outcome = "ok" | "client_error" | "exhausted" | "error";

/**
 * Counts the request and its duration under its pool ("" before one is known), tells its trail, and hands
 * the answer on. A streamed answer is counted when its stream settles (ModelCall.streamEnded), so a stream
 * that breaks mid-way is an error, not ok.
 */
function done(deps: PipelineDeps, ingress: ProtocolAdapter, pool: string, started: number, response: Response, outcome: Outcome, trail?: RequestTrail, streaming = false): Response {
  if (!streaming) count(deps, ingress.name, pool, started, outcome);
  trail?.answered(response.status, outcome);
  return response;
}

function count(deps: PipelineDeps, ingress: string, pool: string, started: number, outcome: Outcome): void {
  deps.metrics.requests.at(ingress, pool, outcome).inc();
  deps.metrics.duration.at(ingress, pool).observe((performance.now() - started) / 1000);
}

export async function handleModelRequest(deps: PipelineDeps, ingress: ProtocolAdapter, request: Request, route: ModelRoute = {}): Promise<Response> {
  const requestId = requestIdOf(request.headers);
  const trail = deps.telemetry ? new RequestTrail(deps.telemetry, requestId, ingress.name, request.headers) : undefined;
  const answer = await admitInbound(deps, ingress, request, route, trail);
  // A relayed upstream answer's own id stays readable beside ours (a vendor's support asks for it).
  const upstreamId = answer.headers.get("x-request-id");
  if (upstreamId !== null && upstreamId !== requestId) answer.headers.set("x-upstream-request-id", upstreamId);
  answer.headers.set("x-request-id", requestId);
  return answer;
}

async function admitInbound(deps: PipelineDeps, ingress: ProtocolAdapter, request: Request, route: ModelRoute, trail: RequestTrail | undefined): Promise<Response> {
  if (!deps.inbound) return serveModelRequest(deps, ingress, request, route, undefined, trail);
  const slot = deps.inbound.enter();
  if (!slot) {
    const full = irError("overloaded", `The gateway has ${deps.inbound.cap} requests in flight (limits.max_inbound_concurrent); retry after 1 s.`, { status: 503, retryAfterSecs: 1 });
    trail?.failed(full);
    return done(deps, ingress, "", performance.now(), ingress.encodeError(full), "exhausted", trail);
  }
  try {
    return await serveModelRequest(deps, ingress, request, route, slot, trail);
  } finally {
    // A streamed answer deferred its end to the stream (streamTicket); anything else is over here.
    slot.answered();
  }
}

/** A name that only picks a pool (the lane's own model goes upstream) may be spelt `vendor/model`. */
const ROUTED_NAME = { namespaced: true } as const;

async function serveModelRequest(deps: PipelineDeps, ingress: ProtocolAdapter, request: Request, route: ModelRoute, slot: InboundSlot | undefined, trail: RequestTrail | undefined): Promise<Response> {
  const started = performance.now();
  const snapshot = deps.holder.current;
  const refuse = (error: IrError, pool = "") => (trail?.failed(error), done(deps, ingress, pool, started, ingress.encodeError(error), "client_error", trail));

  const admitted = await admit(deps, snapshot, ingress, request);
  // The unread rest of a body over the limit, or one given up at its deadline, must not become the next request.
  if (!admitted.ok) return admitted.error.kind === "request_too_large" || admitted.error.status === 408 ? closeConnection(refuse(admitted.error)) : refuse(admitted.error);
  const { principal, body } = admitted;

  const context = route.context ?? {};
  const model = context.pathModel ?? (typeof body.model === "string" ? body.model : undefined);
  if (trail) {
    trail.principal = principal;
    trail.model = model ?? "";
    trail.requested(body);
  }
  if (model === undefined || model === "") return refuse(irError("invalid_request", "model: required", { param: "model" }));
  const pool = route.lane ? directPool(snapshot, route.lane(snapshot, body)) : poolFor(snapshot, model);
  // A name only a pattern pool (claude-*) matched is still the caller's text: it must be a model name too.
  if (!pool || (!route.lane && pool.name !== model && modelNameProblem(model, ROUTED_NAME))) {
    // Not a name any pool or model could have (a path, a query, control characters): a bad request, not an
    // unknown model. A direct route names `{provider}/{model}`; its model part (after the first `/`) is judged.
    const problem = route.lane ? modelNameProblem(model.slice(model.indexOf("/") + 1)) : modelNameProblem(model, ROUTED_NAME);
    return refuse(problem ? irError("invalid_request", problem, { param: "model" }) : irError("not_found", unknownModelMessage(snapshot, model, principal.allowedPools), { code: "model_not_found", param: "model" }));
  }
  if (trail) trail.pool = pool.name;
  if (principal.allowedPools && !principal.allowedPools.includes(pool.name)) return refuse(irError("permission", `This key may not use \`${model}\`.`), pool.name);
  // Gate hooks decide before anything is counted or dispatched (a pool without hooks skips this).
  const hooks = deps.hooks?.forPool(snapshot, pool.name);
  let hooked: Hooked | undefined;
  if (hooks) {
    let gated = gateRequest(deps.hooks!, hooks, { ingress, body, context, model, principal, pool, routing: deps.routing }, started);
    if (gated instanceof Promise) gated = await gated;
    if (!gated.ok) return refuse(gated.error, pool.name);
    hooked = gated.value;
  }
  // Group limits: admission counts the request and reserves its estimate before any lane is tried
  // (failures are not refunded; the estimate is settled when the request ends).
  let metered = deps.metering?.admit(principal, pool.name, model, { pool, body, bodyBytes: contentLength(request) });
  // A fleet's limited chain takes its reservation in the shared store (one round trip); all else answers at once.
  if (metered instanceof Promise) metered = await metered;
  if (metered && !metered.ok) return refuse(metered.error, pool.name);
  const meter = metered?.meter;

  const call = new ModelCall(deps, snapshot, ingress, request, body, context, model, meter, slot, hooked, trail, pool.name, started);
  let routed: Routed<Response>;
  try {
    routed = await routeRequest(pool, call);
  } catch (error) {
    meter?.answered();
    if (error instanceof DecodeRefused) return refuse(error.error, pool.name);
    // A body that stalls after the answer started (the upstream bound is also an idle bound).
    const failed = isUpstreamTimeout(error) ? irError("timeout", "the upstream stopped answering", { failure: "transient" }) : irError("api_error", "The gateway could not complete the request.");
    if (!isUpstreamTimeout(error)) deps.logger.error("request failed", { model, pool: pool.name, error });
    trail?.failed(failed);
    return done(deps, ingress, pool.name, started, ingress.encodeError(failed), "error", trail);
  }
  // A streamed answer holds its concurrency slots until the stream settles (streamTicket).
  meter?.answered();
  if (hooked && routed.kind !== "exhausted") answeredHooked(hooked, call.lane, routed);
  if (routed.kind === "answer") return done(deps, ingress, pool.name, started, routed.value, "ok", trail, call.streaming);
  if (routed.kind === "relay") {
    const caller = routed.failure === "caller" || routed.failure === "context_length";
    deps.logger.info("upstream error relayed", { request_id: trail?.requestId, model, pool: pool.name, lane: call.lane, status: routed.value.status });
    return done(deps, ingress, pool.name, started, routed.value, caller ? "client_error" : "error", trail);
  }
  const exhausted = irError("overloaded", `Every lane of \`${model}\` is cooling down or at capacity; retry after ${routed.retryAfterSecs} s.`, { retryAfterSecs: routed.retryAfterSecs });
  deps.logger.warn("pool exhausted", { model, pool: pool.name, retry_after_s: routed.retryAfterSecs });
  trail?.failed(exhausted, "exhausted");
  return done(deps, ingress, pool.name, started, ingress.encodeError(exhausted), "exhausted", trail);
}

/** The body's declared size; undefined for a chunked one (the estimate then measures the parsed body). */
function contentLength(request: Request): number | undefined {
  const bytes = Number(request.headers.get("content-length") ?? Number.NaN);
  return Number.isFinite(bytes) ? bytes : undefined;
}

/** One model request as the routing engine sees it: what each attempt at a lane does (one object, no closures per request). */
class ModelCall implements RouteOptions<Response>, StreamWatcher {
  readonly state: RoutingState;
  readonly counters: RoutingCounters;
  /** The answer is a stream handed out: the request is counted when it settles. */
  streaming = false;
  /** A routing policy's lane order (a gate's route verb or on_error first). */
  readonly order: RouteOptions<Response>["order"];
  /** The lane of the latest attempt (the routing and response taps name it). */
  lane = "";
  /** What each attempt's exchange meters through: the request's meter, or a TrailMeter around it. */
  private readonly attemptMeter: RequestMeter | undefined;
  /** The IR, built on the first lane that needs it (a same-protocol lane never does). */
  private ir: IrRequest | undefined;

  constructor(
    private readonly deps: PipelineDeps,
    private readonly snapshot: Snapshot,
    private readonly ingress: ProtocolAdapter,
    private readonly request: Request,
    private readonly body: Record<string, unknown>,
    private readonly context: IngressContext,
    private readonly model: string,
    private readonly meter: RequestMeter | undefined,
    private readonly slot: InboundSlot | undefined,
    private readonly hooked: Hooked | undefined,
    private readonly trail: RequestTrail | undefined,
    private readonly pool: string,
    private readonly started: number,
  ) {
    this.state = deps.routing;
    this.counters = trail ? trailCounters(routingCounters(deps.metrics), trail, deps.logger) : routingCounters(deps.metrics);
    // The ring alone takes billed usage; an exporter or the access line also an unmetered request's (read for them only).
    this.attemptMeter = trail && (meter || deps.telemetry!.readsUsage) ? new TrailMeter(trail, meter) : meter;
    this.order = hooked?.order;
  }

  streamStarted(): void {
    this.streaming = true;
    this.trail?.deferToStream();
  }

  streamEnded(how: "ok" | "broke" | "released", error?: IrError): void {
    const outcome = this.trail ? this.trail.streamEnded(how, error) : how === "ok" ? "ok" : how === "broke" ? "error" : "client_error";
    count(this.deps, this.ingress.name, this.pool, this.started, outcome);
  }

  poolNamed(name: string): Pool | undefined {
    return this.snapshot.pools.get(name);
  }

  attempt(lane: Lane, laneTicket: LaneTicket): Promise<AttemptResult<Response>> {
    const { deps, ingress, model } = this;
    // Debug, not warn: a client that always sends a member the IR does not model would flood the log;
    // the counter shows the rate, and debug logging shows which members.
    const warn = (warning: string) => {
      deps.metrics.translationWarnings.at(ingress.name, lane.provider.protocol).inc();
      deps.logger.debug("translation warning", { from: ingress.name, to: lane.provider.protocol, model, warning });
    };
    const trail = this.trail;
    const traceparent = trail?.attempt(lane);
    const exchange: Exchange = {
      deps,
      snapshot: this.snapshot,
      ingress,
      request: this.request,
      body: this.body,
      context: this.context,
      lane,
      model,
      warn,
      meter: this.attemptMeter,
      slot: this.slot,
      watcher: this,
      ...(traceparent && { trace: { traceparent, tracestate: trail!.traceState } }),
    };
    this.lane = lane.name;
    // An attempt's end is what its CLIENT span says; the record needs no promise per attempt for it.
    if (trail && deps.telemetry!.tracing) return this.dispatch(exchange, lane, laneTicket).then((result) => (attemptEnded(trail, result), result));
    return this.dispatch(exchange, lane, laneTicket);
  }

  private dispatch(exchange: Exchange, lane: Lane, laneTicket: LaneTicket): Promise<AttemptResult<Response>> {
    const { deps, ingress } = this;
    const warn = exchange.warn;
    const ticket = this.hooked ? this.hooked.attempted(lane.name, laneTicket) : laneTicket;
    // A transformed prompt exists only as IR: a same-protocol lane is sent it re-encoded, not the caller's bytes.
    if (lane.provider.protocol === ingress.name && !this.hooked?.transformed) return passThrough(exchange, ticket);
    const decoded = this.decode(warn);
    if (lane.provider.protocol === "mock") return answerFromMock(exchange, decoded, ticket);
    if (lane.provider.protocol !== ingress.name) deps.metrics.translations.at(ingress.name, lane.provider.protocol).inc();
    return translate(exchange, decoded, ticket);
  }

  private decode(warn: (warning: string) => void): IrRequest {
    if (this.ir) return this.ir;
    const decoded = this.hooked?.ir ?? decodeIr(this.ingress, this.body, this.context);
    if (!decoded.ok) throw new DecodeRefused(decoded.error);
    decoded.warnings.forEach(warn);
    return (this.ir = decoded.value);
  }
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

/** The route-policy header and the routing tap of an answered request with hooks; a relayed failure's response tap (an answer's fires from its ticket). */
function answeredHooked(hooked: Hooked, lane: string, routed: Exclude<Routed<Response>, { kind: "exhausted" }>): void {
  if (hooked.header !== undefined) routed.value.headers.set("x-gateway-route-policy", hooked.header);
  if (!hooked.taps) return;
  hooked.tap("routing", { lane });
  if (routed.kind === "relay") hooked.tap("response", { lane, status: routed.value.status });
}
