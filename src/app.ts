// Wires both planes from their dependencies: no globals, so tests build apps around any snapshot.
import { adminFetch } from "./admin/index.ts";
import type { AdminDeps } from "./admin/deps.ts";
import { dataHandlers } from "./dataplane/index.ts";
import { defaultTooLarge } from "./http/serve.ts";
import { laneProbe } from "./dataplane/probe.ts";
import { HealthProber } from "./routing/health.ts";
import { RoutingState } from "./routing/state.ts";
import { laneStates } from "./routing/views.ts";
import { dataPlaneMetrics } from "./telemetry/metrics.ts";
import { buildGovernance } from "./governance/index.ts";
import type { SqliteStore } from "./store/sqlite.ts";

/** The governance services (keys, audit, auth cache) are built here from the store, not passed in. */
export type AppDeps = Omit<AdminDeps, "keys" | "authCache" | "audit" | "store"> & { readonly store: SqliteStore };

export async function buildApps(deps: AppDeps, random: () => number = Math.random) {
  const governance = buildGovernance({ database: deps.store.database, holder: deps.holder, now: deps.now });
  await governance.load();
  const adminDeps: AdminDeps = { ...deps, keys: governance.keys, authCache: governance.cache, audit: governance.audit };
  const routing = new RoutingState({ now: deps.now, random });
  const metrics = dataPlaneMetrics();
  metrics.registry.gauge("gateway_lane_state", "Breaker state per (pool, lane): 0 Closed, 1 HalfOpen, 2 Open.", ["pool", "lane"], () => laneStates(deps.holder.current, routing));
  // Started by the boot (main.ts), so apps built in tests run no timers.
  const health = new HealthProber(() => deps.holder.current, routing, laneProbe(deps.holder), deps.logger);
  return { data: dataHandlers({ ...deps, metrics, routing, auth: governance.ingressAuth }), admin: { fetch: adminFetch(adminDeps), routes: {}, tooLarge: defaultTooLarge }, routing, health };
}
