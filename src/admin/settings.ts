// GET/PUT /config/settings: the settings overlay (spec ConfigSettingsView). A PUT merges root sections
// into the overlay, swaps the live ones in at once, stores every one durably (config.overlay), and names
// the boot-scoped members it touched in `reload_to_apply`. Opaque `settings:` bags are shown by key name.
import { PER_REPLICA_SECTIONS, SETTINGS_SECTIONS, type ConfigTree } from "../config/lifecycle.ts";
import { ConfigSettingsBody } from "./views.ts";
import { requestBody } from "./openapi.ts";
import { jsonController } from "../http/elysia.ts";
import { auditedChange, expectedVersion, refuseBody } from "./audited.ts";
import { lifecycleOf } from "./config-changes.ts";
import type { AdminDeps } from "./deps.ts";
import { principalOf } from "./principal.ts";
import { ConfigSettingsView } from "./views.ts";

const SETTABLE = new Set<string>([...SETTINGS_SECTIONS, "expected_version"]);

/** The overlay as shown: `store.settings` values never leave the process, only their names. */
function settingsView(overlay: ConfigTree): ConfigTree {
  const store = overlay.store as { settings?: Record<string, unknown> } | undefined;
  if (!store || typeof store !== "object" || store.settings === undefined) return overlay;
  const { settings, ...rest } = store;
  return { ...overlay, store: { ...rest, settings_keys: Object.keys(settings ?? {}).sort() } };
}

export const settingsController = (deps: AdminDeps) =>
  jsonController("admin.settings")
    .get(
      "/config/settings",
      () => {
        const lifecycle = lifecycleOf(deps);
        return { applied: false, config_version: lifecycle.current.version, settings: settingsView(lifecycle.overlay), reload_to_apply: [] };
      },
      { response: { 200: ConfigSettingsView } },
    )
    .put(
      "/config/settings",
      async ({ body, request }) => {
        if (typeof body !== "object" || body === null || Array.isArray(body)) return refuseBody(deps, request, "config.settings", "config:settings", "request body must be a JSON object of root sections");
        if (Object.hasOwn(body, "export")) return refuseBody(deps, request, "config.settings", "config:settings", "/export: exporters are not settable here: edit export: in the config file, then POST /plugins/reload");
        const unknown = Object.keys(body).filter((k) => !SETTABLE.has(k));
        if (unknown.length > 0) {
          return refuseBody(deps, request, "config.settings", "config:settings", `${unknown.map((k) => `/${k}`).join(", ")}: not a settable section (settable: ${SETTINGS_SECTIONS.join(", ")})`);
        }
        // A fleet's replicas each take these from their own file (replicas.md): one replica's sockets, TLS or store are not the fleet's.
        const perReplica = deps.fleetConfig ? Object.keys(body).filter((k) => (PER_REPLICA_SECTIONS as readonly string[]).includes(k)) : [];
        if (perReplica.length > 0) {
          return refuseBody(deps, request, "config.settings", "config:settings", `${perReplica.map((k) => `/${k}`).join(", ")}: in a fleet each replica takes ${perReplica.length === 1 ? "it" : "them"} from its own config file, not from the fleet's settings`);
        }
        const expected = expectedVersion(request, body);
        const { expected_version: _, ...patch } = body as ConfigTree;
        const sections = Object.keys(patch).sort().join(",");
        const result = await auditedChange(deps, request, "config.settings", `config:settings:${sections}`, () =>
          lifecycleOf(deps).putSettings(patch, { principal: principalOf(request), summary: `config.settings ${sections}`, expectedVersion: expected }),
        );
        const later = result.reloadToApply ?? [];
        const overridden = result.setByCommandLine ?? [];
        const note = later.length === 0 ? "stored and live now" : `stored; live now except ${later.join(", ")}, which take effect on restart (POST /restart)`;
        return {
          applied: true,
          config_version: result.snapshot.version,
          settings: settingsView(lifecycleOf(deps).overlay),
          note: overridden.length === 0 ? note : `${note}; ${overridden.join(", ")} stay as this process's command line sets them (--listen, --admin-listen, --port, GATEWAY_LISTEN, GATEWAY_ADMIN_LISTEN), now and on restart`,
          reload_to_apply: later,
        };
      },
      { detail: requestBody(ConfigSettingsBody), response: { 200: ConfigSettingsView } },
    );
