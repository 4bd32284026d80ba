// The token exchange's routes on the data listener (design/identity.md, docs/identity.md): never behind
// auth.chain, and ahead of the direct route POST /{provider}/{model}, which `/auth/token` would otherwise
// reach. POST /auth/token trades a verified ID token for the person's key; /refresh starts a new
// generation. GET /auth/token, /auth/login/<p> and /auth/callback/<p> are the browser sign-in: the
// chooser, the redirect to the provider with a signed state cookie, and the key page. Every answer is
// `Cache-Control: no-store`: it may carry a key, and a refusal must not be replayed by a proxy.
import type { ConfigHolder } from "../config/snapshot.ts";
import { controller } from "../http/elysia.ts";
import { BodyReadTimeout, readWithin } from "../http/body-deadline.ts";
import { errorResponse, GatewayError, gatewayErrorResponse } from "../http/errors.ts";
import type { Logger } from "../telemetry/logger.ts";
import { readExchangeRequest } from "./exchange-request.ts";
import type { IdentityService } from "./service.ts";
import type { IdentityProvider, OidcProvider } from "./settings.ts";
import { authorizeUrl, redeem, returnedCode } from "./login-flows.ts";
import { chooserPage, failurePage, keyPage, redirect } from "./pages.ts";
import { clearedStateCookie, newSignIn, stateCookie } from "./sign-in-state.ts";

const NO_STORE = { "cache-control": "no-store" };
const NO_PROVIDER = "no identity provider is configured on this gateway, so there is no token to exchange (identity-providers)";
/** An exchange's body is an ID token and a name: a few KiB. */
const MAX_EXCHANGE_BODY = 64 * 1024;

export interface IdentityRouteDeps {
  readonly holder: ConfigHolder;
  readonly logger: Logger;
  /** Absent when the gateway runs without a key store (nothing can be issued). */
  readonly identity: IdentityService | undefined;
  /** Epoch milliseconds. */
  readonly now: () => number;
}

const refuse = (code: Parameters<typeof errorResponse>[0], message: string, headers: Record<string, string> = {}) => errorResponse(code, message, { headers: { ...NO_STORE, ...headers } });

const tooLarge = () => errorResponse("invalid_request", `the request body is over ${MAX_EXCHANGE_BODY} bytes; it carries an ID token and a provider name`, { headers: { ...NO_STORE, connection: "close" } });

async function exchange(deps: IdentityRouteDeps, request: Request, rotate: boolean): Promise<Response> {
  const snapshot = deps.holder.current;
  const providers = snapshot.identity.providers;
  if (providers.length === 0 || !deps.identity) return refuse("invalid_request", NO_PROVIDER);
  // A declared size past the bound is refused before a byte is read (the listener's own cap is MiBs).
  if (Number(request.headers.get("content-length") ?? 0) > MAX_EXCHANGE_BODY) return tooLarge();
  let text: string;
  try {
    text = await readWithin(request, snapshot.limits.bodyReadTimeoutMs, "text");
  } catch (error) {
    return error instanceof BodyReadTimeout ? errorResponse("invalid_request", "the request body did not arrive in time", { status: 408, headers: { ...NO_STORE, connection: "close" } }) : refuse("invalid_request", "the request body could not be read");
  }
  if (text.length > MAX_EXCHANGE_BODY) return tooLarge();
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

/** The provider named in a sign-in path, if it offers browser sign-in. */
function browserProvider(deps: IdentityRouteDeps, name: string): IdentityProvider | undefined {
  return deps.holder.current.identity.providers.find((p) => p.name === name && p.browserLogin !== undefined);
}

const noSignIn = (name: string) => failurePage(404, `no identity provider named ${JSON.stringify(name.slice(0, 100))} offers browser sign-in on this gateway`);
const nowSecs = (deps: IdentityRouteDeps) => Math.floor(deps.now() / 1000);

/** GET /auth/login/<p>: a new sign-in's state in the cookie, and the browser sent to the provider. */
async function startSignIn(deps: IdentityRouteDeps, request: Request, name: string): Promise<Response> {
  const provider = browserProvider(deps, name);
  const snapshot = deps.holder.current;
  const signingKey = snapshot.auth.signingKey;
  const base = snapshot.identity.publicUrl;
  if (!provider || !deps.identity || signingKey === undefined || base === undefined) return noSignIn(name);
  const rotate = new URL(request.url).searchParams.get("refresh") === "1";
  const { state, challenge } = newSignIn(provider.name, rotate, nowSecs(deps));
  let location: string;
  try {
    location = await authorizeUrl(deps.identity, provider, state, challenge, callbackUrl(base, provider.name));
  } catch (error) {
    deps.logger.warn("identity provider unreachable", { provider: provider.name, cause: (error as Error).message });
    return failurePage(502, `identity provider ${provider.name} could not be reached: ${(error as Error).message}`);
  }
  return redirect(location, { "set-cookie": stateCookie(state, signingKey.reveal(), base.startsWith("https:")) });
}

/** GET /auth/callback/<p>: the state checked, the code redeemed, the person's key shown. Single use. */
async function finishSignIn(deps: IdentityRouteDeps, request: Request, name: string): Promise<Response> {
  const provider = browserProvider(deps, name);
  const snapshot = deps.holder.current;
  const signingKey = snapshot.auth.signingKey;
  const base = snapshot.identity.publicUrl;
  if (!provider || !deps.identity || signingKey === undefined || base === undefined) return noSignIn(name);
  const cleared = { "set-cookie": clearedStateCookie(base.startsWith("https:")) };
  const query = new URL(request.url).searchParams;
  const checked = deps.identity.signIns.redeem(request.headers.get("cookie"), provider.name, query.get("state"), signingKey.reveal(), nowSecs(deps));
  if (!checked.ok) return failurePage(400, checked.reason, cleared);
  const returned = returnedCode(query, provider.name);
  if (!returned.ok) return failurePage(400, returned.message, cleared);
  const redeemed = await redeem(deps.identity, provider, returned.code, checked.state, callbackUrl(base, provider.name));
  if (!redeemed.ok) {
    if (redeemed.status === 502) deps.logger.warn("identity provider unreachable", { provider: provider.name, cause: redeemed.message });
    return failurePage(redeemed.status, redeemed.message, cleared);
  }
  try {
    return keyPage(await deps.identity.exchange.issue(redeemed.person, checked.state.r), provider.name, cleared);
  } catch (error) {
    if (!(error instanceof GatewayError)) throw error;
    return failurePage(error.status, error.message, cleared);
  }
}

const callbackUrl = (base: string, provider: string) => `${base}/auth/callback/${encodeURIComponent(provider)}`;

export const identityRoutes = (deps: IdentityRouteDeps) =>
  controller("identity.routes")
    .post("/auth/token", ({ request }) => exchange(deps, request, false), { parse: "none" })
    .post("/auth/token/refresh", ({ request }) => exchange(deps, request, true), { parse: "none" })
    .get("/auth/token", () => {
      const offered = deps.holder.current.identity.providers.filter((p) => p.browserLogin !== undefined).map((p) => p.name);
      return offered.length === 0 ? refuse("not_found", "no identity provider offers browser sign-in on this gateway") : chooserPage(offered);
    })
    .get("/auth/login/:provider", ({ request, params }) => startSignIn(deps, request, params.provider))
    .get("/auth/callback/:provider", ({ request, params }) => finishSignIn(deps, request, params.provider));
