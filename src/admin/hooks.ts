// Hooks on the admin plane (hooks-plugins.md "Admin routes and views", gaps.md "Hooks"): PUT and DELETE
// /hooks/{name} commit a config version through the config lifecycle, audited once as hook.register /
// hook.delete on hook:<name>; the reads show HookView, and ask the hook runtime for health, status and
// schema. No view, error or audit entry carries a settings value: settings are shown by key name only.
import { Type } from "@sinclair/typebox";
import { HOOK_TERMINALS, HookCfg } from "../config/schema.ts";
import type { ConfigTree } from "../config/lifecycle.ts";
import type { Snapshot } from "../config/snapshot.ts";
import type { HookReportedStatus, HookRuntimeView } from "../hooks/types.ts";
import { jsonController } from "../http/elysia.ts";
import { GatewayError } from "../http/errors.ts";
import { auditedChange, expectedVersion, refuseBody } from "./audited.ts";
import { hookViews } from "./config.ts";
import { lifecycleOf } from "./config-changes.ts";
import type { AdminDeps } from "./deps.ts";
import { requestBody } from "./openapi.ts";
import { shape } from "./pages.ts";
import { principalOf } from "./principal.ts";
import { ExpectedVersion, HookChangeView, HookHealthView, HookSchemaView, HookStatusView, HookView } from "./views.ts";

/** hooks-plugins.md: names safe in paths and metric labels, and never an on_error word. */
const HOOK_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
/** How long GET /hooks/{name}/status waits for the hook's own status() (hooks-plugins.md). */
export const STATUS_WAIT_MS = 1000;

/** HookCfg (as src/config/schema.ts has it) plus the optional expected_version of every config mutation. */
const HookPutBody = Type.Object({ ...HookCfg.properties, expected_version: ExpectedVersion }, { additionalProperties: false, description: "a HookCfg, plus an optional expected_version" });

type Bag = Record<string, unknown>;
const bag = (value: unknown): Bag => (typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Bag) : {});

function nameProblem(name: string): string | undefined {
  if ((HOOK_TERMINALS as readonly string[]).includes(name)) return `hook name ${JSON.stringify(name)} is a reserved on_error word (${HOOK_TERMINALS.join(", ")})`;
  if (!HOOK_NAME.test(name)) return `hook name: expected lower-case letters, digits and . _ - (at most 64, starting with a letter or digit), got ${JSON.stringify(name.length > 70 ? `${name.slice(0, 67)}...` : name)}`;
  return undefined;
}

function hookView(snapshot: Snapshot, name: string) {
  const view = hookViews(snapshot).find((h) => h.name === name);
  if (!view) throw new GatewayError("not_found", `no hook named ${JSON.stringify(name)}`);
  return view;
}

/** Who still needs the hook: other hooks falling back to it, pools (and the global list) firing it. */
function usersOf(config: Snapshot["config"], name: string): string[] {
  const users = Object.entries(config.hooks ?? {}).flatMap(([other, h]) => (other !== name && h.on_error === name ? [`hook ${other} (on_error)`] : []));
  for (const [pool, p] of Object.entries(bag(config.pools))) {
    const hooks = pool === "hooks" ? p : bag(p).hooks;
    if (Array.isArray(hooks) && hooks.includes(name)) users.push(pool === "hooks" ? "pools.hooks (global)" : `pool ${pool}`);
  }
  return users;
}

function desiredVersion(deps: AdminDeps, name: string): number {
  const record = deps.lifecycle?.versions().at(-1);
  return record?.version === deps.holder.current.version ? (record.hookSettingsVersions[name] ?? 1) : 1;
}

const sortedStrings = (value: unknown): string[] | null => (Array.isArray(value) && value.every((k) => typeof k === "string") ? [...value].sort() : null);

/**
 * What a hook reported against what it should run. A plugin's answer is not trusted to be well formed:
 * names only, a version only when it is one. Drift: a desired key it does not run, a key it runs that is
 * no longer desired, or another settings_version.
 */
export function driftOf(desired: { settings_keys: readonly string[]; settings_version: number }, reported: HookReportedStatus) {
  const keys = sortedStrings(reported.settings_keys);
  const version = Number.isSafeInteger(reported.settings_version) && reported.settings_version >= 0 ? reported.settings_version : null;
  const driftKeys = desired.settings_keys.filter((k) => !keys?.includes(k));
  const drift = driftKeys.length > 0 || keys === null || keys.length !== desired.settings_keys.length || version !== desired.settings_version;
  return { reported: { settings_keys: keys, settings_version: version }, drift, drift_keys: driftKeys };
}

async function statusView(deps: AdminDeps, runtime: HookRuntimeView, name: string) {
  const view = hookView(deps.holder.current, name);
  const desired = { settings_keys: view.settings_keys, settings_version: desiredVersion(deps, name) };
  const base = { name, desired, metrics: [...runtime.metrics(name)], as_of: Math.floor(deps.now() / 1000), source: "live" as const };
  const reported = await runtime.reported(name, STATUS_WAIT_MS);
  if (reported === undefined) {
    return { ...base, reported: null, drift: null, drift_keys: [], note: `the hook did not answer within ${STATUS_WAIT_MS} ms (not loaded, no status(), or too slow)` };
  }
  return { ...base, ...driftOf(desired, reported) };
}

export const hooksController = (deps: AdminDeps) => {
  const runtime = () => deps.hookRuntime;
  return jsonController("admin.hooks")
    .get("/hooks", () => hookViews(deps.holder.current), { response: { 200: Type.Array(HookView) } })
    .get("/hooks/:name", ({ params }) => hookView(deps.holder.current, params.name), { response: { 200: HookView } })
    .get(
      "/hooks/:name/health",
      ({ params }) => {
        const { transport } = hookView(deps.holder.current, params.name);
        const { reachable, detail } = runtime().health(params.name);
        return { name: params.name, transport, reachable, detail };
      },
      { response: { 200: HookHealthView } },
    )
    .get("/hooks/:name/status", ({ params }) => statusView(deps, runtime(), params.name), { response: { 200: HookStatusView } })
    .get(
      "/hooks/:name/schema",
      ({ params }) => (hookView(deps.holder.current, params.name), { name: params.name, schema: runtime().schema(params.name) }),
      { response: { 200: HookSchemaView } },
    )
    .put(
      "/hooks/:name",
      async ({ params, body, request }) => {
        const { name } = params;
        const resource = `hook:${name}`;
        const problem = nameProblem(name);
        if (problem) return refuseBody(deps, request, "hook.register", resource, problem);
        const checked = shape<Bag>(HookPutBody, body);
        if (!checked.ok) return refuseBody(deps, request, "hook.register", resource, checked.message);
        const { expected_version: _, ...cfg } = checked.value;
        const expected = expectedVersion(request, checked.value);
        const { snapshot } = await auditedChange(deps, request, "hook.register", resource, () =>
          lifecycleOf(deps).edit((tree: ConfigTree) => ({ ...tree, hooks: { ...bag(tree.hooks), [name]: cfg } }), {
            principal: principalOf(request),
            summary: `hook.register ${resource}`,
            expectedVersion: expected,
            registersHook: name,
          }),
        );
        return { applied: true, config_version: snapshot.version, hook: hookView(snapshot, name), note: "live for the next request; not written to disk (like POST /config/apply)" };
      },
      { detail: requestBody(HookPutBody), response: { 200: HookChangeView } },
    )
    .delete(
      "/hooks/:name",
      async ({ params, request }) => {
        const { name } = params;
        const resource = `hook:${name}`;
        const expected = expectedVersion(request, undefined);
        const { snapshot } = await auditedChange(deps, request, "hook.delete", resource, () => {
          const lifecycle = lifecycleOf(deps);
          const config = lifecycle.current.config;
          if (!(name in (config.hooks ?? {}))) throw new GatewayError("not_found", `no hook named ${JSON.stringify(name)}`);
          const users = usersOf(config, name);
          if (users.length > 0) throw new GatewayError("conflict", `hook ${JSON.stringify(name)} is still used by ${users.join(", ")}; change those first`);
          return lifecycle.edit(
            (tree) => {
              const { [name]: _, ...hooks } = bag(tree.hooks);
              return { ...tree, hooks };
            },
            { principal: principalOf(request), summary: `hook.delete ${resource}`, expectedVersion: expected },
          );
        });
        return { applied: true, config_version: snapshot.version, note: "removed for the next request; not written to disk (like POST /config/apply)" };
      },
      { response: { 200: HookChangeView } },
    );
};
