// The admin plane under /api/v1/admin. The guard runs in front of the router, so every path (known,
// unknown, or added later) is behind it by construction: nothing is answered before authentication.
import { adminTokenPrincipal, authenticateAdmin, type AdminPrincipal } from "../auth/admin-chain.ts";
import type { Snapshot } from "../config/snapshot.ts";
import { errorResponse } from "../http/errors.ts";
import type { AdminDeps } from "./deps.ts";
import type { AdminRouter } from "./router.ts";
import { loadOnce } from "../http/load-once.ts";
import { rememberPrincipal } from "./principal.ts";
import { isMutation } from "./scopes.ts";
import { siteRefusal, type BoundListener } from "./origin.ts";
import { allowOrigin, isPreflight, preflight } from "../http/cors.ts";
import { AdminRateLimit } from "./rate-limit.ts";
import { auditScope } from "../governance/audit.ts";
import type { Server } from "bun";
import { BodyReadTimeout, bodyReadTimeoutMessage, readWithin } from "../http/body-deadline.ts";
import { BodyTooLargeError, closeConnection } from "../http/serve.ts";
import { malformedEscape } from "../http/paths.ts";
import { rootPage } from "../http/root-page.ts";
import { bakedConsoleFiles, consolePages, CONSOLE_PATH, isConsolePath } from "./console.ts";
import { consoleSignIn, consoleSignInProviders, isConsoleSignInPath } from "./console-sign-in.ts";

export const ADMIN_PREFIX = "/api/v1/admin";
const ADMIN_METHODS = "GET, POST, PUT, PATCH, DELETE, OPTIONS";


/** Undefined when the body is absent, empty or `{}`; else the 400 naming the route. */
async function unwantedBody(request: Request, route: { method: string; path: string }): Promise<Response | undefined> {
  let text: string;
  try {
    // A copy: the original still reaches the router, whose parse answers a body too large as usual.
    text = (await request.clone().text()).trim();
  } catch {
    return undefined;
  }
  if (text === "" || /^\{\s*\}$/.test(text)) return undefined;
  return errorResponse("invalid_request", `${route.method} ${route.path} takes no request body; send none or {}`);
}

/**
 * The request with its body read whole within `limits.body_read_timeout_secs`, or the answer refusing it:
 * a body that never finished held its admin connection (and the handler waiting on it) for good.
 */
async function bodyWithin(request: Request, timeoutMs: number): Promise<Request | Response> {
  if (request.body === null) return request;
  try {
    return new Request(request, { body: await readWithin(request, timeoutMs) });
  } catch (error) {
    if (error instanceof BodyReadTimeout) return closeConnection(errorResponse("invalid_request", bodyReadTimeoutMessage(timeoutMs), { status: 408 }));
    if (error instanceof BodyTooLargeError) return closeConnection(errorResponse("invalid_request", error.message, { status: 413 }));
    return errorResponse("invalid_request", "request body could not be read");
  }
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
  return adminTokenPrincipal(snapshot, request.headers);
}

const NOUNS: Readonly<Record<string, string>> = { keys: "key", groups: "group", "admin-auth": "admin_auth", restart: "gateway", hooks: "hook", plugins: "plugin" };
const METHOD_VERBS: Readonly<Record<string, string>> = { POST: "create", PUT: "update", PATCH: "update", DELETE: "delete" };

/**
 * `noun.verb` and resource of a mutation no handler recorded (a refused scope, an unparsable body), in
 * the handlers' own names: POST /keys/{id}/revoke is `key.revoke` on `key:<id>`, POST /config/apply is
 * `config.apply`, POST /auth/cache/flush is `auth.cache_flush`, POST /restart is `gateway.restart`,
 * POST /plugins is `plugin.install`.
 */
export function attemptedAction(method: string, pathname: string): { action: string; resource: string } {
  const [first = "admin", ...rest] = pathname.slice(ADMIN_PREFIX.length + 1).split("/").filter((p) => p !== "");
  const noun = NOUNS[first] ?? first;
  if (noun === "hook" && rest.length === 1) return { action: method === "DELETE" ? "hook.delete" : "hook.register", resource: `hook:${rest[0]}` };
  if (noun === "key" || noun === "group") {
    const [id, verb] = rest;
    return { action: `${noun}.${verb ?? METHOD_VERBS[method] ?? "update"}`, resource: id === undefined ? noun : `${noun}:${id}` };
  }
  if (noun === "plugin" && rest.length === 0) return { action: "plugin.install", resource: noun };
  const verb = noun === "gateway" ? "restart" : rest.length > 0 ? rest.join("_") : (METHOD_VERBS[method] ?? "update");
  return { action: `${noun}.${verb}`, resource: noun };
}

export type AdminFetch = ((request: Request, server?: Pick<Server<undefined>, "requestIP" | "port">) => Response | Promise<Response>) & {
  /** Builds the router now if nothing has yet: the boot calls it once the listeners are up and it is idle. */
  readonly warm: () => Promise<void>;
};

/** `GET /` on the admin listener: where the API, its description and the console are (design/console.md). */
const adminRootPage = rootPage({
  listener: "the admin plane; every path under the API needs an admin credential",
  serves: [`${ADMIN_PREFIX}/...`, `GET ${ADMIN_PREFIX}/openapi.json`, `GET ${CONSOLE_PATH}/ (the operator console)`],
  links: { api: ADMIN_PREFIX, openapi: `${ADMIN_PREFIX}/openapi.json`, console: `${CONSOLE_PATH}/` },
  docs: ["docs/admin-api.md: every admin endpoint", "docs/operations.md: running the gateway", "README.md, and `gateway --help`"],
});

/** `GET /` or `HEAD /` (a full URL's path is `/` when it ends right after the host's first slash). */
function isRootPath(request: Request): boolean {
  if (request.method !== "GET" && request.method !== "HEAD") return false;
  const url = request.url;
  return url.charCodeAt(url.length - 1) === 0x2f && url.indexOf("/", url.indexOf("//") + 2) === url.length - 1;
}

export function adminFetch(deps: AdminDeps): AdminFetch {
  // The router (Elysia, every controller and its schemas) is loaded and built on first use or by `warm`,
  // not at start: a cold start paid for evaluating those modules (1-1.5 ms) and for building the router
  // (~4 ms) though its first request is never an admin one. The guard below is all loaded at start.
  const routed = loadOnce<AdminRouter>(async () => (await import("./router.ts")).adminRouter(deps));
  const consoleFiles = loadOnce(async () => consolePages(await bakedConsoleFiles()));
  const handle = async (request: Request) => (await routed()).handle(request);
  const rates = new AdminRateLimit(deps.now);
  // The listener as bound at boot (admin_listen is restart-only); its port is the server's own (0 = OS-chosen).
  const bound = deps.holder.current.listeners.admin;
  let listener: BoundListener | undefined;
  const fetch = async (request: Request, server?: Pick<Server<undefined>, "requestIP" | "port">) => {
    const snapshot = deps.holder.current;
    const address = server?.requestIP(request)?.address ?? "unknown";
    const { per_second = 20, burst = 100 } = snapshot.config.security?.admin_rate_limit ?? {};
    // Not audited: a flood would otherwise write one audit entry per refused request.
    const wait = rates.take(address, { per_second, burst });
    if (wait !== undefined) return errorResponse("rate_limited", `too many admin requests from this address; retry after ${wait} s`, { headers: { "retry-after": String(wait) } });
    // Before authentication: a page must not even learn whether a credential would be needed. Not audited
    // (no principal yet; any page could fill the log).
    listener ??= { hostname: bound.hostname, tls: bound.tls, port: server?.port ?? bound.port };
    const foreign = siteRefusal(snapshot, request, listener);
    if (foreign !== undefined) return errorResponse("forbidden", foreign);
    // The pointer page holds no data, so it needs no credential (docs/operations.md, "The pages at /").
    // Whether a credential is asked at all: the console skips its sign-in on an open plane. The providers
    // it offers a sign-in with: names only.
    if (isRootPath(request)) return adminRootPage(request, { admin_credential: snapshot.auth.adminChain.length === 0 ? "none" : "required", sign_in_providers: consoleSignInProviders(snapshot).map((p) => p.name) });
    // The console's files hold no data either: its screens read the API below with the operator's bearer.
    const pathname = new URL(request.url).pathname;
    // Its sign-in is how a browser gets a bearer, so it comes before one is asked for.
    if (isConsoleSignInPath(pathname)) return consoleSignIn({ identity: deps.identity, cache: deps.authCache, logger: deps.logger, now: deps.now }, snapshot, request, pathname);
    if (isConsolePath(pathname)) return (await consoleFiles())(request, pathname);
    const origin = request.headers.get("origin");
    if (origin === null) return answer(request, snapshot);
    // An allowed browser origin (a console served elsewhere) needs the CORS answers to read anything.
    if (isPreflight(request)) return preflight(request, origin, ADMIN_METHODS);
    return allowOrigin(await answer(request, snapshot), origin);
  };
  // Settles once the router is built (or could not be): the boot restores the JIT policy only then.
  return Object.assign(fetch, { warm: () => routed().then(() => undefined, () => undefined) });
  async function answer(sent: Request, snapshot: Snapshot): Promise<Response> {
    const admitted = await authenticateAdmin(snapshot, sent.headers, { identity: deps.identity, cache: deps.authCache });
    const principal = admitted && governanceGuard(snapshot, sent, admitted);
    if (!principal) {
      // Not audited either: there is no principal to name, and anyone could fill the log.
      return errorResponse("unauthorized", "admin credential missing or not accepted (x-admin-token or Authorization: Bearer)", {
        headers: { "www-authenticate": 'Bearer realm="gateway-admin"' },
      });
    }
    const pathname = new URL(sent.url).pathname;
    if (principal.refusal !== undefined) {
      if (isMutation(sent.method, pathname.slice(ADMIN_PREFIX.length))) await attempted(sent.method, pathname, principal, "rejected");
      return errorResponse("forbidden", principal.refusal);
    }
    if (malformedEscape(pathname)) return errorResponse("invalid_request", "the request path has a malformed percent-escape");
    const mutation = isMutation(sent.method, pathname.slice(ADMIN_PREFIX.length));
    if (mutation && principal.scope !== "full") {
      await attempted(sent.method, pathname, principal, "rejected");
      return errorResponse("forbidden", "this credential has read-only scope; the request needs full scope");
    }
    const request = await bodyWithin(sent, snapshot.limits.bodyReadTimeoutMs);
    if (request instanceof Response) {
      if (mutation) await attempted(sent.method, pathname, principal, "rejected");
      return request;
    }
    rememberPrincipal(request, principal);
    if (!mutation) return handle(request);
    const scope = { recorded: false, credential: principal.credential };
    const route = (await routed()).bodyless.find((r) => r.method === request.method && r.match.test(pathname));
    const response = await auditScope.run(scope, async () => (route && (await unwantedBody(request, route))) || handle(request));
    // A mutation refused before its handler ran (a body that is not JSON, an unknown route) is still an attempt.
    if (!scope.recorded && response.status !== 404 && response.status !== 405) await attempted(request.method, pathname, principal, response.status < 400 ? "applied" : "rejected");
    return response;
  }
  /** An audit entry for a mutation no handler recorded. */
  async function attempted(method: string, pathname: string, principal: AdminPrincipal, outcome: "applied" | "rejected"): Promise<void> {
    const { action, resource } = attemptedAction(method, pathname);
    await deps.audit?.record({ action, resource, outcome, principal: principal.id, credential: principal.credential });
  }
}
