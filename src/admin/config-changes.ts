// POST /config/apply, /config/reload, /config/rollback and the retained versions (GET /config/versions,
// /config/versions/{v}, /config/diff): every change goes through the config lifecycle, is audited, and
// commits a new config_version. An apply is live at once and is not written to disk.
import { sameTree, type ConfigLifecycle, type ConfigVersionRecord, type Refused } from "../config/lifecycle.ts";
import { requestBody } from "./openapi.ts";
import type { Concealed } from "../config/interpolate.ts";
import { parseConfigText } from "../config/load.ts";
import { jsonController } from "../http/elysia.ts";
import { GatewayError } from "../http/errors.ts";
import { auditedChange, auditedChangeBy, expectedVersion, refuseBody } from "./audited.ts";
import { hookViews } from "./config.ts";
import { lineDiff } from "./line-diff.ts";
import type { AdminDeps } from "./deps.ts";
import { seqPage, shape } from "./pages.ts";
import { principalOf } from "./principal.ts";
import {
  ConfigApplyBody,
  ConfigApplyView,
  ConfigDiffQuery,
  ConfigDiffView,
  ConfigReloadBody,
  ConfigReloadView,
  ConfigRollbackBody,
  ConfigRollbackView,
  ConfigVersionDetailView,
  ConfigVersionPageView,
  PageQuery,
  type ConfigVersion,
} from "./views.ts";

export function lifecycleOf(deps: AdminDeps): ConfigLifecycle {
  if (!deps.lifecycle) throw new GatewayError("internal", "config changes are not available in this process");
  return deps.lifecycle;
}

/**
 * POST /config/reload and SIGHUP: the config file as it is now, with the overlay, audited as
 * `config.reload` under `principal`. `refused` sees a refusal (with every error) before it is thrown.
 */
export function reloadConfigFile(deps: AdminDeps, principal: string, expectedVersion?: number, refused?: (r: Refused) => void) {
  return auditedChangeBy(deps, principal, "config.reload", "config", () => {
    const planned = lifecycleOf(deps).reload({ principal, summary: "config.reload", expectedVersion });
    if (!planned.ok) refused?.(planned);
    return planned;
  });
}

const versionView = (r: ConfigVersionRecord): ConfigVersion => ({ version: r.version, ts: r.ts, principal: r.principal, summary: r.summary });

/** The retained version a path or query member names: 400 for a malformed number, 404 for one not retained. */
export function retained(lifecycle: ConfigLifecycle, text: string | undefined, name: string): ConfigVersionRecord {
  if (text === undefined || text === "") throw new GatewayError("invalid_request", `query ${name}: required (a config_version)`);
  if (!/^[0-9]{1,15}$/.test(text)) throw new GatewayError("invalid_request", `${name}: expected a config_version (an integer), got ${JSON.stringify(text)}`);
  const record = lifecycle.version(Number(text));
  if (!record) throw new GatewayError("not_found", `config version ${text} is not retained`);
  return record;
}

function hooksByName(record: ConfigVersionRecord) {
  return Object.fromEntries(hookViews(record.snapshot).map((h) => [h.name, h]));
}

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

export const configChangesController = (deps: AdminDeps) =>
  jsonController("admin.config-changes")
    .post(
      "/config/apply",
      async ({ body, request }) => {
        const checked = shape<ConfigApplyBody>(ConfigApplyBody, body);
        if (!checked.ok) return refuseBody(deps, request, "config.apply", "config", checked.message);
        const proposal = checked.value;
        const expected = expectedVersion(request, proposal);
        const { snapshot } = await auditedChange(deps, request, "config.apply", "config", () => {
          let tree: unknown = "config" in proposal ? proposal.config : undefined;
          let concealed: Concealed | undefined;
          if ("yaml" in proposal) {
            const parsed = parseConfigText(proposal.yaml, "yaml", deps.env);
            if (!parsed.ok) return { ok: false as const, code: "invalid_request" as const, message: `config invalid: ${parsed.errors.join("; ")}` };
            ({ tree, concealed } = parsed);
          }
          return lifecycleOf(deps).apply(tree, { principal: principalOf(request), summary: "config.apply", expectedVersion: expected }, concealed);
        });
        return { applied: true, config_version: snapshot.version, note: "live now; not written to disk (the config file is unchanged; POST /config/reload would return to it)" };
      },
      { detail: requestBody(ConfigApplyBody), response: { 200: ConfigApplyView } },
    )
    .post(
      "/config/reload",
      async ({ body, request }) => {
        if (body !== null && body !== undefined) {
          const checked = shape(ConfigReloadBody.anyOf[1], body);
          if (!checked.ok) return refuseBody(deps, request, "config.reload", "config", checked.message);
        }
        const { snapshot } = await reloadConfigFile(deps, principalOf(request), expectedVersion(request, body));
        return { reloaded: true, config_version: snapshot.version };
      },
      { detail: requestBody(ConfigReloadBody, false), response: { 200: ConfigReloadView } },
    )
    .post(
      "/config/rollback",
      async ({ body, request }) => {
        const checked = shape<{ version: number; expected_version?: number }>(ConfigRollbackBody, body);
        if (!checked.ok) return refuseBody(deps, request, "config.rollback", "config", checked.message);
        const { version } = checked.value;
        const expected = expectedVersion(request, checked.value);
        const { snapshot } = await auditedChange(deps, request, "config.rollback", `config:${version}`, () =>
          lifecycleOf(deps).rollback(version, { principal: principalOf(request), summary: `config.rollback to ${version}`, expectedVersion: expected }),
        );
        return { restored_version: version, config_version: snapshot.version };
      },
      { detail: requestBody(ConfigRollbackBody), response: { 200: ConfigRollbackView } },
    )
    .get(
      "/config/versions",
      ({ query }) => {
        const newestFirst = [...lifecycleOf(deps).versions()].reverse();
        const page = seqPage(newestFirst, (r) => r.version, query);
        return { items: page.items.map(versionView), next_cursor: page.next_cursor };
      },
      { query: PageQuery, response: { 200: ConfigVersionPageView } },
    )
    .get(
      "/config/versions/:v",
      ({ params }) => {
        const record = retained(lifecycleOf(deps), params.v, "version");
        return { ...versionView(record), hooks: hooksByName(record), global_hooks: [...record.snapshot.globalHooks] };
      },
      { response: { 200: ConfigVersionDetailView } },
    )
    .get(
      "/config/diff",
      ({ query }) => {
        const lifecycle = lifecycleOf(deps);
        const from = retained(lifecycle, query.from, "from");
        const to = retained(lifecycle, query.to, "to");
        const a = hooksByName(from);
        const b = hooksByName(to);
        const names = (o: object) => Object.keys(o).sort();
        const diff = {
          from: from.version,
          to: to.version,
          hooks: {
            added: names(b).filter((n) => !(n in a)),
            removed: names(a).filter((n) => !(n in b)),
            // The views show settings by name only; a changed value is a change too.
            changed: names(b).filter((n) => n in a && !(sameTree(a[n], b[n]) && sameTree(from.snapshot.config.hooks?.[n], to.snapshot.config.hooks?.[n]))),
          },
          ...lineDiff(lifecycle.source(from), lifecycle.source(to)),
        };
        const [g1, g2] = [from.snapshot.globalHooks, to.snapshot.globalHooks];
        return sameList(g1, g2) ? diff : { ...diff, global_hooks: { from: [...g1], to: [...g2] } };
      },
      { query: ConfigDiffQuery, response: { 200: ConfigDiffView } },
    );

