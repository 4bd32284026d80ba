// The hosted sign-in on the built binary, in a real headless browser (Debian's chromium through
// playwright-core), against a real OpenID Provider (oidc-provider, tests/support/oidc-op.ts) and an
// imitation of a code forge's documented OAuth web flow (tests/support/forge.ts): the chooser, PKCE S256,
// state and nonce, the key page and its Refresh, the same key on signing in again; and every failure a
// readable page with nothing issued: cancel at the provider, a replayed, forged or other-provider state,
// a provider's error, a refused code.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { launchBrowser } from "../support/chromium.ts";
import { startForge, type StartedForge } from "../support/forge.ts";
import { freePort, json, startGateway, type RunningGateway } from "../support/gateway.ts";
import { cancelAtOp, signInAtOp, startOp, type StartedOp } from "../support/oidc-op.ts";

const ENV = { GW_SIGNING_KEY: "e2e-sign-in-signing-key-0b7e", GW_ADMIN: "e2e-sign-in-admin-3c19", OP_SECRET: "op-client-secret-7f2a", FORGE_SECRET: "forge-client-secret-91dd" };
const port = freePort();
const PUBLIC_URL = `http://127.0.0.1:${port}`;

let op: StartedOp;
let forge: StartedForge;
let gw: RunningGateway;
let browser: Browser;

beforeAll(async () => {
  [op, forge, browser] = await Promise.all([
    startOp({
      clients: [{ client_id: "gw-web", client_secret: ENV.OP_SECRET, redirect_uris: [`${PUBLIC_URL}/auth/callback/corp`] }],
      accounts: [
        { sub: "rosa", claims: { groups: ["ml-team"], email: "rosa@example.test" } },
        { sub: "sam", claims: { groups: ["ml-team"] } },
      ],
    }),
    startForge({ clientId: "Iv1.gateway", clientSecret: ENV.FORGE_SECRET, callbackUrl: `${PUBLIC_URL}/auth/callback/forge`, users: [{ login: "octo", id: 42, orgs: ["acme"] }] }),
    launchBrowser(),
  ]);
  gw = await startGateway(
    `listen: 127.0.0.1:${port}
admin_listen: 127.0.0.1:0
public_url: ${PUBLIC_URL}
providers: {local: {protocol: mock}}
models: {chat: {provider: local}}
auth:
  signing_key: {env: GW_SIGNING_KEY}
  chain: [keys]
  admin_auth: [admin-tokens]
  admin_tokens: [{token: {env: GW_ADMIN}}]
groups: {ml: {}, acme: {}}
role_bindings:
  corp: {ml-team: {group: ml}}
  forge: {"forge:org/acme": {group: acme}}
identity-providers:
  corp:
    module: oidc
    settings: {issuer: "${op.issuer}", audience: gw}
    browser_login: {client_id: gw-web, client_secret: {env: OP_SECRET}}
  forge:
    module: forge
    settings: {client_id: Iv1.gateway, api_base: "${forge.base}", authorize_base: "${forge.base}", token_base: "${forge.base}"}
    browser_login: {client_secret: {env: FORGE_SECRET}}
`,
    { env: ENV },
  );
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await gw?.stop();
  await Promise.all([op?.stop(), forge?.stop()]);
});

const keyCount = async () => (await json(await fetch(`${gw.admin}/keys?limit=500`, { headers: { "x-admin-token": ENV.GW_ADMIN } }))).items.length;
const chat = (token: string) =>
  fetch(`${gw.data}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify({ model: "chat", messages: [{ role: "user", content: "hi" }] }) });

const PAGE_HEADERS = {
  "cache-control": "no-store",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
};
function expectPageHeaders(headers: Headers): void {
  for (const [name, value] of Object.entries(PAGE_HEADERS)) expect({ name, value: headers.get(name) }).toEqual({ name, value });
  const csp = headers.get("content-security-policy") ?? "";
  for (const directive of ["default-src 'none'", "frame-ancestors 'none'", "base-uri 'none'"]) expect(csp).toContain(directive);
}

/** What the key page shows, read off the page. */
async function keyShown(page: Page): Promise<{ token: string; identity: string; team: string; group: string }> {
  const field = async (id: string) => ((await page.textContent(`#${id}`)) ?? "").trim();
  return { token: await field("key"), identity: await field("identity"), team: await field("team"), group: await field("group") };
}

const atOp = (url: URL | string) => String(url).startsWith(`${op.issuer}/`);
const atCallback = (url: URL | string) => String(url).startsWith(`${PUBLIC_URL}/auth/callback/corp`);

/**
 * `go` leads the browser to the OP: its login form when it has no session for us (and consent the first
 * time), else straight back; resolves on the gateway's answer at the callback.
 */
async function throughCorp(page: Page, login: string, go: () => Promise<unknown>): Promise<void> {
  // Both watches start before the click: a provider with a session sends the browser back at once.
  const answered = page.waitForResponse((r) => atCallback(r.url()));
  const reachedOp = page.waitForURL(atOp, { timeout: 10_000 }).then(() => "op" as const, () => "never" as const);
  await go();
  if ((await Promise.race([answered.then(() => "back" as const), reachedOp])) === "op") {
    await page.waitForLoadState();
    if ((await page.locator('input[name="login"]').count()) > 0) await signInAtOp(page, op.issuer, login);
    else await page.click("button[type=submit]");
  }
  await answered;
  await page.waitForLoadState();
}

async function signInWithCorp(page: Page, login: string): Promise<void> {
  await page.goto(`${gw.data}/auth/token`);
  await throughCorp(page, login, () => page.click("text=Sign in with corp"));
}

describe("the sign-in page", () => {
  test("GET /auth/token: one control per browser_login provider in config order, each naming it and leading to /auth/login/<p>; the page headers", async () => {
    const answer = await fetch(`${gw.data}/auth/token`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toContain("text/html");
    expectPageHeaders(answer.headers);
    const html = await answer.text();
    const links = [...html.matchAll(/href="([^"]+)"[^>]*>([^<]+)</g)].map((m) => [m[1], m[2]]);
    expect(links).toEqual([
      ["/auth/login/corp", "Sign in with corp"],
      ["/auth/login/forge", "Sign in with forge"],
    ]);
    expect(html).not.toContain("<script");
  });

  test("GET /auth/login/<p>: 302 to the provider with code, client id, redirect_uri, scope, state, nonce and an S256 challenge; the state cookie; unknown provider 404", async () => {
    const answer = await fetch(`${gw.data}/auth/login/corp`, { redirect: "manual" });
    expect(answer.status).toBe(302);
    expectPageHeaders(answer.headers);
    const location = new URL(answer.headers.get("location")!);
    expect(location.href.startsWith(`${op.issuer}/`)).toBe(true);
    const q = Object.fromEntries(location.searchParams);
    expect(q).toMatchObject({ response_type: "code", client_id: "gw-web", redirect_uri: `${PUBLIC_URL}/auth/callback/corp`, scope: "openid profile email", code_challenge_method: "S256" });
    expect(q.state!.length).toBeGreaterThanOrEqual(32);
    expect(q.nonce!.length).toBeGreaterThanOrEqual(32);
    expect(q.code_challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const cookie = answer.headers.get("set-cookie")!;
    for (const part of ["HttpOnly", "SameSite=Lax", "Path=/auth", "Max-Age=600"]) expect(cookie).toContain(part);
    expect(cookie).not.toContain("Secure"); // public_url is http here
    const forgeStart = new URL((await fetch(`${gw.data}/auth/login/forge`, { redirect: "manual" })).headers.get("location")!);
    expect(forgeStart.origin + forgeStart.pathname).toBe(`${forge.base}/login/oauth/authorize`);
    expect(Object.fromEntries(forgeStart.searchParams)).toMatchObject({ client_id: "Iv1.gateway", scope: "read:org read:user", code_challenge_method: "S256" });
    expect((await fetch(`${gw.data}/auth/login/nobody`, { redirect: "manual" })).status).toBe(404);
  });
});

describe("signing in with the OIDC provider in a browser", () => {
  test("the key page shows the key once with identity, team and group; the key works; signing in again shows the same key; Refresh replaces it", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await signInWithCorp(page, "rosa");
    const first = await keyShown(page);
    expect(first).toMatchObject({ identity: "user:rosa", team: "ml", group: "user:rosa@ml" });
    expect(first.token.startsWith("gwk_")).toBe(true);
    expect((await chat(first.token)).status).toBe(200);
    // The state cookie is gone once used.
    expect((await context.cookies()).some((c) => c.name === "gw_sign_in")).toBe(false);

    await signInWithCorp(page, "rosa");
    expect((await keyShown(page)).token).toBe(first.token);

    await throughCorp(page, "rosa", () => page.click("#refresh"));
    const refreshed = await keyShown(page);
    expect(refreshed.identity).toBe("user:rosa");
    expect(refreshed.token).not.toBe(first.token);
    expect((await chat(first.token)).status).toBe(401);
    expect((await chat(refreshed.token)).status).toBe(200);
    await context.close();
  }, 30_000);

  test("cancel at the provider: a readable 400 page naming the provider's error, nothing issued", async () => {
    const before = await keyCount();
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${gw.data}/auth/token`);
    await Promise.all([page.waitForURL((url) => url.href.startsWith(`${op.issuer}/`)), page.click("text=Sign in with corp")]);
    const answer = page.waitForResponse((r) => r.url().startsWith(`${PUBLIC_URL}/auth/callback/corp`));
    await cancelAtOp(page, op.issuer);
    expect((await answer).status()).toBe(400);
    expect(await page.textContent("h1")).toBe("Sign-in failed");
    expect(await page.textContent("body")).toContain("access_denied");
    expect(await keyCount()).toBe(before);
    await context.close();
  });
});

describe("signing in with the code forge in a browser", () => {
  test("PKCE code flow, /user and /user/orgs: the org's team, the key page, the key works", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${gw.data}/auth/token`);
    await Promise.all([page.waitForURL((url) => url.href.startsWith(forge.base)), page.click("text=Sign in with forge")]);
    await Promise.all([page.waitForURL((url) => url.href.startsWith(`${PUBLIC_URL}/auth/callback/forge`)), page.click("text=Authorize octo")]);
    const shown = await keyShown(page);
    expect(shown).toMatchObject({ identity: "forge:octo", team: "acme", group: "forge:octo@acme" });
    expect((await chat(shown.token)).status).toBe(200);
    // The code went back with the verifier and the secret in the form, as the forge's docs ask.
    const redeemed = forge.tokenRequests.at(-1)!;
    expect(redeemed.params).toMatchObject({ client_id: "Iv1.gateway", client_secret: ENV.FORGE_SECRET, redirect_uri: `${PUBLIC_URL}/auth/callback/forge` });
    expect(redeemed.params.code_verifier!.length).toBeGreaterThanOrEqual(43);
    expect(redeemed.accept).toBe("application/json");
    expect(forge.apiRequests.map((r) => r.path)).toEqual(expect.arrayContaining(["/user", "/user/orgs"]));
    await context.close();
  });
});

describe("callbacks that must issue nothing", () => {
  /** A started sign-in, as the browser would hold it: the state cookie and the state sent to the provider. */
  async function started(provider: string): Promise<{ cookie: string; state: string }> {
    const answer = await fetch(`${gw.data}/auth/login/${provider}`, { redirect: "manual" });
    const cookie = answer.headers.get("set-cookie")!.split(";")[0]!;
    return { cookie, state: new URL(answer.headers.get("location")!).searchParams.get("state")! };
  }
  const callback = (provider: string, query: Record<string, string>, cookie?: string) =>
    fetch(`${gw.data}/auth/callback/${provider}?${new URLSearchParams(query)}`, { headers: cookie ? { cookie } : {}, redirect: "manual" });

  async function expectFailure(answer: Response, status: number, words: string): Promise<void> {
    expect(answer.status).toBe(status);
    expectPageHeaders(answer.headers);
    expect(answer.headers.get("set-cookie")).toContain("Max-Age=0");
    const html = await answer.text();
    expect(html).toContain("Sign-in failed");
    expect(html).toContain(words);
  }

  test("no cookie, a forged cookie, another provider's state, a state that is not the cookie's, a used state, an IdP error (escaped), no code, a refused code", async () => {
    const before = await keyCount();
    const corp = await started("corp");
    await expectFailure(await callback("corp", { state: corp.state, code: "x" }), 400, "no state cookie");
    const [name, value] = corp.cookie.split("=");
    const forged = `${name}=${value!.slice(0, -3)}AAA`;
    await expectFailure(await callback("corp", { state: corp.state, code: "x" }, forged), 400, "not one this gateway made");
    const forgeSignIn = await started("forge");
    await expectFailure(await callback("corp", { state: forgeSignIn.state, code: "x" }, forgeSignIn.cookie), 400, "another provider");
    await expectFailure(await callback("corp", { state: "not-the-state", code: "x" }, corp.cookie), 400, "not this sign-in");
    // Redeemed once (the provider refuses the made-up code), then replayed.
    await expectFailure(await callback("corp", { state: corp.state, code: "made-up" }, corp.cookie), 400, "refused");
    await expectFailure(await callback("corp", { state: corp.state, code: "made-up" }, corp.cookie), 400, "already completed");
    const errored = await started("corp");
    const answer = await callback("corp", { state: errored.state, error: "server_error", error_description: "<script>alert(1)</script>" }, errored.cookie);
    expect(answer.status).toBe(400);
    const html = await answer.text();
    expect(html).toContain("server_error");
    expect(html).not.toContain("<script>");
    expect(html).toContain("&#60;script&#62;");
    const noCode = await started("forge");
    await expectFailure(await callback("forge", { state: noCode.state }, noCode.cookie), 400, "no code");
    const badCode = await started("forge");
    await expectFailure(await callback("forge", { state: badCode.state, code: "bogus" }, badCode.cookie), 400, "bad_verification_code");
    expect(await keyCount()).toBe(before);
    // Neither client secret appears in what the gateway logged.
    expect(gw.logs.join("\n")).not.toContain(ENV.OP_SECRET);
    expect(gw.logs.join("\n")).not.toContain(ENV.FORGE_SECRET);
  });
});

describe("secrets", () => {
  test("neither client secret is in any admin view, audit entry or log line", async () => {
    for (const path of ["/config", "/config/settings", "/auth", "/admin-auth", "/audit?limit=500", "/keys?limit=500", "/info"]) {
      const answer = await fetch(`${gw.admin}${path}`, { headers: { "x-admin-token": ENV.GW_ADMIN } });
      expect({ path, status: answer.status }).toEqual({ path, status: 200 });
      const text = await answer.text();
      for (const secret of [ENV.OP_SECRET, ENV.FORGE_SECRET]) expect({ path, leaked: text.includes(secret) }).toEqual({ path, leaked: false });
    }
    for (const secret of [ENV.OP_SECRET, ENV.FORGE_SECRET]) expect(gw.logs.join("\n")).not.toContain(secret);
  });
});
