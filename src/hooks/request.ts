// A request's hooks on the data plane: the request taps, then the gates (after auth, before routing),
// giving the pipeline a refusal or what the gates decided (lane order, a transformed IR) plus the taps
// the later stages fire. Only requests whose pool has hooks come here.
import type { IngressPrincipal } from "../auth/ingress-chain.ts";
import { irError, kindFromStatus, type IrError } from "../ir/index.ts";
import type { IngressContext, ProtocolAdapter } from "../protocols/types.ts";
import type { LaneTicket } from "../routing/failover.ts";
import type { Pool, PoolMember } from "../routing/pool.ts";
import type { RoutingState } from "../routing/state.ts";
import { decodeIr, type DecodedIr } from "../dataplane/decode.ts";
import { freezePrompt, runGates } from "./gates.ts";
import { applyPrompt, promptOf } from "./prompt.ts";
import { fire, type HookRuntime, type PoolHooks } from "./runtime.ts";
import type { TapQueue } from "./taps.ts";
import type { TapStage } from "./types.ts";

export interface Hooked {
  readonly requestId: string;
  readonly taps: Readonly<Record<TapStage, readonly TapQueue[]>> | undefined;
  readonly order: readonly PoolMember[] | undefined;
  /** The hook that chose `order` when the x-gateway-route-policy header is on. */
  readonly header: string | undefined;
  /** The IR decoded for the gates (with its decode warnings), transformed when `transformed`. */
  readonly ir: Extract<DecodedIr, { ok: true }> | undefined;
  /** A transform changed the prompt: every lane, same protocol included, is sent the IR. */
  readonly transformed: boolean;
  readonly tap: (stage: TapStage, extra?: { lane?: string; status?: number; duration_ms?: number }) => void;
  /** Each attempt: the candidate taps, and a ticket that tells the response taps when the answer (or its stream) ends. */
  readonly attempted: (lane: string, ticket: LaneTicket) => LaneTicket;
}

export interface HookedRequest {
  readonly ingress: ProtocolAdapter;
  readonly body: Record<string, unknown>;
  readonly context: IngressContext;
  readonly model: string;
  readonly principal: IngressPrincipal;
  readonly pool: Pool;
  readonly routing: RoutingState;
}

export type HookedResult = { ok: true; value: Hooked } | { ok: false; error: IrError };

/**
 * The request's hooks. A pool with taps only answers at once (no promise: the request does not wait a turn
 * for hooks it never waits for); with gates, once they have decided.
 */
export function gateRequest(runtime: HookRuntime, hooks: PoolHooks, req: HookedRequest, started: number): HookedResult | Promise<HookedResult> {
  const requestId = crypto.randomUUID();
  const { ingress, model, pool, body } = req;
  const base = { pool: pool.name, model, ingress_protocol: ingress.name, request_id: requestId };
  const taps = hooks.taps;
  const tap = (stage: TapStage, extra?: { lane?: string; status?: number; duration_ms?: number }) => {
    const queues = taps?.[stage];
    if (queues && queues.length > 0) fire(queues, { stage, ...base, ...extra });
  };
  const attempted = (lane: string, ticket: LaneTicket): LaneTicket => {
    tap("candidate", { lane });
    if (!taps || taps.response.length === 0) return ticket;
    const answered = (status: number) => tap("response", { lane, status, duration_ms: performance.now() - started });
    return { deadline: ticket.deadline, ok: () => (ticket.ok(), answered(200)), broke: (error) => (ticket.broke(error), answered(error.status)), released: () => ticket.released() };
  };
  tap("request");
  let ir: Hooked["ir"];
  if (hooks.needsPrompt) {
    const decoded = decodeIr(ingress, body, req.context);
    if (!decoded.ok) return decoded;
    ir = decoded;
  }
  const stream = ir ? ir.value.stream : body.stream === true || req.context.pathStream === true;
  if (hooks.gates.length === 0) return { ok: true, value: { requestId, taps, order: undefined, header: undefined, ir, transformed: false, tap, attempted } };
  return runGates(
    hooks,
    {
      model,
      ingress: ingress.name,
      stream,
      principal: req.principal,
      requestId,
      prompt: ir ? freezePrompt(promptOf(ir.value)) : undefined,
      members: pool.members,
      breakerOf: (lane) => req.routing.cell(pool.name, lane, pool.breaker).state,
    },
    runtime.deps,
  ).then((verdict): HookedResult => {
    if (verdict.kind === "reject") {
      // on_error reject is the gateway's own 503 (api_error: Anthropic would say 529 for "overloaded").
      const kind = verdict.policy === null ? "api_error" : kindFromStatus(verdict.status);
      return { ok: false, error: irError(kind, verdict.message, { status: verdict.status }) };
    }
    const transformed = verdict.prompt !== undefined && ir !== undefined;
    const transformedIr = transformed ? { ok: true as const, value: applyPrompt(ir!.value, verdict.prompt!), warnings: ir!.warnings } : undefined;
    const header = runtime.deps.routePolicyHeader ? verdict.policy : undefined;
    return { ok: true, value: { requestId, taps, order: verdict.order, header, ir: transformedIr ?? ir, transformed, tap, attempted } };
  });
}
