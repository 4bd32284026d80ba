// Wires both planes from their dependencies: no globals, so tests build apps around any snapshot.
import { adminFetch } from "./admin/index.ts";
import type { AdminDeps } from "./admin/deps.ts";
import { dataHandlers } from "./dataplane/index.ts";
import { defaultTooLarge } from "./http/serve.ts";
import { dataPlaneMetrics } from "./telemetry/metrics.ts";

export type AppDeps = AdminDeps;

export function buildApps(deps: AppDeps) {
  return { data: dataHandlers({ ...deps, metrics: dataPlaneMetrics() }), admin: { fetch: adminFetch(deps), routes: {}, tooLarge: defaultTooLarge } };
}
