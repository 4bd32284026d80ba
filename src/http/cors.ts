// CORS on the data plane. A browser marks every cross-origin request with `Origin`; one from an origin
// not in `security.allowed_origins` is refused (403, in the caller's protocol shape), so a page a
// developer visits cannot spend their gateway. A configured origin gets the CORS answers a browser
// needs: the preflight, and Access-Control-Allow-Origin on every answer (errors and streams included).
// Clients that are not browsers send no Origin: for them this is one header lookup.
import type { Snapshot } from "../config/snapshot.ts";
import type { FetchHandler } from "./serve.ts";

interface CorsPolicy {
  readonly any: boolean;
  readonly origins: ReadonlySet<string>;
}

/** Built once per config snapshot (the list is live on a config change). */
const policies = new WeakMap<Snapshot, CorsPolicy>();

function policyOf(snapshot: Snapshot): CorsPolicy {
  let policy = policies.get(snapshot);
  if (policy === undefined) {
    const listed = (snapshot.config.security?.allowed_origins ?? []).map((o) => o.toLowerCase());
    policies.set(snapshot, (policy = { any: listed.includes("*"), origins: new Set(listed) }));
  }
  return policy;
}

/** What the data plane answers to: its protocol routes are POST, its operational routes GET. */
const DATA_METHODS = "GET, POST, OPTIONS";
/** A browser caches a preflight this long (seconds; browsers cap it lower anyway). */
const MAX_AGE = "600";

/** The CORS headers on an answer to an allowed origin. Headers of a relayed upstream answer may be immutable. */
export function allowOrigin(response: Response, origin: string): Response {
  let answer = response;
  try {
    answer.headers.set("access-control-allow-origin", origin);
  } catch {
    answer = new Response(response.body, response);
    answer.headers.set("access-control-allow-origin", origin);
  }
  answer.headers.append("vary", "Origin");
  // Retry-After, x-request-id, rate-limit headers: an SDK in the page reads them like one outside.
  answer.headers.set("access-control-expose-headers", "*");
  return answer;
}

/** A preflight (OPTIONS with Access-Control-Request-Method), which carries no credential. */
export const isPreflight = (request: Request) => request.method === "OPTIONS" && request.headers.has("access-control-request-method");

/** The preflight's answer: the asked-for headers are echoed, so every vendor SDK's own headers pass. */
export function preflight(request: Request, origin: string, methods: string): Response {
  const headers = new Headers({
    "access-control-allow-origin": origin,
    "access-control-allow-methods": methods,
    "access-control-max-age": MAX_AGE,
    vary: "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
  });
  const asked = request.headers.get("access-control-request-headers");
  if (asked !== null) headers.set("access-control-allow-headers", asked);
  return new Response(null, { status: 204, headers });
}

export interface CorsHandlers {
  readonly fetch: FetchHandler;
  readonly routes: Readonly<Record<string, FetchHandler>>;
  readonly tooLarge: (limit: number, request: Request) => Response;
}

/**
 * The data listener's handlers behind the CORS check. `refuse` answers a foreign origin with a 403 in
 * the shape the path's protocol speaks.
 */
export function withCors<T extends CorsHandlers>(handlers: T, snapshot: () => Snapshot, refuse: (request: Request, message: string) => Response): T {
  const guard =
    (handler: FetchHandler): FetchHandler =>
    (request, server) => {
      const origin = request.headers.get("origin");
      if (origin === null) return handler(request, server);
      const policy = policyOf(snapshot());
      if (!policy.any && !policy.origins.has(origin.toLowerCase())) {
        return refuse(request, `Origin ${JSON.stringify(origin.slice(0, 200))} is not allowed to call this gateway from a browser; add it to security.allowed_origins`);
      }
      if (isPreflight(request)) return preflight(request, origin, DATA_METHODS);
      const answer = handler(request, server);
      return answer instanceof Promise ? answer.then((response) => allowOrigin(response, origin)) : allowOrigin(answer, origin);
    };
  const tooLarge = (limit: number, request: Request): Response => {
    const response = handlers.tooLarge(limit, request);
    const origin = request.headers.get("origin");
    if (origin === null) return response;
    const policy = policyOf(snapshot());
    return policy.any || policy.origins.has(origin.toLowerCase()) ? allowOrigin(response, origin) : response;
  };
  return {
    ...handlers,
    fetch: guard(handlers.fetch),
    routes: Object.fromEntries(Object.entries(handlers.routes).map(([path, handler]) => [path, guard(handler)])),
    tooLarge,
  };
}
