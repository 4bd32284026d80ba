// The token exchange's routes on the data listener (design/identity.md): never behind auth.chain, and
// ahead of the direct route POST /{provider}/{model}, which `/auth/token` would otherwise reach. POST
// /auth/token trades a verified ID token for the person's key; /refresh starts a new generation. Every
// answer is `Cache-Control: no-store`: it may carry a key, and a refusal must not be replayed by a proxy.
import type { ConfigHolder } from "../config/snapshot.ts";
import { controller } from "../http/elysia.ts";
import { BodyReadTimeout, readWithin } from "../http/body-deadline.ts";
import { errorResponse, GatewayError, gatewayErrorResponse } from "../http/errors.ts";
import type { Logger } from "../telemetry/logger.ts";
import { readExchangeRequest } from "./exchange-request.ts";
import type { IdentityService } from "./service.ts";
import type { OidcProvider } from "./settings.ts";

const NO_STORE = { "cache-control": "no-store" };
const NO_PROVIDER = "no identity provider is configured on this gateway, so there is no token to exchange (identity-providers)";
/** An exchange's body is an ID token and a name: a few KiB. */
const MAX_EXCHANGE_BODY = 64 * 1024;

export interface IdentityRouteDeps {
  readonly holder: ConfigHolder;
  readonly logger: Logger;
  /** Absent when the gateway runs without a key store (nothing can be issued). */
  readonly identity: IdentityService | undefined;
}

const refuse = (code: Parameters<typeof errorResponse>[0], message: string, headers: Record<string, string> = {}) => errorResponse(code, message, { headers: { ...NO_STORE, ...headers } });

async function exchange(deps: IdentityRouteDeps, request: Request, rotate: boolean): Promise<Response> {
  const snapshot = deps.holder.current;
  const providers = snapshot.identity.providers;
  if (providers.length === 0 || !deps.identity) return refuse("invalid_request", NO_PROVIDER);
  let text: string;
  try {
    text = await readWithin(request, snapshot.limits.bodyReadTimeoutMs, "text");
  } catch (error) {
    return error instanceof BodyReadTimeout ? errorResponse("invalid_request", "the request body did not arrive in time", { status: 408, headers: { ...NO_STORE, connection: "close" } }) : refuse("invalid_request", "the request body could not be read");
  }
  if (text.length > MAX_EXCHANGE_BODY) return refuse("invalid_request", `the request body is over ${MAX_EXCHANGE_BODY} bytes; it carries an ID token and a provider name`);
  const asked = readExchangeRequest(text, request.headers.get("authorization"), providers);
  if (!asked.ok) return refuse(asked.code, asked.message);
  const provider = providers.find((p) => p.name === asked.instance.name) as OidcProvider;
  const checked = await deps.identity.verifyOidc(provider, asked.token);
  if (!checked.ok) {
    if (checked.kind === "invalid") return refuse("unauthorized", `the ID token failed verification by ${provider.name}: ${checked.reason}`, { "www-authenticate": 'Bearer error="invalid_token"' });
    if (checked.kind === "unusable") return refuse("forbidden", checked.reason);
    deps.logger.warn("identity provider unreachable", { provider: provider.name, cause: checked.reason });
    return refuse("internal", `identity provider ${provider.name} could not be reached: ${checked.reason}`);
  }
  try {
    const key = await deps.identity.exchange.issue(checked.person, rotate);
    return Response.json(key, { headers: NO_STORE });
  } catch (error) {
    if (!(error instanceof GatewayError)) throw error;
    const answer = gatewayErrorResponse(error);
    answer.headers.set("cache-control", "no-store");
    return answer;
  }
}

export const identityRoutes = (deps: IdentityRouteDeps) =>
  controller("identity.routes")
    .post("/auth/token", ({ request }) => exchange(deps, request, false), { parse: "none" })
    .post("/auth/token/refresh", ({ request }) => exchange(deps, request, true), { parse: "none" })
    .get("/auth/token", () => refuse("not_found", "no identity provider offers browser sign-in on this gateway"));
