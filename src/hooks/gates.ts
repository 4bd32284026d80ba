// The gates of one request, in ascending priority: each asked the gate call (design: hooks-plugins.md),
// its decision checked, and a timeout, throw or invalid answer turned into its on_error. The first reject
// ends the walk; transforms chain; the last route wins.
import type { IngressPrincipal } from "../auth/ingress-chain.ts";
import type { PoolMember } from "../routing/pool.ts";
import type { RoutingState } from "../routing/state.ts";
import type { Logger } from "../telemetry/logger.ts";
import type { DataPlaneMetrics } from "../telemetry/metrics.ts";
import { validTransform } from "./prompt.ts";
import type { GateSpec, PoolHooks } from "./runtime.ts";
import { within } from "./taps.ts";
import type { GateCall, GateCandidate, GatePrompt } from "./types.ts";

export interface GateInput {
  readonly model: string;
  readonly ingress: string;
  readonly stream: boolean;
  readonly principal: IngressPrincipal;
  readonly requestId: string;
  /** Present when some gate sees the prompt. */
  readonly prompt: GatePrompt | undefined;
  readonly members: readonly PoolMember[];
  readonly breakerOf: (lane: string) => GateCandidate["state"];
}

export type GateVerdict =
  /** `policy` null: a gate's on_error `reject` (503), not a reject verb. */
  | { readonly kind: "reject"; readonly status: number; readonly message: string; readonly policy: string | null }
  | {
      readonly kind: "go";
      /** undefined = weighted order. */
      readonly order: readonly PoolMember[] | undefined;
      /** The hook whose route verb chose `order`. */
      readonly policy: string | undefined;
      /** The prompt after the transforms; undefined when none transformed. */
      readonly prompt: GatePrompt | undefined;
    };

export interface GateEnv {
  readonly logger: Logger;
  readonly metrics: DataPlaneMetrics;
}

class GateError extends Error {}

export async function runGates(hooks: PoolHooks, input: GateInput, env: GateEnv): Promise<GateVerdict> {
  const candidates = input.members.map((m) => ({ lane: m.lane.name, provider: m.lane.provider.name, model: m.lane.upstreamModel, weight: m.weight, state: input.breakerOf(m.lane.name) }));
  const user = { principal: input.principal.id, key_id: input.principal.module === "keys" ? input.principal.id : null, group: input.principal.group ?? null };
  let prompt = input.prompt;
  let transformed = false;
  let order: readonly PoolMember[] | undefined;
  let policy: string | undefined;
  for (const gate of hooks.gates) {
    let spec: GateSpec | undefined = gate;
    const tried = new Set<string>();
    while (spec) {
      tried.add(spec.name);
      const call: GateCall = {
        stage: "request",
        hook: spec.name,
        pool: hooks.pool,
        model: input.model,
        ingress_protocol: input.ingress,
        stream: input.stream,
        candidates,
        ...(spec.prompt !== "no" && prompt ? { prompt } : {}),
        ...(spec.user === "ro" ? { user } : {}),
        request_id: input.requestId,
      };
      let failure: string;
      try {
        const decision = await decide(spec, call);
        const verb = decision.verb;
        if (verb === "continue" || verb === "abstain") break;
        if (verb === "reject") {
          const { status, message } = decision as { status: unknown; message: unknown };
          if (!Number.isInteger(status) || (status as number) < 400 || (status as number) > 499 || typeof message !== "string") throw new GateError("reject needs a 4xx status and a message");
          env.metrics.routePolicyRejections.at(hooks.pool, spec.name, String(status)).inc();
          return { kind: "reject", status: status as number, message, policy: spec.name };
        }
        if (verb === "transform") {
          if (spec.prompt !== "rw" || !prompt) throw new GateError("transform needs prompt: rw");
          const next = (decision as { prompt?: unknown }).prompt;
          if (!validTransform(next, prompt)) throw new GateError("transform prompt does not match the request's messages");
          prompt = freezePrompt({ system: next.system === undefined ? prompt.system : next.system, messages: next.messages.map((m) => ({ role: m.role, text: m.text })) });
          transformed = true;
          break;
        }
        if (verb === "route") {
          const named = (decision as { order?: unknown }).order;
          if (!Array.isArray(named)) throw new GateError("route needs an order");
          const members = named.flatMap((lane) => (typeof lane === "string" && hooks.lanes.has(lane) ? [hooks.lanes.get(lane)!] : []));
          if (members.length === 0) break; // unknown or empty order: abstain
          order = [...new Set(members)];
          policy = spec.name;
          env.metrics.routePolicySelections.at(hooks.pool, spec.name).inc();
          break;
        }
        throw new GateError(`unknown verb ${JSON.stringify(verb)?.slice(0, 40)}`);
      } catch (error) {
        failure = error instanceof Error ? error.message : String(error);
      }
      env.logger.warn("hook gate fell back", { hook: spec.name, cause: failure, on_error: spec.onError, pool: hooks.pool });
      const fallback = spec.onError;
      if (fallback === "nothing") break;
      if (fallback === "reject") return { kind: "reject", status: 503, message: `The routing policy ${spec.name} did not answer; retry later.`, policy: null };
      if (fallback === "weighted") {
        order = undefined;
        policy = undefined;
        break;
      }
      if (fallback === "first") {
        order = input.members;
        policy = undefined;
        break;
      }
      spec = hooks.specs.get(fallback);
      // A cycle is refused at load; a chain that still comes back (or names no gate) ends as `nothing`.
      if (spec && tried.has(spec.name)) spec = undefined;
    }
  }
  return { kind: "go", order, policy, prompt: transformed ? prompt : undefined };
}

async function decide(spec: GateSpec, call: GateCall): Promise<{ verb?: unknown }> {
  const instance = spec.entry.instance;
  if (!instance?.gate) throw new GateError(spec.entry.failure ?? "not loaded");
  const answer = instance.gate(call);
  const decision: unknown = answer instanceof Promise ? await within(answer, spec.timeoutMs) : answer;
  if (typeof decision !== "object" || decision === null) throw new GateError("the decision is not an object");
  return decision as { verb?: unknown };
}

export function freezePrompt(prompt: GatePrompt): GatePrompt {
  prompt.messages.forEach(Object.freeze);
  Object.freeze(prompt.messages);
  return Object.freeze(prompt);
}
