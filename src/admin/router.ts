// The admin plane's router: every controller and its schemas under /api/v1/admin, and the OpenAPI
// document built from them. Loaded by the guard (index.ts) on the first admin request or when the boot
// warms it, so a start does not evaluate Elysia and the controllers before the first data-plane request.
import { listenerApp } from "../http/elysia.ts";
import { isMutation } from "./scopes.ts";
import type { AdminDeps } from "./deps.ts";
import { ADMIN_PREFIX } from "./index.ts";
import { auditController } from "./audit.ts";
import { authController } from "./auth.ts";
import { configController } from "./config.ts";
import { configChangesController } from "./config-changes.ts";
import { configSourceController } from "./config-source.ts";
import { settingsController } from "./settings.ts";
import { restartController } from "./restart.ts";
import { infoController } from "./info.ts";
import { replicasController } from "./replicas.ts";
import { sessionController } from "./session.ts";
import { groupsController } from "./groups.ts";
import { hooksController } from "./hooks.ts";
import { keysController } from "./keys.ts";
import { pluginsController } from "./plugins.ts";
import { usageController } from "./usage.ts";
import { liveController } from "./live.ts";
import { openApiDocument } from "./openapi.ts";

/** The built router, and the mutations it declares without a body (which the guard refuses one for). */
export interface AdminRouter {
  readonly handle: (request: Request) => Response | Promise<Response>;
  readonly bodyless: readonly { readonly method: string; readonly path: string; readonly match: RegExp }[];
}

export function adminRouter(deps: AdminDeps): AdminRouter {
  const app = buildAdminApp(deps);
  return { handle: app.fetch, bodyless: bodylessRoutes(app.routes as readonly RouteLike[]) };
}

interface RouteLike {
  readonly method: string;
  readonly path: string;
  readonly hooks?: { readonly body?: unknown; readonly detail?: { readonly requestBody?: unknown } };
}

/**
 * Each mutation that declares no request body (revoke, delete, restart), from the same declarations the
 * OpenAPI document shows, so a body such a route would ignore is refused rather than dropped.
 */
function bodylessRoutes(routes: readonly RouteLike[]): { readonly method: string; readonly path: string; readonly match: RegExp }[] {
  return routes
    .filter((r) => isMutation(r.method, r.path.slice(ADMIN_PREFIX.length)) && r.hooks?.body === undefined && r.hooks?.detail?.requestBody === undefined)
    .map((r) => ({ method: r.method, path: r.path.slice(ADMIN_PREFIX.length), match: new RegExp(`^${r.path.replace(/:[A-Za-z_]+/g, "[^/]+")}/?$`) }));
}

export function buildAdminApp(deps: AdminDeps) {
  let document: object | undefined;
  const app = listenerApp("admin", deps.logger, { prefix: ADMIN_PREFIX })
    .use(infoController(deps))
    .use(configController(deps))
    .use(configChangesController(deps))
    .use(configSourceController(deps))
    .use(settingsController(deps))
    .use(restartController(deps))
    .use(authController(deps))
    .use(auditController(deps))
    .use(keysController(deps))
    .use(groupsController(deps))
    .use(hooksController(deps))
    .use(pluginsController(deps))
    .use(usageController(deps))
    .use(replicasController(deps))
    .use(sessionController())
    .use(liveController(deps));
  // Built from the finished route table on first read, then kept: routes do not change at run time.
  return app.get("/openapi.json", () => (document ??= openApiDocument(app.routes, ADMIN_PREFIX)));
}

