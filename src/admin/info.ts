import { jsonController } from "../http/elysia.ts";
import { COMPILED_AUTH_MODULES } from "../auth/modules.ts";
import { COMPILED_HOOK_PLUGINS } from "../hooks/compiled.ts";
import { BUILD_COMMIT, BUILD_TARGET, VERSION } from "../version.ts";
import type { AdminDeps } from "./deps.ts";
import { InfoView } from "./views.ts";

export function infoView(deps: AdminDeps): InfoView {
  const snapshot = deps.holder.current;
  const nowSeconds = Math.floor(deps.now() / 1000);
  return {
    version: VERSION,
    build: { auth_modules: [...COMPILED_AUTH_MODULES], hook_plugins: [...COMPILED_HOOK_PLUGINS], weighted_floor: true, commit: BUILD_COMMIT, target: BUILD_TARGET },
    uptime_seconds: Math.max(0, nowSeconds - deps.startedAt),
    started_at: deps.startedAt,
    topology: {
      models: [...snapshot.lanes.keys()].sort(),
      pools: [...snapshot.pools.values()].filter((p) => !p.implicit).map((p) => p.name).sort(),
      providers: [...snapshot.providers.keys()].sort(),
    },
    config_persistence: snapshot.configPersistence,
    config_version: snapshot.version,
    store: deps.storeStatus?.() ?? { module: deps.store.module === "postgres" ? "postgres" : "sqlite", state: "ok", replica_id: null, schema_version: 0, spooled_rows: 0 },
  };
}

export const infoController = (deps: AdminDeps) =>
  jsonController("admin.info").get("/info", () => infoView(deps), { response: { 200: InfoView } });
