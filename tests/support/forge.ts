// An imitation of a code forge (GitHub) for the identity tests: its OAuth app web flow and the two REST
// calls the gateway makes after it, on 127.0.0.1 (Bun.serve), one base for web and API paths alike.
// Followed, as GitHub documents them:
// - "Authorizing OAuth apps", web application flow (docs.github.com/apps/oauth-apps/building-oauth-apps/
//   authorizing-oauth-apps): GET /login/oauth/authorize with client_id, redirect_uri, scope, state, login,
//   code_challenge + code_challenge_method (S256 only); back to redirect_uri?code&state; POST
//   /login/oauth/access_token with client_id, client_secret, code, redirect_uri, code_verifier, answered
//   {access_token, scope, token_type: "bearer"} as JSON under Accept: application/json, else form-encoded.
// - "Troubleshooting authorization request errors": a user who denies is sent back with error=access_denied,
//   error_description, error_uri and state.
// - "Troubleshooting OAuth app access token request errors": incorrect_client_credentials,
//   redirect_uri_mismatch, bad_verification_code, each with error_description and error_uri, with HTTP 200.
//   A code whose code_verifier does not match is "incorrect, expired, or doesn't match what you received
//   in the first request": bad_verification_code (the docs name no PKCE-specific error).
// - REST: GET /user and GET /user/orgs (objects with login) with Authorization: Bearer or token; 401
//   {"message":"Bad credentials"} for a token the forge never issued. Also under /api/v3 as on GHES.
import { createHash, randomBytes } from "node:crypto";

export interface ForgeUser {
  login: string;
  id: number;
  /** Organisation logins; the array may be changed between sign-ins to model a membership change. */
  orgs: string[];
}

export interface ForgeOptions {
  clientId: string;
  clientSecret: string;
  users: ForgeUser[];
  /** The OAuth app's registered callback URL; without one any redirect_uri is accepted. */
  callbackUrl?: string;
}

/** One POST to /login/oauth/access_token as it arrived. */
export interface ForgeTokenRequest {
  contentType: string;
  accept: string;
  params: Record<string, string>;
}

/** One REST call as it arrived. */
export interface ForgeApiRequest {
  path: string;
  authorization: string;
  accept: string;
}

export interface StartedForge {
  base: string;
  tokenRequests: ForgeTokenRequest[];
  apiRequests: ForgeApiRequest[];
  /** Access tokens issued so far, by login. */
  tokens: Map<string, string>;
  stop(): Promise<void>;
}

const DOCS = "https://docs.github.com/apps/managing-oauth-apps";
const TOKEN_ERRORS = {
  incorrect_client_credentials: "The client_id and/or client_secret passed are incorrect.",
  redirect_uri_mismatch: "The redirect_uri MUST match the registered callback URL for this application.",
  bad_verification_code: "The code passed is incorrect or expired.",
} as const;
const TOKEN_ERROR_ANCHORS: Record<keyof typeof TOKEN_ERRORS, string> = {
  incorrect_client_credentials: "incorrect-client-credentials",
  redirect_uri_mismatch: "redirect-uri-mismatch2",
  bad_verification_code: "bad-verification-code",
};
const CODE_TTL_MS = 10 * 60_000;

interface Pending {
  redirectUri: string;
  state: string | null;
  scope: string;
  challenge: string | null;
}

interface Grant extends Pending {
  login: string;
  expires: number;
}

const random = (bytes: number) => randomBytes(bytes).toString("hex");
const html = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A redirect_uri GitHub accepts for a callback URL: same scheme, host and port, path at or under it. */
function redirectAllowed(callbackUrl: string | undefined, redirectUri: string): boolean {
  if (!callbackUrl) return URL.canParse(redirectUri);
  if (!URL.canParse(redirectUri)) return false;
  const want = new URL(callbackUrl);
  const got = new URL(redirectUri);
  const dir = want.pathname.endsWith("/") ? want.pathname : `${want.pathname}/`;
  return got.origin === want.origin && (got.pathname === want.pathname || got.pathname.startsWith(dir));
}

function withParams(target: string, params: Record<string, string | null>): Response {
  const url = new URL(target);
  for (const [name, value] of Object.entries(params)) if (value !== null) url.searchParams.set(name, value);
  return Response.redirect(url.href, 302);
}

async function formOf(req: Request): Promise<Record<string, string>> {
  const params: Record<string, string> = Object.fromEntries(new URL(req.url).searchParams);
  const type = req.headers.get("content-type") ?? "";
  if (type.includes("application/json")) Object.assign(params, await req.json());
  else if (type.includes("application/x-www-form-urlencoded") || type.includes("multipart/form-data")) {
    for (const [name, value] of await req.formData()) params[name] = String(value);
  }
  return params;
}

export async function startForge(opts: ForgeOptions): Promise<StartedForge> {
  const pending = new Map<string, Pending>();
  const codes = new Map<string, Grant>();
  const byToken = new Map<string, string>();
  const tokens = new Map<string, string>();
  const tokenRequests: ForgeTokenRequest[] = [];
  const apiRequests: ForgeApiRequest[] = [];

  function authorizePage(url: URL): Response {
    const q = url.searchParams;
    // GitHub shows a 404 page for an unknown client_id rather than redirecting anywhere.
    if (q.get("client_id") !== opts.clientId) return new Response("Not Found", { status: 404 });
    const redirectUri = q.get("redirect_uri") ?? opts.callbackUrl ?? "";
    if (!redirectAllowed(opts.callbackUrl, redirectUri)) {
      if (!opts.callbackUrl) return new Response("redirect_uri is required", { status: 400 });
      return withParams(opts.callbackUrl, {
        error: "redirect_uri_mismatch",
        error_description: TOKEN_ERRORS.redirect_uri_mismatch,
        error_uri: `${DOCS}/troubleshooting-authorization-request-errors/#redirect-uri-mismatch`,
        state: q.get("state"),
      });
    }
    const challenge = q.get("code_challenge");
    const method = q.get("code_challenge_method");
    if ((method !== null && method !== "S256") || (method !== null && challenge === null)) {
      return new Response("code_challenge_method must be S256, with a code_challenge", { status: 400 });
    }
    const id = random(16);
    pending.set(id, { redirectUri, state: q.get("state"), scope: q.get("scope") ?? "", challenge });
    // The login parameter suggests one account: only that one is offered, as GitHub does.
    const users = opts.users.filter((user) => !q.get("login") || user.login === q.get("login"));
    const buttons = users.map((user) => `<button type="submit" name="login" value="${html(user.login)}">Authorize ${html(user.login)}</button>`);
    const body = `<!doctype html><title>Authorize application</title><h1>Authorize ${html(opts.clientId)}</h1>
<form method="post" action="/login/oauth/authorize">
<input type="hidden" name="request" value="${id}">
${buttons.join("\n")}
<button type="submit" name="cancel" value="1">Cancel</button>
</form>`;
    return new Response(body, { headers: { "content-type": "text/html; charset=utf-8" } });
  }

  async function decide(req: Request): Promise<Response> {
    const form = await formOf(req);
    const request = pending.get(form.request ?? "");
    if (!request) return new Response("unknown or used authorization request", { status: 400 });
    pending.delete(form.request ?? "");
    if (form.cancel) {
      return withParams(request.redirectUri, {
        error: "access_denied",
        error_description: "The user has denied your application access.",
        error_uri: `${DOCS}/troubleshooting-authorization-request-errors/#access-denied`,
        state: request.state,
      });
    }
    const user = opts.users.find((candidate) => candidate.login === form.login);
    if (!user) return new Response("unknown user", { status: 400 });
    const code = random(10);
    codes.set(code, { ...request, login: user.login, expires: Date.now() + CODE_TTL_MS });
    return withParams(request.redirectUri, { code, state: request.state });
  }

  async function accessToken(req: Request): Promise<Response> {
    const params = await formOf(req);
    const accept = req.headers.get("accept") ?? "";
    tokenRequests.push({ contentType: req.headers.get("content-type") ?? "", accept, params });
    // GitHub answers in the format the Accept header asks for, errors included, and errors with 200.
    const answer = (body: Record<string, string>) =>
      accept.includes("application/json")
        ? Response.json(body)
        : new Response(new URLSearchParams(body).toString(), { headers: { "content-type": "application/x-www-form-urlencoded; charset=utf-8" } });
    const fail = (error: keyof typeof TOKEN_ERRORS) =>
      answer({ error, error_description: TOKEN_ERRORS[error], error_uri: `${DOCS}/troubleshooting-oauth-app-access-token-request-errors/#${TOKEN_ERROR_ANCHORS[error]}` });

    if (params.client_id !== opts.clientId || params.client_secret !== opts.clientSecret) return fail("incorrect_client_credentials");
    const grant = codes.get(params.code ?? "");
    // A code is good for one try, whatever that try's outcome.
    codes.delete(params.code ?? "");
    if (!grant || grant.expires < Date.now()) return fail("bad_verification_code");
    if (params.redirect_uri !== undefined && params.redirect_uri !== grant.redirectUri) return fail("redirect_uri_mismatch");
    if (grant.challenge !== null) {
      const verifier = params.code_verifier ?? "";
      const computed = createHash("sha256").update(verifier).digest("base64url");
      if (computed !== grant.challenge) return fail("bad_verification_code");
    }
    const token = `gho_${randomBytes(18).toString("base64url")}`;
    byToken.set(token, grant.login);
    tokens.set(grant.login, token);
    // GitHub reports the granted scopes comma-separated.
    return answer({ access_token: token, token_type: "bearer", scope: grant.scope.split(/[\s,]+/).filter(Boolean).join(",") });
  }

  function api(req: Request, path: string): Response {
    const authorization = req.headers.get("authorization") ?? "";
    apiRequests.push({ path, authorization, accept: req.headers.get("accept") ?? "" });
    const match = /^(?:bearer|token)\s+(\S+)$/i.exec(authorization);
    if (!match) return Response.json({ message: "Requires authentication", documentation_url: "https://docs.github.com/rest", status: "401" }, { status: 401 });
    const user = opts.users.find((candidate) => candidate.login === byToken.get(match[1] ?? ""));
    if (!user) return Response.json({ message: "Bad credentials", documentation_url: "https://docs.github.com/rest", status: "401" }, { status: 401 });
    if (path === "/user") {
      return Response.json({ login: user.login, id: user.id, node_id: `U_${user.id}`, type: "User", site_admin: false, name: null, email: null, html_url: `${base}/${user.login}` });
    }
    return Response.json(
      user.orgs.map((login, index) => ({
        login,
        id: 1000 + index,
        node_id: `O_${login}`,
        url: `${base}/orgs/${login}`,
        repos_url: `${base}/orgs/${login}/repos`,
        members_url: `${base}/orgs/${login}/members{/member}`,
        avatar_url: `${base}/avatars/${login}`,
        description: null,
      })),
    );
  }

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const path = url.pathname.replace(/^\/api\/v3(?=\/)/, "");
      if (path === "/login/oauth/authorize") return req.method === "POST" ? decide(req) : authorizePage(url);
      if (path === "/login/oauth/access_token" && req.method === "POST") return accessToken(req);
      if ((path === "/user" || path === "/user/orgs") && req.method === "GET") return api(req, path);
      return Response.json({ message: "Not Found", documentation_url: "https://docs.github.com/rest" }, { status: 404 });
    },
  });
  const base = `http://127.0.0.1:${server.port}`;

  return { base, tokenRequests, apiRequests, tokens, stop: () => server.stop(true) };
}
