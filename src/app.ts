// Wires both planes from their dependencies: no globals, so tests build apps around any snapshot.
import { adminFetch } from "./admin/index.ts";
import type { AdminDeps } from "./admin/deps.ts";
import type { ReloadFile } from "./admin/reload-signal.ts";
import { dataHandlers } from "./dataplane/index.ts";
import { InboundLimit } from "./dataplane/inbound-limit.ts";
import { defaultTooLarge } from "./http/serve.ts";
import { withCors } from "./http/cors.ts";
import { errorResponse } from "./http/errors.ts";
import { ingressFor } from "./dataplane/routes.ts";
import { irError } from "./ir/index.ts";
import { loadAll } from "./protocols/registry.ts";
import { laneProbe } from "./dataplane/probe.ts";
import { HealthProber } from "./routing/health.ts";
import { RoutingState } from "./routing/state.ts";
import { laneStates } from "./routing/views.ts";
import { dataPlaneMetrics } from "./telemetry/metrics.ts";
import { buildGovernance } from "./governance/index.ts";
import type { StoreSet } from "./store/set.ts";
import type { KeyRecord } from "./store/keys.ts";
import { buildGroupGovernance, type GroupGovernance } from "./governance/group-services.ts";
import { FleetSync } from "./governance/fleet-sync.ts";
import type { KeyInfo } from "./governance/usage.ts";
import { HookRuntime, HooksNotLoaded } from "./hooks/runtime.ts";
import type { HookModuleLoader } from "./hooks/types.ts";
import { TelemetryHub } from "./telemetry/hub.ts";
import { VERSION } from "./version.ts";
import { accessLine } from "./telemetry/access-line.ts";
import type { RequestRecord } from "./telemetry/records.ts";

/** The governance services (keys, audit, auth cache) are built here from the store, not passed in. */
export type AppDeps = Omit<AdminDeps, "keys" | "authCache" | "audit" | "store" | "groups" | "usage" | "hookRuntime" | "telemetry"> & {
  /** The open store's concerns (store/set.ts); `store` of AdminDeps is its `store`. */
  readonly stores: StoreSet;
  readonly hookLoader?: HookModuleLoader;
  /** `text`: an access line per model request on stderr. */
  readonly logFormat?: "json" | "text";
  /** A fleet's store: keys and groups other replicas change are reloaded (the boot starts its listener). */
  readonly fleet?: boolean;
};

export async function buildApps(deps: AppDeps, random: () => number = Math.random) {
  let grouped: GroupGovernance | undefined;
  const governance = buildGovernance({
    stores: deps.stores,
    holder: deps.holder,
    now: deps.now,
    logger: deps.logger,
    // Called while governance is built; the registry callbacks run later, once it exists.
    groups: (audit) =>
      (grouped = buildGroupGovernance({
        stores: deps.stores,
        holder: deps.holder,
        logger: deps.logger,
        now: deps.now,
        audit,
        hasBoundKeys: (group) => governance.registry.boundTo(group),
        keyLookup: (id) => keyInfo(governance.registry.get(id)),
      })).groups,
  });
  await governance.load();
  const groups = grouped!;
  await groups.load();
  const routing = new RoutingState({ now: deps.now, random });
  const metrics = dataPlaneMetrics();
  const storeStatus = deps.storeStatus;
  if (storeStatus) metrics.registry.gauge("gateway_store_up", "1 while the store takes this replica's writes, 0 while it refuses them.", [], () => [{ labels: {}, value: storeStatus().state === "ok" ? 1 : 0 }]);
  metrics.registry.gauge("gateway_lane_state", "Breaker state per (pool, lane): 0 Closed, 1 HalfOpen, 2 Open.", ["pool", "lane"], () => laneStates(deps.holder.current, routing));
  // Frozen at boot (spec: advanced.response_headers); hook instances follow each snapshot (forPool).
  const hooks = new HookRuntime({ logger: deps.logger, metrics, loader: deps.hookLoader, routePolicyHeader: deps.holder.current.config.advanced?.response_headers?.route_policy ?? true });
  // The boot's hooks are loaded and created before the first request; one that cannot be stops the boot.
  const unloadable = await hooks.prepare(deps.holder.current);
  if (unloadable.length > 0) throw new HooksNotLoaded(unloadable);
  hooks.load(deps.holder.current);
  deps.holder.onSwap((next) => hooks.load(next));
  // Each request's line: readable with --log-format text; a JSON `request` record at --log-level debug.
  const requestLine = deps.logFormat === "text" ? accessLine : deps.logger.enabled("debug") ? (record: RequestRecord) => deps.logger.debug("request", { ...record }) : undefined;
  const telemetry = new TelemetryHub(deps.logger, requestLine, { logger: deps.logger, registry: metrics.registry, version: VERSION, webhookDropped: metrics.webhookLogsDropped.at() });
  // The boot's exporters start before the first request; one that cannot (a taken port) stops the boot.
  await telemetry.swap(await telemetry.build(deps.holder.current.export));
  // GET /events: a breaker change is formatted only while some stream reads (LiveFeed.breaker).
  routing.onBreakerChange = (pool, lane, state) => telemetry.live.breaker(pool, lane, state, deps.now());
  const adminDeps: AdminDeps = { ...deps, store: deps.stores.store, telemetry, routing, keys: governance.keys, authCache: governance.cache, identity: governance.identity, audit: governance.audit, groups: groups.groups, usage: groups.usage, hookRuntime: hooks };
  groups.usage.registerMetrics(metrics.registry, () => deps.holder.current.auth.chain.includes("keys"));
  // Started by the boot (main.ts), so apps built in tests run no timers.
  const health = new HealthProber(() => deps.holder.current, routing, laneProbe(deps.holder), deps.logger);
  // Boot-scoped: the cap of the snapshot the process started with (the config lifecycle keeps it so).
  const inbound = new InboundLimit(deps.holder.current.config.limits?.max_inbound_concurrent ?? 4096);
  const data = withCors(dataHandlers({ ...deps, metrics, routing, auth: governance.ingressAuth, metering: groups.metering, inbound, hooks, telemetry }), () => deps.holder.current, foreignOrigin);
  const admin = { fetch: adminFetch(adminDeps), routes: {}, tooLarge: defaultTooLarge };
  // Both routers are built, and the protocols no request has needed yet loaded, on first use; the boot
  // calls this once the listeners have served their first requests.
  const warm = () => {
    loadAll();
    return Promise.all([data.warm(), admin.fetch.warm()]).then(() => undefined);
  };
  // SIGHUP's reload (main.ts): POST /config/reload's audited change, with the signal as its principal.
  // Loaded with the admin router (admin/router.ts), not at start.
  const reloadFile: ReloadFile = async (principal, refused) => (await import("./admin/config-changes.ts")).reloadConfigFile(adminDeps, principal, undefined, refused);
  if (deps.fleetConfig) deps.fleetConfig.prepare = (snapshot) => hooks.prepare(snapshot);
  const fleetSync = deps.fleet ? new FleetSync({ audit: governance.audit, keys: governance.keys, groups: groups.groups, config: deps.fleetConfig, logger: deps.logger }) : undefined;
  return { data, admin, warm, routing, health, metering: groups.metering, reloadFile, hooks, telemetry, fleetSync };
}

/** A browser origin the data plane does not serve: 403 in the path's protocol shape where it has one. */
function foreignOrigin(request: Request, message: string): Response {
  const ingress = ingressFor(request);
  return ingress ? ingress.encodeError(irError("permission", message)) : errorResponse("forbidden", message);
}

/** What the usage views need of a key: a deleted (tombstoned) one keeps its rows but loses its name. */
function keyInfo(record: KeyRecord | undefined): KeyInfo | undefined {
  if (!record) return undefined;
  return { name: record.deletedAt === null ? record.name : null, group: record.group, labels: record.labels };
}
