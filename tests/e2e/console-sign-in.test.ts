// The console's sign-in with an identity provider (design/console.md "Sign-in", docs/console.md) on the
// built binary, in a real headless Chromium, against a real OpenID Provider (oidc-provider): the button,
// the redirect with PKCE S256, state and nonce and a redirect_uri on the admin listener, the state cookie
// scoped to the callback; signing in at the provider returns to the console signed in as the identity with
// its admin_scope binding's scope, the bearer in sessionStorage and in no URL; a read-only binding sees no
// mutating control; no binding sees the 403 naming it; the client secret in nothing the browser received;
// a forged, missing or replayed state a readable 400 page.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { seriousViolations } from "../support/axe.ts";
import { launchBrowser } from "../support/chromium.ts";
import { freePort, json, startGateway, type RunningGateway } from "../support/gateway.ts";
import { signInAtOp, startOp, type StartedOp } from "../support/oidc-op.ts";

const ENV = { GW_SIGNING_KEY: "e2e-console-oidc-signing-4a1c", GW_ADMIN: "e2e-console-oidc-admin-77e0", OP_SECRET: "op-console-secret-c93b51" };
const dataPort = freePort();
const adminPort = freePort();
const ADMIN_ORIGIN = `http://127.0.0.1:${adminPort}`;
const CALLBACK = `${ADMIN_ORIGIN}/ui/callback/corp`;

let op: StartedOp;
let gw: RunningGateway;
let browser: Browser;

beforeAll(async () => {
  [op, browser] = await Promise.all([
    startOp({
      clients: [{ client_id: "gw", client_secret: ENV.OP_SECRET, redirect_uris: [CALLBACK] }],
      accounts: [
        { sub: "ada", claims: { groups: ["gw-admins"] } },
        { sub: "rita", claims: { groups: ["gw-readers"] } },
        { sub: "nobody", claims: { groups: ["elsewhere"] } },
      ],
    }),
    launchBrowser(),
  ]);
  gw = await startGateway(
    `listen: 127.0.0.1:${dataPort}
admin_listen: 127.0.0.1:${adminPort}
public_url: http://127.0.0.1:${dataPort}
providers: {local: {protocol: mock}}
models: {chat: {provider: local}}
auth:
  signing_key: {env: GW_SIGNING_KEY}
  chain: [keys]
  admin_auth: [admin-tokens, corp]
  admin_tokens: [{token: {env: GW_ADMIN}}]
role_bindings:
  corp:
    gw-admins: {admin_scope: full}
    gw-readers: {admin_scope: read-only}
identity-providers:
  corp:
    module: oidc
    settings: {issuer: "${op.issuer}", audience: gw}
    browser_login: {client_secret: {env: OP_SECRET}}
    max_admin_scope: full
`,
    { env: ENV },
  );
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await gw?.stop();
  await op?.stop();
});

interface Opened {
  readonly context: BrowserContext;
  readonly page: Page;
  readonly errors: string[];
  /** Every URL, header and body the browser received from the gateway. */
  readonly received: string[];
}

/** A fresh context (the OP keeps a session per context) recording console errors and what the gateway sent. */
async function openPage(): Promise<Opened> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const errors: string[] = [];
  const received: string[] = [];
  // The provider's own pages (outside this gateway) load resources from elsewhere; only the console's count.
  page.on("console", (m) => m.type() === "error" && (m.location().url.startsWith(ADMIN_ORIGIN) || page.url().startsWith(ADMIN_ORIGIN)) && errors.push(`${m.location().url}: ${m.text()}`));
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("response", (r) => {
    if (!r.url().startsWith(ADMIN_ORIGIN)) return;
    received.push(r.url(), JSON.stringify(r.headers()));
    if (r.status() < 300 || r.status() >= 400) void r.text().then((t) => received.push(t), () => undefined);
  });
  return { context, page, errors, received };
}

/**
 * Leaves the console (its event streams) and leaves the context to the browser's close: a context closed
 * while a stream's last network events are on their way can make playwright-core throw into the next test.
 */
async function close(context: BrowserContext): Promise<void> {
  for (const page of context.pages()) await page.goto("about:blank").catch(() => undefined);
}

/** From the console's sign-in form through the provider and back to the console. */
async function signInWithCorp(page: Page, login: string): Promise<void> {
  await page.goto(`${ADMIN_ORIGIN}/ui/`);
  await page.getByRole("link", { name: "Sign in with corp" }).click();
  await page.waitForURL((url) => url.href.startsWith(`${op.issuer}/`), { timeout: 10_000 });
  await page.waitForLoadState();
  await signInAtOp(page, op.issuer, login);
  await page.waitForURL((url) => url.href.startsWith(`${ADMIN_ORIGIN}/ui/`), { timeout: 10_000 });
}

describe("the console's sign-in with an identity provider", () => {
  test("GET / names the providers; /ui/login/corp: 302 to the provider with code, PKCE S256, state, nonce and a redirect_uri on the admin listener; the state cookie HttpOnly, SameSite=Lax, scoped to /ui/callback; unknown provider 404", async () => {
    const root = await json(await fetch(`${ADMIN_ORIGIN}/`, { headers: { accept: "application/json" } }));
    expect(root.sign_in_providers).toEqual(["corp"]);
    const answer = await fetch(`${ADMIN_ORIGIN}/ui/login/corp`, { redirect: "manual" });
    expect(answer.status).toBe(302);
    const location = new URL(answer.headers.get("location")!);
    expect(location.href.startsWith(`${op.issuer}/`)).toBe(true);
    const params = Object.fromEntries(location.searchParams);
    expect(params).toMatchObject({ response_type: "code", client_id: "gw", redirect_uri: CALLBACK, code_challenge_method: "S256", scope: "openid profile email" });
    for (const name of ["state", "nonce", "code_challenge"]) expect(params[name]?.length ?? 0).toBeGreaterThan(20);
    const cookie = answer.headers.get("set-cookie") ?? "";
    expect(cookie).toMatch(/^gw_console_sign_in=[^;]+; HttpOnly; SameSite=Lax; Path=\/ui\/callback; Max-Age=600$/);
    expect(answer.headers.get("cache-control")).toBe("no-store");
    const unknown = await fetch(`${ADMIN_ORIGIN}/ui/login/nope`, { redirect: "manual" });
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toContain("no identity provider named &#34;nope&#34;");
  });

  test("signing in at the provider returns to the console signed in as the identity with full scope; the bearer in sessionStorage and in no URL; the client secret in nothing received; no console error, no axe violation", async () => {
    const { context, page, errors, received } = await openPage();
    const urls: string[] = [];
    page.on("request", (r) => urls.push(r.url()));
    await signInWithCorp(page, "ada");
    await page.locator(".who", { hasText: "ada" }).waitFor({ timeout: 5000 });
    await page.locator(".who", { hasText: "(full)" }).waitFor({ timeout: 5000 });
    await page.getByRole("heading", { name: "Overview", level: 1 }).waitFor();
    const bearer = await page.evaluate<string | null>(`sessionStorage.getItem("gateway-console-token")`);
    expect(bearer?.startsWith("eyJ")).toBe(true);
    expect(page.url()).toBe(`${ADMIN_ORIGIN}/ui/`);
    for (const url of urls) expect(url).not.toContain(bearer!);
    // The bearer works for the admin API as the identity, with full scope.
    expect(await json(await fetch(`${gw.admin}/session`, { headers: { authorization: `Bearer ${bearer}` } }))).toEqual({ principal: "user:ada", scope: "full" });
    await page.getByRole("link", { name: "Keys" }).click();
    await page.getByRole("button", { name: "Create key" }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await page.waitForTimeout(200);
    expect(received.join("\n")).not.toContain(ENV.OP_SECRET);
    expect(errors).toEqual([]);
    await close(context);
  }, 60_000);

  test("the sign-in form offers the button and is axe-clean with no console error", async () => {
    const { context, page, errors } = await openPage();
    await page.goto(`${ADMIN_ORIGIN}/ui/`);
    await page.getByRole("link", { name: "Sign in with corp" }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    expect(errors).toEqual([]);
    await close(context);
  }, 30_000);

  test("a read-only binding signs in read-only and sees no control that would change anything", async () => {
    const { context, page, errors } = await openPage();
    await signInWithCorp(page, "rita");
    await page.locator(".who", { hasText: "rita (read-only)" }).waitFor({ timeout: 5000 });
    for (const title of ["Keys", "Groups", "Configuration"]) {
      await page.getByRole("link", { name: title, exact: true }).click();
      await page.getByRole("heading", { name: title, level: 1 }).waitFor();
      for (const name of ["Create key", "Create group", "Revoke", "Delete", "Disable", "Edit limits", "Freeze", "Apply", "Roll back"]) {
        expect({ title, name, count: await page.getByRole("button", { name, exact: false }).count() }).toEqual({ title, name, count: 0 });
      }
    }
    expect(errors).toEqual([]);
    await close(context);
  }, 60_000);

  test("a verified identity with no admin binding signs in and sees the 403 naming what was refused", async () => {
    const { context, page } = await openPage();
    await signInWithCorp(page, "nobody");
    const alert = page.getByRole("alert").filter({ hasText: "403" }).first();
    await alert.waitFor({ timeout: 5000 });
    expect(await alert.innerText()).toContain("user:nobody has no admin_scope binding in role_bindings.corp");
    await close(context);
  }, 60_000);

  test("a missing, forged or replayed state is refused with a readable 400 page, and nothing is handed over", async () => {
    const started = await fetch(`${ADMIN_ORIGIN}/ui/login/corp`, { redirect: "manual" });
    const state = new URL(started.headers.get("location")!).searchParams.get("state")!;
    const cookie = (started.headers.get("set-cookie") ?? "").split(";")[0]!;
    const callback = (cookieHeader: string | undefined, code = "made-up") =>
      fetch(`${CALLBACK}?${new URLSearchParams({ state, code })}`, { redirect: "manual", headers: cookieHeader ? { cookie: cookieHeader } : {} });
    const expectPage = async (answer: Response, words: string) => {
      expect(answer.status).toBe(400);
      expect(answer.headers.get("content-type")).toContain("text/html");
      expect(answer.headers.get("location")).toBeNull();
      const html = await answer.text();
      expect(html).toContain("Sign-in failed");
      expect(html).toContain(words);
      expect(html).toContain('href="/ui/"');
    };
    await expectPage(await callback(undefined), "no state cookie");
    await expectPage(await callback(`${cookie.slice(0, -3)}AAA`), "not one this gateway made");
    // The data plane's state cookie is not the console's.
    await expectPage(await callback(cookie.replace("gw_console_sign_in=", "gw_sign_in=")), "no state cookie");
    await expectPage(await callback(cookie), "refused");
    await expectPage(await callback(cookie), "already completed");
  });
});
