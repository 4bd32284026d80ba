// The admin plane under /api/v1/admin. The guard runs in front of the router, so every path (known,
// unknown, or added later) is behind it by construction: nothing is answered before authentication.
import { ADMIN_MODULES, authenticateAdmin, type AdminPrincipal } from "../auth/admin-chain.ts";
import type { Snapshot } from "../config/snapshot.ts";
import { errorResponse } from "../http/errors.ts";
import { listenerApp } from "../http/elysia.ts";
import { authController } from "./auth.ts";
import { configController } from "./config.ts";
import { configChangesController } from "./config-changes.ts";
import { settingsController } from "./settings.ts";
import type { AdminDeps } from "./deps.ts";
import { infoController } from "./info.ts";
import { groupsController } from "./groups.ts";
import { keysController } from "./keys.ts";
import { usageController } from "./usage.ts";
import { rememberPrincipal } from "./principal.ts";

export const ADMIN_PREFIX = "/api/v1/admin";

/** POSTs that change nothing (dry runs), open to read-only principals. */
const READ_ONLY_POSTS = new Set([`${ADMIN_PREFIX}/config/validate`, `${ADMIN_PREFIX}/plugins/inspect`]);
const READ_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

export function buildAdminApp(deps: AdminDeps) {
  return listenerApp("admin", deps.logger, { prefix: ADMIN_PREFIX })
    .use(infoController(deps))
    .use(configController(deps))
    .use(configChangesController(deps))
    .use(settingsController(deps))
    .use(authController(deps))
    .use(keysController(deps))
    .use(groupsController(deps))
    .use(usageController(deps));
}

/** Key, group and usage endpoints: what a governance deployment never opens to an anonymous caller. */
const GOVERNANCE_PATH = new RegExp(`^${ADMIN_PREFIX}/(keys|groups|usage)(/|$)`);

/**
 * Spec "Admin plane" 7: a governance deployment (`keys` in the ingress chain) keeps its key and group
 * endpoints shut to the open posture: with no admin chain they take an admin token (the
 * `admin-tokens` module) or answer 401, also when no admin token is configured at all.
 */
function governanceGuard(snapshot: Snapshot, request: Request, principal: AdminPrincipal): AdminPrincipal | undefined {
  if (principal.id !== "anonymous" || !snapshot.auth.chain.includes("keys") || !GOVERNANCE_PATH.test(new URL(request.url).pathname)) return principal;
  return ADMIN_MODULES["admin-tokens"]!(snapshot, request.headers);
}

export function adminFetch(deps: AdminDeps): (request: Request) => Response | Promise<Response> {
  const app = buildAdminApp(deps);
  const handle = app.fetch;
  return (request) => {
    const snapshot = deps.holder.current;
    const admitted = authenticateAdmin(snapshot, request.headers);
    const principal = admitted && governanceGuard(snapshot, request, admitted);
    if (!principal) {
      return errorResponse("unauthorized", "admin credential missing or not accepted (x-admin-token or Authorization: Bearer)", {
        headers: { "www-authenticate": 'Bearer realm="gateway-admin"' },
      });
    }
    if (principal.scope !== "full" && !READ_METHODS.has(request.method) && !READ_ONLY_POSTS.has(new URL(request.url).pathname)) {
      return errorResponse("forbidden", "this credential has read-only scope; the request needs full scope");
    }
    rememberPrincipal(request, principal);
    return handle(request);
  };
}
