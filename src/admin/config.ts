// GET /config (the effective config, never a secret) and POST /config/validate (a dry run).
import { jsonController } from "../http/elysia.ts";
import { checkConfig } from "../config/load.ts";
import { GatewayError } from "../http/errors.ts";
import type { Snapshot } from "../config/snapshot.ts";
import { authView } from "./auth.ts";
import type { AdminDeps } from "./deps.ts";
import { scopeOf } from "./principal.ts";
import { ConfigBody, ConfigValidateView, EffectiveConfigView } from "./views.ts";

const sortedKeys = (bag: object | undefined) => Object.keys(bag ?? {}).sort();

export function effectiveConfigView(snapshot: Snapshot): EffectiveConfigView {
  const config = snapshot.config;
  return {
    version: snapshot.version,
    auth: authView(snapshot),
    pools: [...snapshot.pools.values()].map((pool) => ({
      name: pool.name,
      members: pool.members.map((m) => ({ model: m.lane.name, weight: m.weight })),
      breaker: { ...pool.breaker },
      failover: { ...pool.failover },
      on_exhausted: pool.onExhausted,
      hooks: [...pool.hooks],
      implicit: pool.implicit,
    })),
    models: [...snapshot.lanes.values()].map((lane) => ({
      name: lane.name,
      provider: lane.provider.name,
      model: lane.upstreamModel,
      context_window: lane.contextWindow,
      max_concurrent: lane.maxConcurrent,
      max_requests: lane.maxRequests,
    })),
    providers: [...snapshot.providers.values()].map((p) => ({
      name: p.name,
      protocol: p.protocol,
      base_url: p.shownBaseUrl ?? null,
      region: p.region ?? null,
      api_key_configured: p.apiKey !== undefined && !p.apiKey.empty,
      header_names: sortedKeys(p.headers),
      query_names: sortedKeys(p.query),
      health: { ...p.health },
    })),
    hooks: hookViews(snapshot),
    global_hooks: [...snapshot.globalHooks],
  };
}

/** Every hook of a snapshot as HookView (no payload: settings are shown as key names only). */
export function hookViews(snapshot: Snapshot): EffectiveConfigView["hooks"] {
  return Object.entries(snapshot.config.hooks ?? {}).map(([name, h]) => ({
      name,
      kind: h.kind,
      transport: { kind: h.transport?.kind ?? "none", target: h.transport?.target ?? null },
      prompt: h.prompt ?? "no",
      user: h.user ?? "no",
      priority: h.priority ?? 0,
      at: h.at ?? null,
      on_error: h.on_error ?? "weighted",
      timeout_ms: h.timeout_ms ?? 200,
      settings_keys: sortedKeys(h.settings),
      global: snapshot.globalHooks.includes(name),
    }));
}

/**
 * A dry run, applying nothing. With full scope, exactly as boot would check it (schema, references,
 * `${VAR}`, secrets, files). With read-only scope, nothing is read from the environment or the disk:
 * a read-only principal must not learn a value, nor whether a variable or a file exists, through it.
 * A text refused whole (too deep, an alias bomb) is a bad request (400), not a verdict.
 */
export function validateProposal(body: { config: unknown } | { yaml: string }, env: AdminDeps["env"], scope: "read-only" | "full"): { ok: boolean; errors: string[] } {
  const verdict = checkConfig(body, { env, resolve: scope === "full" });
  if (verdict.refused) throw new GatewayError("invalid_request", verdict.errors.join("; "));
  return { ok: verdict.ok, errors: verdict.errors };
}

export const configController = (deps: AdminDeps) =>
  jsonController("admin.config")
    .get("/config", () => effectiveConfigView(deps.holder.current), { response: { 200: EffectiveConfigView } })
    .post("/config/validate", ({ body, request }) => validateProposal(body, deps.env, scopeOf(request)), {
      body: ConfigBody,
      response: { 200: ConfigValidateView },
    });
