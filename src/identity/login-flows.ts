// Each module's side of the browser sign-in (design/identity.md, "Browser sign-in"): where the browser is
// sent (authorization code with PKCE S256; oidc adds a nonce) and how a returned code becomes a person.
// oidc: the discovery's endpoints, the code redeemed with client_secret_basic, the ID token verified for
// the sign-in's client id and nonce. forge: GitHub's web application flow (docs.github.com, "Authorizing
// OAuth apps"): the code redeemed at {token_base}/login/oauth/access_token with the client id and secret
// in the form (a refused code is an `error` member, often with status 200), then {api_base}/user and
// {api_base}/user/orgs. The client secret is sent only there, and never appears in a message.
import { issuerJson, IssuerUnreachable, trusting } from "./issuer-http.ts";
import type { SignedIn } from "./exchange.ts";
import type { IdentityService } from "./service.ts";
import type { ForgeProvider, IdentityProvider, OidcProvider } from "./settings.ts";
import type { SignInState } from "./sign-in-state.ts";
import { forgeIdentity, forgeOrgGroup } from "./team.ts";

/** `idToken`: the oidc module's verified ID token (the console's admin bearer). */
export type Redeemed = { readonly ok: true; readonly person: SignedIn; readonly idToken?: string } | { readonly ok: false; readonly status: 400 | 403 | 502; readonly message: string };

const OIDC_SCOPE = "openid profile email";
/** GitHub's login rule: alphanumerics and single hyphens, at most 39; anything else cannot name a group. */
const FORGE_LOGIN = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/;
const FORGE_API_HEADERS = { accept: "application/vnd.github+json", "user-agent": "gateway-token-exchange" };
const FORM = "application/x-www-form-urlencoded";

const unreachable = (provider: string, error: unknown): Redeemed => ({ ok: false, status: 502, message: `identity provider ${provider} could not be reached: ${(error as Error).message}` });
const refusedCode = (provider: string, body: unknown): Redeemed => {
  const error = typeof body === "object" && body !== null && typeof (body as { error?: unknown }).error === "string" ? (body as { error: string }).error.slice(0, 200) : "no error given";
  return { ok: false, status: 400, message: `${provider} refused the sign-in's code (${error})` };
};

/** The provider's authorization URL for this sign-in. */
export async function authorizeUrl(identity: IdentityService, provider: IdentityProvider, state: SignInState, challenge: string, redirectUri: string): Promise<string> {
  const clientId = provider.browserLogin!.clientId;
  const params = new URLSearchParams({ response_type: "code", client_id: clientId, redirect_uri: redirectUri, state: state.s, code_challenge: challenge, code_challenge_method: "S256" });
  if (provider.module === "forge") {
    params.set("scope", provider.scopes.join(" "));
    return `${provider.authorizeBase}/login/oauth/authorize?${params}`;
  }
  params.set("scope", OIDC_SCOPE);
  params.set("nonce", state.n);
  const endpoint = (await (await identity.verifier(provider)).discovery()).authorization_endpoint;
  if (endpoint === undefined) throw new IssuerUnreachable(`${provider.name}'s discovery names no authorization_endpoint`);
  return `${endpoint}${endpoint.includes("?") ? "&" : "?"}${params}`;
}

/** The code the provider sent the browser back with, or (its `error=`, or none) why there is none. */
export function returnedCode(query: URLSearchParams, provider: string): { readonly ok: true; readonly code: string } | { readonly ok: false; readonly message: string } {
  const error = query.get("error");
  if (error !== null) {
    const description = query.get("error_description");
    return { ok: false, message: `${provider} did not sign you in: ${error.slice(0, 100)}${description ? ` (${description.slice(0, 300)})` : ""}` };
  }
  const code = query.get("code");
  return code ? { ok: true, code } : { ok: false, message: `${provider} returned no code` };
}

/** The returned code, redeemed and turned into the person it signs in. */
export function redeem(identity: IdentityService, provider: IdentityProvider, code: string, state: SignInState, redirectUri: string): Promise<Redeemed> {
  return provider.module === "oidc" ? redeemOidc(identity, provider, code, state, redirectUri) : redeemForge(provider, code, state, redirectUri);
}

async function redeemOidc(identity: IdentityService, provider: OidcProvider, code: string, state: SignInState, redirectUri: string): Promise<Redeemed> {
  const login = provider.browserLogin!;
  let idToken: unknown;
  try {
    const verifier = await identity.verifier(provider);
    const endpoint = (await verifier.discovery()).token_endpoint;
    if (endpoint === undefined) return { ok: false, status: 502, message: `${provider.name}'s discovery names no token_endpoint` };
    // RFC 6749 2.3.1: client_secret_basic form-encodes both parts before base64.
    const basic = Buffer.from(`${encodeURIComponent(login.clientId)}:${encodeURIComponent(login.clientSecret.reveal())}`).toString("base64");
    const body = new URLSearchParams({ grant_type: "authorization_code", code, redirect_uri: redirectUri, code_verifier: state.v });
    const read = await issuerJson(verifier.http, endpoint, { method: "POST", headers: { authorization: `Basic ${basic}`, "content-type": FORM, accept: "application/json" }, body }, `${provider.name} token endpoint`);
    if (read.status !== 200) return refusedCode(provider.name, read.body);
    idToken = (read.body as { id_token?: unknown }).id_token;
  } catch (error) {
    return unreachable(provider.name, error);
  }
  if (typeof idToken !== "string") return { ok: false, status: 400, message: `${provider.name} answered the code without an ID token` };
  const checked = await identity.verifyOidc(provider, idToken, { audience: login.clientId, nonce: state.n });
  if (checked.ok) return { ok: true, person: checked.person, idToken };
  if (checked.kind === "unreachable") return { ok: false, status: 502, message: `identity provider ${provider.name} could not be reached: ${checked.reason}` };
  return { ok: false, status: checked.kind === "unusable" ? 403 : 400, message: `${provider.name}'s ID token was refused: ${checked.reason}` };
}

async function redeemForge(provider: ForgeProvider, code: string, state: SignInState, redirectUri: string): Promise<Redeemed> {
  const login = provider.browserLogin!;
  const http = trusting(provider.caCertPem);
  try {
    const form = new URLSearchParams({ client_id: login.clientId, client_secret: login.clientSecret.reveal(), code, redirect_uri: redirectUri, code_verifier: state.v });
    const token = await issuerJson(http, `${provider.tokenBase}/login/oauth/access_token`, { method: "POST", headers: { accept: "application/json", "content-type": FORM }, body: form }, `${provider.name} access_token`);
    const accessToken = (token.body as { access_token?: unknown } | null)?.access_token;
    if (token.status !== 200 || typeof accessToken !== "string" || accessToken === "") return refusedCode(provider.name, token.body);
    const headers = { ...FORGE_API_HEADERS, authorization: `Bearer ${accessToken}` };
    const user = await issuerJson(http, `${provider.apiBase}/user`, { headers }, `${provider.name} /user`);
    const name = (user.body as { login?: unknown } | null)?.login;
    if (user.status !== 200 || typeof name !== "string") return { ok: false, status: 502, message: `${provider.name} /user answered HTTP ${user.status} without a login` };
    if (!FORGE_LOGIN.test(name)) return { ok: false, status: 403, message: `${provider.name} login is not one a group can be named after` };
    let groups: string[] = [];
    if (provider.fetchOrgs) {
      const orgs = await issuerJson(http, `${provider.apiBase}/user/orgs?per_page=100`, { headers }, `${provider.name} /user/orgs`);
      if (orgs.status !== 200 || !Array.isArray(orgs.body)) return { ok: false, status: 502, message: `${provider.name} /user/orgs answered HTTP ${orgs.status} without a list` };
      groups = orgs.body.flatMap((org: unknown) => {
        const orgLogin = (org as { login?: unknown } | null)?.login;
        return typeof orgLogin === "string" && orgLogin !== "" ? [forgeOrgGroup(orgLogin)] : [];
      });
    }
    return { ok: true, person: { provider: provider.name, identity: forgeIdentity(name), groups } };
  } catch (error) {
    return unreachable(provider.name, error);
  }
}
