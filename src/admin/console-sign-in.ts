// The console's sign-in with an identity provider (design/console.md "Sign-in", docs/console.md): for each
// oidc instance in auth.admin_auth with browser_login, GET /ui/login/<p> sends the browser to the provider
// and GET /ui/callback/<p> redeems the code here, so the client secret never reaches the browser. It is the
// data plane's browser sign-in (src/identity: PKCE, the signed single-use state cookie, the code redeemed
// and the ID token verified) with its own cookie name and path, so neither flow sees the other's state.
// The bearer handed to the console is the ID token itself, checked first by the admin chain's own oidc
// module (it must verify for the instance's `audience`). It travels in the redirect's fragment: a browser
// never sends a fragment to a server nor puts it in a Referer, and the app reads and clears it at once.
// redirect_uri is this listener's origin as the browser reached it: the admin guard has already refused a
// Host that does not name the listener (or security.admin_allowed_hosts), so the origin cannot be planted.
import type { CredentialCache } from "../auth/credential-cache.ts";
import type { Snapshot } from "../config/snapshot.ts";
import { authorizeUrl, redeem, returnedCode } from "../identity/login-flows.ts";
import { failurePage, redirect } from "../identity/pages.ts";
import type { IdentityService } from "../identity/service.ts";
import type { OidcProvider } from "../identity/settings.ts";
import { clearedStateCookie, newSignIn, stateCookie, type StateCookieScope } from "../identity/sign-in-state.ts";
import type { Logger } from "../telemetry/logger.ts";

export const CONSOLE_LOGIN_PATH = "/ui/login/";
export const CONSOLE_CALLBACK_PATH = "/ui/callback/";
/** The fragment member the app reads the bearer from (console/app/api.ts). */
export const HANDED_OVER = "id_token";
const COOKIE: StateCookieScope = { name: "gw_console_sign_in", path: "/ui/callback" };
const START_AGAIN = "/ui/";

export interface ConsoleSignInDeps {
  readonly identity: IdentityService | undefined;
  readonly cache: CredentialCache | undefined;
  readonly logger: Logger;
  /** Epoch milliseconds. */
  readonly now: () => number;
}

const offered = new WeakMap<Snapshot, readonly OidcProvider[]>();

/** The oidc instances the console offers a sign-in with, in config order (worked out once per snapshot). */
export function consoleSignInProviders(snapshot: Snapshot): readonly OidcProvider[] {
  let providers = offered.get(snapshot);
  if (providers === undefined) {
    const chain = snapshot.auth.adminChain;
    providers =
      snapshot.auth.signingKey === undefined
        ? []
        : snapshot.identity.providers.filter((p): p is OidcProvider => p.module === "oidc" && p.browserLogin !== undefined && p.maxAdminScope !== "none" && (chain.includes("oidc") || chain.includes(p.name)));
    offered.set(snapshot, providers);
  }
  return providers;
}

/** Whether the path is one of the console's sign-in routes. */
export const isConsoleSignInPath = (pathname: string) => pathname.startsWith(CONSOLE_LOGIN_PATH) || pathname.startsWith(CONSOLE_CALLBACK_PATH);

/** GET /ui/login/<p> and /ui/callback/<p>; anything else under them is a 404 page. */
export function consoleSignIn(deps: ConsoleSignInDeps, snapshot: Snapshot, request: Request, pathname: string): Promise<Response> | Response {
  const login = pathname.startsWith(CONSOLE_LOGIN_PATH);
  let name: string;
  try {
    name = decodeURIComponent(pathname.slice((login ? CONSOLE_LOGIN_PATH : CONSOLE_CALLBACK_PATH).length));
  } catch {
    name = "";
  }
  const provider = consoleSignInProviders(snapshot).find((p) => p.name === name);
  if (request.method !== "GET" || !provider || !deps.identity) {
    return failurePage(404, `no identity provider named ${JSON.stringify(name.slice(0, 100))} offers the console a sign-in (an oidc instance in auth.admin_auth with browser_login)`, {}, START_AGAIN);
  }
  const url = new URL(request.url);
  const context = { deps, identity: deps.identity, provider, signingKey: snapshot.auth.signingKey!.reveal(), url, secure: url.protocol === "https:", redirectUri: `${url.origin}${CONSOLE_CALLBACK_PATH}${encodeURIComponent(provider.name)}` };
  return login ? start(context) : finish(context, snapshot, request);
}

interface Context {
  readonly deps: ConsoleSignInDeps;
  readonly identity: IdentityService;
  readonly provider: OidcProvider;
  readonly signingKey: string;
  readonly url: URL;
  readonly secure: boolean;
  readonly redirectUri: string;
}

const nowSecs = (deps: ConsoleSignInDeps) => Math.floor(deps.now() / 1000);

async function start(c: Context): Promise<Response> {
  const { state, challenge } = newSignIn(c.provider.name, false, nowSecs(c.deps));
  let location: string;
  try {
    location = await authorizeUrl(c.identity, c.provider, state, challenge, c.redirectUri);
  } catch (error) {
    c.deps.logger.warn("identity provider unreachable", { provider: c.provider.name, cause: (error as Error).message });
    return failurePage(502, `identity provider ${c.provider.name} could not be reached: ${(error as Error).message}`, {}, START_AGAIN);
  }
  return redirect(location, { "set-cookie": stateCookie(state, c.signingKey, c.secure, COOKIE) });
}

async function finish(c: Context, snapshot: Snapshot, request: Request): Promise<Response> {
  const { provider, url } = c;
  const cleared = { "set-cookie": clearedStateCookie(c.secure, COOKIE) };
  const failed = (status: number, message: string) => failurePage(status, message, cleared, START_AGAIN);
  const checked = c.identity.signIns.redeem(request.headers.get("cookie"), provider.name, url.searchParams.get("state"), c.signingKey, nowSecs(c.deps), COOKIE);
  if (!checked.ok) return failed(400, checked.reason);
  const returned = returnedCode(url.searchParams, provider.name);
  if (!returned.ok) return failed(400, returned.message);
  const redeemed = await redeem(c.identity, provider, returned.code, checked.state, c.redirectUri);
  if (!redeemed.ok) {
    if (redeemed.status === 502) c.deps.logger.warn("identity provider unreachable", { provider: provider.name, cause: redeemed.message });
    return failed(redeemed.status, redeemed.message);
  }
  const idToken = redeemed.idToken!;
  // The admin chain's own check: a token it would not accept is no use to the console.
  const principal = await c.identity.modules.admin(snapshot, provider.name, idToken, c.deps.cache);
  if (principal === undefined) {
    return failed(403, `the admin plane does not accept ${provider.name}'s ID token as a bearer: it must verify for the instance's audience ${JSON.stringify(provider.audience)} (browser_login.client_id, when set, must be that audience)`);
  }
  // A principal with no admin binding still signs in: the console shows the 403 naming the refusal.
  return redirect(`${START_AGAIN}#${HANDED_OVER}=${encodeURIComponent(idToken)}`, cleared);
}
