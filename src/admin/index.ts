// The admin plane under /api/v1/admin. The guard runs in front of the router, so every path (known,
// unknown, or added later) is behind it by construction: nothing is answered before authentication.
import { authenticateAdmin } from "../auth/admin-chain.ts";
import { errorResponse } from "../http/errors.ts";
import { listenerApp } from "../http/elysia.ts";
import { authController } from "./auth.ts";
import { configController } from "./config.ts";
import type { AdminDeps } from "./deps.ts";
import { infoController } from "./info.ts";

export const ADMIN_PREFIX = "/api/v1/admin";

/** POSTs that change nothing (dry runs), open to read-only principals. */
const READ_ONLY_POSTS = new Set([`${ADMIN_PREFIX}/config/validate`, `${ADMIN_PREFIX}/plugins/inspect`]);
const READ_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

export function buildAdminApp(deps: AdminDeps) {
  return listenerApp("admin", deps.logger, { prefix: ADMIN_PREFIX })
    .use(infoController(deps))
    .use(configController(deps))
    .use(authController(deps));
}

export function adminFetch(deps: AdminDeps): (request: Request) => Response | Promise<Response> {
  const app = buildAdminApp(deps);
  const handle = app.fetch;
  return (request) => {
    const principal = authenticateAdmin(deps.holder.current, request.headers);
    if (!principal) {
      return errorResponse("unauthorized", "admin credential missing or not accepted (x-admin-token or Authorization: Bearer)", {
        headers: { "www-authenticate": 'Bearer realm="gateway-admin"' },
      });
    }
    if (principal.scope !== "full" && !READ_METHODS.has(request.method) && !READ_ONLY_POSTS.has(new URL(request.url).pathname)) {
      return errorResponse("forbidden", "this credential has read-only scope; the request needs full scope");
    }
    return handle(request);
  };
}
