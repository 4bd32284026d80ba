// The operator console (design/console.md) on the built binary, in a real headless Chromium (Debian's,
// through playwright-core): served on the admin listener only, with its security headers and nothing from
// another host; sign-in with an admin token; every screen at its path with its heading, real data, no
// browser-console error and no serious or critical axe-core violation, at 1280x800 and 390x844, light and
// dark; a key minted in the console used by the OpenAI SDK, seen on the Requests screen and in its usage,
// revoked in the console and refused; a breaker opening on the Overview; a config applied, diffed and
// rolled back; the audit chain verified; a config with errors shown at its paths and not applied; a
// read-only principal with no mutating control; a lost connection shown and resumed. Screenshots of every
// screen and the measured figures go to dist/console-screens/ (docs/console.md quotes the figures).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import OpenAI from "openai";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { seriousViolations } from "../support/axe.ts";
import { launchBrowser } from "../support/chromium.ts";
import { freePort, json, LISTEN_ANY, ROOT, startGateway, tempDir, type RunningGateway } from "../support/gateway.ts";

const ENV = { GW_SIGNING_KEY: "e2e-console-signing-key-5d1f0a", GW_ADMIN: "e2e-console-admin-9b2c7e41", GW_VIEWER: "e2e-console-viewer-07aa3d2f", GONE_KEY: "sk-console-gone-3e8b" };
const SHOTS = join(ROOT, "dist/console-screens");
const figures: Record<string, unknown> = {};

/** A port nothing listens on: the `gone` provider's upstream, whose lane's breaker opens. */
const closedPort = (() => {
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = server.port;
  void server.stop(true);
  return port;
})();

const config = (dataPort: number, adminPort: number) => `listen: 127.0.0.1:${dataPort}
admin_listen: 127.0.0.1:${adminPort}
providers:
  local: {protocol: mock}
  gone: {protocol: openai, base_url: "http://127.0.0.1:${closedPort}/v1", api_key: {env: GONE_KEY}}
models:
  chat: {provider: local}
  dead: {provider: gone, model: gpt-x}
pools:
  main: {members: [{model: dead, weight: 1000000}, {model: chat, weight: 1}], breaker: {consecutive_n: 1, base_cooldown_secs: 120}}
hooks:
  redact: {kind: gate, builtin: regex-redact, prompt: rw, settings: {patterns: ["secret-[0-9]+"]}}
auth:
  signing_key: {env: GW_SIGNING_KEY}
  chain: [keys]
  admin_auth: [admin-tokens]
  admin_tokens: [{name: ops, token: {env: GW_ADMIN}}, {name: viewer, token: {env: GW_VIEWER}, scope: read-only}]
`;

const SCREENS = [
  ["/ui/", "Overview"],
  ["/ui/requests", "Requests"],
  ["/ui/keys", "Keys"],
  ["/ui/groups", "Groups"],
  ["/ui/usage", "Usage"],
  ["/ui/config", "Configuration"],
  ["/ui/audit", "Audit"],
  ["/ui/hooks", "Hooks"],
] as const;

let gw: RunningGateway;
let dir: string;
let ui: string;
let browser: Browser;
const ports = { data: 0, admin: 0 };

async function start(): Promise<RunningGateway> {
  return startGateway(config(ports.data, ports.admin), { env: ENV, dir });
}

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  dir = tempDir("gw-console-");
  ports.data = freePort();
  ports.admin = freePort();
  [gw, browser] = await Promise.all([start(), launchBrowser()]);
  ui = gw.admin.replace("/api/v1/admin", "/ui/");
}, 120_000);

afterAll(async () => {
  writeFileSync(join(SHOTS, "figures.json"), `${JSON.stringify(figures, null, 2)}\n`);
  await browser?.close();
  await gw?.stop();
});

/** A page that records every browser-console error and every request it makes. */
async function openPage(options: { width?: number; height?: number; dark?: boolean } = {}): Promise<{ context: BrowserContext; page: Page; errors: string[]; urls: string[] }> {
  const context = await browser.newContext({ viewport: { width: options.width ?? 1280, height: options.height ?? 800 }, colorScheme: options.dark ? "dark" : "light" });
  const page = await context.newPage();
  const errors: string[] = [];
  const urls: string[] = [];
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("request", (r) => urls.push(r.url()));
  return { context, page, errors, urls };
}

/**
 * Leaves each page, ending its event streams, and leaves the context to the browser's close: a context
 * closed while a stream's last network events are still on their way can make playwright-core throw
 * "was not bound in the connection" into whatever the next test awaits.
 */
async function closeAll(context: BrowserContext): Promise<void> {
  for (const page of context.pages()) await page.goto("about:blank").catch(() => {});
}

async function signIn(page: Page, token = ENV.GW_ADMIN): Promise<void> {
  await page.goto(ui);
  await page.getByLabel("Admin token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor({ timeout: 5000 });
}

/** Opens a screen from the navigation; answers the ms until its heading shows and nothing says "Loading". */
async function open(page: Page, title: string): Promise<number> {
  const started = Date.now();
  await page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: title, exact: true }).click();
  await page.getByRole("heading", { level: 1, name: title }).waitFor({ timeout: 5000 });
  // Locators, not waitForFunction: the console's CSP forbids the eval that polls a predicate in the page.
  await page.getByText(/^Loading /).first().waitFor({ state: "detached", timeout: 5000 });
  return Date.now() - started;
}

const sdk = (key: string) => new OpenAI({ apiKey: key, baseURL: `${gw.data}/v1` });

describe("operator console", () => {
  test("served on the admin listener only, with its security headers; the first load is small and all from the gateway", async () => {
    const page = await fetch(ui, { headers: { "accept-encoding": "gzip" } });
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(page.headers.get("content-security-policy")).toContain("default-src 'self'");
    expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(page.headers.get("x-content-type-options")).toBe("nosniff");
    const html = await page.text();
    const assets = [...html.matchAll(/(?:src|href)="(\/ui\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets.length).toBeGreaterThanOrEqual(2);
    let compressed = html.length;
    for (const asset of assets) {
      const response = await fetch(new URL(asset, ui), { headers: { "accept-encoding": "gzip" }, decompress: false } as RequestInit);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-security-policy")).toContain("default-src 'self'");
      expect(response.headers.get("cache-control")).toContain("immutable");
      compressed += (await response.arrayBuffer()).byteLength;
    }
    figures.first_load_compressed_bytes = compressed;
    expect(compressed).toBeLessThanOrEqual(250 * 1024);
    // The data listener does not serve it.
    const data = await fetch(`${gw.data}/ui/`);
    expect(data.status).not.toBe(200);
    expect(await data.text()).not.toContain("Gateway console");
    // Nothing a browser loads comes from another host.
    const { context, page: tab, urls, errors } = await openPage();
    await signIn(tab);
    for (const [, title] of SCREENS) await open(tab, title);
    const origin = new URL(ui).origin;
    expect(urls.filter((u) => !u.startsWith(origin))).toEqual([]);
    expect(errors).toEqual([]);
    await closeAll(context);
  }, 60_000);

  test("every screen at its path with its heading: no console error, no serious axe violation, wide and narrow, light and dark", async () => {
    const shown: Record<string, number> = {};
    for (const view of [{ name: "wide", width: 1280, height: 800 }, { name: "narrow", width: 390, height: 844 }]) {
      for (const dark of [false, true]) {
        const { context, page, errors } = await openPage({ ...view, dark });
        await signIn(page);
        for (const [path, title] of SCREENS) {
          const ms = await open(page, title);
          if (!dark && view.name === "wide") shown[title] = ms;
          expect(new URL(page.url()).pathname).toBe(path);
          expect(await page.locator("h1").count()).toBe(1);
          expect({ screen: title, dark, view: view.name, violations: await seriousViolations(page) }).toEqual({ screen: title, dark, view: view.name, violations: [] });
          await page.screenshot({ path: join(SHOTS, `${title.toLowerCase()}-${view.name}-${dark ? "dark" : "light"}.png`), fullPage: true });
        }
        // The Hooks screen shows the configured hook with its health and its settings' status.
        await open(page, "Hooks");
        const hook = await page.getByRole("row", { name: /redact/ }).innerText();
        expect(hook).toContain("gate");
        expect(hook).toMatch(/version \d+/);
        // Reached by address too: a screen's path loads the console at that screen.
        await page.goto(ui.replace(/\/$/, "/audit"));
        await page.getByRole("heading", { level: 1, name: "Audit" }).waitFor({ timeout: 5000 });
        expect(errors).toEqual([]);
        await closeAll(context);
      }
    }
    figures.screen_data_ms = shown;
    for (const ms of Object.values(shown)) expect(ms).toBeLessThan(1000);
  }, 180_000);

  test("the navigation and a screen's controls are reachable with the keyboard alone", async () => {
    const { context, page } = await openPage();
    await page.goto(ui);
    await page.getByLabel("Admin token").waitFor({ timeout: 5000 });
    await page.keyboard.press("Tab");
    await page.keyboard.type(ENV.GW_ADMIN);
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor({ timeout: 5000 });
    const reached = new Set<string>();
    for (let i = 0; i < 40; i++) {
      await page.keyboard.press("Tab");
      reached.add(await page.evaluate<string>('document.activeElement?.innerText?.trim() ?? ""'));
    }
    for (const [, title] of SCREENS) expect(reached).toContain(title);
    expect(reached).toContain("Sign out");
    await page.getByRole("link", { name: "Keys", exact: true }).focus();
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { level: 1, name: "Keys" }).waitFor({ timeout: 5000 });
    await closeAll(context);
  }, 60_000);

  test("a key minted in the console works with the OpenAI SDK, shows on Requests within 2 s and in its usage; revoked in the console, the next call is refused", async () => {
    const { context, page, errors } = await openPage();
    await signIn(page);
    await open(page, "Requests");
    // Requests first: it is open (and listening) when the request is made.
    const tab = await context.newPage();
    tab.on("console", (m) => m.type() === "error" && errors.push(m.text()));
    // sessionStorage is per tab: the second tab signs in too.
    await signIn(tab);
    await open(tab, "Keys");
    await tab.getByLabel("Name").fill("console-made");
    await tab.getByRole("button", { name: "Create key" }).click();
    const secret = tab.getByLabel("Secret");
    await secret.waitFor({ timeout: 5000 });
    const token = await secret.inputValue();
    expect(token.length).toBeGreaterThan(20);
    const completion = await sdk(token).chat.completions.create({ model: "chat", messages: [{ role: "user", content: "hello" }] });
    expect(completion.choices[0]!.message.content).toBeTruthy();
    const sent = Date.now();
    const keyId = (await tab.locator(".secret code").innerText()).trim();
    await page.getByRole("cell", { name: keyId }).first().waitFor({ timeout: 2000 });
    figures.request_to_screen_ms = Date.now() - sent;
    // The key's usage.
    await tab.getByRole("button", { name: "Done" }).click();
    await tab.getByRole("button", { name: "console-made" }).click();
    await tab.getByRole("heading", { name: "Usage of console-made" }).waitFor();
    await expect(tab.locator(".facts dd").first().innerText()).resolves.toBe("1");
    // Its usage over time: the chart of the last 24 hours, from GET /usage/series?key_id=.
    await tab.getByRole("img", { name: "Tokens by model over 24h" }).waitFor({ timeout: 5000 });
    // Revoke, confirmed in the dialog.
    await tab.getByRole("row", { name: /console-made/ }).getByRole("button", { name: "Revoke" }).click();
    await tab.getByRole("dialog").getByRole("button", { name: "Revoke" }).click();
    await tab.getByRole("row", { name: /console-made/ }).getByText("revoked").waitFor({ timeout: 5000 });
    // Its last use (this month) and its creation, both shown: two times on its row (the list re-reads
    // after the revoke and every 10 s).
    const row = tab.getByRole("row", { name: /console-made/ });
    const seen: string[] = [];
    const until = Date.now() + 12_000;
    while (Date.now() < until) {
      seen.push((await row.innerText()).replace(/\s+/g, " "));
      if ((seen.at(-1)!.match(/\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}/g)?.length ?? 0) === 2) break;
      await Bun.sleep(250);
    }
    expect(seen.at(-1)).toContain("revoked");
    expect(seen.at(-1)!.match(/\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}/g)?.length).toBe(2);
    const refused = await sdk(token).chat.completions.create({ model: "chat", messages: [{ role: "user", content: "again" }] }).then(() => undefined, (e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(errors).toEqual([]);
    await closeAll(context);
  }, 60_000);

  test("a lane's breaker opens on the Overview when its upstream fails", async () => {
    const { context, page } = await openPage();
    await signIn(page);
    const lane = page.locator('li[data-lane="dead"]');
    await expect(lane.getAttribute("data-state")).resolves.toBe("closed");
    const key = await json(await fetch(`${gw.admin}/keys`, { method: "POST", headers: { authorization: `Bearer ${ENV.GW_ADMIN}`, "content-type": "application/json" }, body: JSON.stringify({ name: "breaker-probe" }) }));
    // The dead lane takes the request (its weight), fails to connect, trips its breaker; the pool fails over.
    const answer = await sdk(key.token).chat.completions.create({ model: "main", messages: [{ role: "user", content: "hi" }] });
    expect(answer.choices[0]!.message.content).toBeTruthy();
    const tripped = Date.now();
    await page.waitForSelector('li[data-lane="dead"][data-state="open"]', { timeout: 2000 });
    figures.breaker_to_screen_ms = Date.now() - tripped;
    await closeAll(context);
  }, 60_000);

  test("a config with errors shows every error at its path and applies nothing; a valid one applies, diffs and rolls back; the audit screen shows each change and the chain verified", async () => {
    const { context, page, errors } = await openPage();
    await signIn(page);
    await open(page, "Configuration");
    const before = await json(await fetch(`${gw.admin}/info`, { headers: { authorization: `Bearer ${ENV.GW_ADMIN}` } }));
    const editor = page.getByLabel("Config (YAML, the whole file)");
    await editor.fill("providers:\n  local: {protocol: nope}\nmodels:\n  chat: {provider: missing}\n");
    await page.getByRole("button", { name: "Apply" }).click();
    const alert = page.getByRole("alert").filter({ hasText: "Not applied" });
    await alert.waitFor({ timeout: 5000 });
    const listed = await alert.locator("li").allInnerTexts();
    expect(listed.length).toBeGreaterThanOrEqual(2);
    expect(listed.some((e) => e.includes("providers.local"))).toBe(true);
    expect(listed.some((e) => e.includes("models.chat"))).toBe(true);
    await editor.fill("not: [yaml");
    await page.getByRole("button", { name: "Validate" }).click();
    await page.getByRole("alert").filter({ hasText: "Not applied" }).waitFor({ timeout: 5000 });
    const after = await json(await fetch(`${gw.admin}/info`, { headers: { authorization: `Bearer ${ENV.GW_ADMIN}` } }));
    expect(after.config_version).toBe(before.config_version);
    // A valid change: one more model.
    const source = config(ports.data, ports.admin).replace("  chat: {provider: local}\n", "  chat: {provider: local}\n  chat-2: {provider: local}\n");
    await editor.fill(source);
    await page.getByRole("button", { name: "Apply" }).click();
    await page.getByRole("status").filter({ hasText: "Applied as version" }).waitFor({ timeout: 5000 });
    const applied = (await json(await fetch(`${gw.admin}/info`, { headers: { authorization: `Bearer ${ENV.GW_ADMIN}` } }))).config_version;
    expect(applied).toBe(before.config_version + 1);
    await page.getByLabel("From version").selectOption(String(before.config_version));
    await page.getByLabel("To version").selectOption(String(applied));
    await page.locator(".diff .add").filter({ hasText: "chat-2" }).waitFor({ timeout: 5000 });
    await page.getByRole("button", { name: `Roll back to ${before.config_version}` }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Roll back" }).click();
    await page.getByRole("heading", { name: `Running config, version ${applied + 1}` }).waitFor({ timeout: 5000 });
    const models = (await json(await fetch(`${gw.admin}/config`, { headers: { authorization: `Bearer ${ENV.GW_ADMIN}` } }))).models.map((m: { name: string }) => m.name);
    expect(models).not.toContain("chat-2");
    await open(page, "Audit");
    await page.getByRole("status").filter({ hasText: "Chain verified" }).waitFor({ timeout: 5000 });
    const actions = await page.locator("tbody tr td:nth-child(4)").allInnerTexts();
    for (const action of ["key.create", "key.revoke", "config.apply", "config.rollback"]) expect(actions).toContain(action);
    expect(errors).toEqual([]);
    await closeAll(context);
  }, 60_000);

  test("a read-only principal sees no control that would change anything; a credential the gateway refuses returns to sign-in", async () => {
    const { context, page, errors } = await openPage();
    await signIn(page, ENV.GW_VIEWER);
    // The scope arrives with GET /session, just after the first screen: wait for it, then look.
    await page.locator(".who", { hasText: "read-only" }).waitFor({ timeout: 5000 });
    for (const [, title] of SCREENS) {
      await open(page, title);
      for (const name of ["Create key", "Create group", "Revoke", "Delete", "Disable", "Edit limits", "Freeze", "Apply", "Roll back"]) {
        expect({ title, name, count: await page.getByRole("button", { name, exact: false }).count() }).toEqual({ title, name, count: 0 });
      }
    }
    expect(errors).toEqual([]);
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByLabel("Admin token").fill("not-a-token-of-this-gateway");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("alert").filter({ hasText: "401" }).waitFor({ timeout: 5000 });
    await expect(page.getByLabel("Admin token").isVisible()).resolves.toBe(true);
    expect(await page.evaluate<number>("sessionStorage.length")).toBe(0);
    await closeAll(context);
  }, 60_000);

  test("the Requests screen stays responsive at 200 requests/s and keeps at most 1,000 rows", async () => {
    const { context, page } = await openPage();
    await signIn(page);
    await open(page, "Requests");
    const key = await json(await fetch(`${gw.admin}/keys`, { method: "POST", headers: { authorization: `Bearer ${ENV.GW_ADMIN}`, "content-type": "application/json" }, body: JSON.stringify({ name: "load" }) }));
    const body = JSON.stringify({ model: "chat", messages: [{ role: "user", content: "hi" }] });
    let sent = 0;
    const end = Date.now() + 7000;
    const load = (async () => {
      while (Date.now() < end) {
        const tick = Date.now();
        await Promise.all(Array.from({ length: 20 }, () => fetch(`${gw.data}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${key.token}`, "content-type": "application/json" }, body }).then((r) => r.arrayBuffer())));
        sent += 20;
        await Bun.sleep(Math.max(0, 100 - (Date.now() - tick)));
      }
    })();
    // How long the page takes to answer a script while rows arrive.
    const answers: number[] = [];
    while (Date.now() < end) {
      const started = Date.now();
      await page.evaluate('document.querySelectorAll("tbody tr").length');
      answers.push(Date.now() - started);
      await Bun.sleep(100);
    }
    await load;
    answers.sort((a, b) => a - b);
    const p90 = answers[Math.floor(answers.length * 0.9)]!;
    figures.requests_screen = { sent, rate_per_s: Math.round(sent / 7), script_answer_p50_ms: answers[Math.floor(answers.length / 2)], script_answer_p90_ms: p90 };
    expect(sent / 7).toBeGreaterThanOrEqual(150);
    expect(p90).toBeLessThanOrEqual(500);
    const kept = async () => page.locator("tbody tr").count();
    const until = Date.now() + 5000;
    while ((await kept()) < 1000 && Date.now() < until) await Bun.sleep(100);
    expect(await kept()).toBe(1000);
    // The screens with traffic in them (README.md shows the Overview's).
    await page.screenshot({ path: join(SHOTS, "requests-traffic.png") });
    for (const title of ["Overview", "Usage", "Keys"]) {
      await open(page, title);
      if (title === "Overview") {
        // ~200 a second is ~12,000 a minute, though the 1,000 records kept cover only the last seconds.
        const perMinute = Number(await page.locator(".tile", { hasText: "Requests per minute" }).locator("dd").innerText());
        figures.overview_requests_per_minute = perMinute;
        expect(perMinute).toBeGreaterThan(6000);
        expect(perMinute).toBeLessThan(20_000);
      }
      await page.screenshot({ path: join(SHOTS, `${title.toLowerCase()}-traffic.png`), fullPage: true });
      if (title === "Usage") {
        // Download CSV: the table's figures, one line per point.
        const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download CSV" }).click()]);
        expect(download.suggestedFilename()).toBe("usage-by-model-24h.csv");
        const lines = (await Bun.file((await download.path())!).text()).trimEnd().split("\n");
        expect(lines[0]).toBe("series,time_utc,requests,tokens,spend_cents");
        const chat = lines.filter((l) => l.startsWith("chat,"));
        expect(chat.length).toBeGreaterThan(0);
        expect(chat.reduce((n, l) => n + Number(l.split(",")[2]), 0)).toBeGreaterThanOrEqual(sent);
      }
    }
    await closeAll(context);
  }, 60_000);

  test("on an open admin plane (no admin_auth) the console opens without sign-in and says the plane is open", async () => {
    const open = await startGateway(`${LISTEN_ANY}providers: {local: {protocol: mock}}\nmodels: {chat: {provider: local}}\n`);
    try {
      const { context, page, errors } = await openPage();
      await page.goto(open.admin.replace("/api/v1/admin", "/ui/"));
      await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor({ timeout: 5000 });
      await page.getByRole("status").filter({ hasText: "This admin plane is open" }).waitFor({ timeout: 5000 });
      await page.locator(".who", { hasText: "anonymous (full)" }).waitFor({ timeout: 5000 });
      expect(await page.getByRole("button", { name: "Sign out" }).count()).toBe(0);
      expect(await seriousViolations(page)).toEqual([]);
      expect(errors).toEqual([]);
      await closeAll(context);
    } finally {
      await open.stop();
    }
  }, 60_000);

  test("a lost connection is shown as such, and the live screens resume when the gateway returns", async () => {
    const { context, page } = await openPage();
    await signIn(page);
    await open(page, "Requests");
    await gw.stop();
    await page.getByRole("status").filter({ hasText: "Connection to the gateway lost" }).waitFor({ timeout: 15_000 });
    gw = await start();
    await page.getByRole("status").filter({ hasText: "Connection to the gateway lost" }).waitFor({ state: "detached", timeout: 15_000 });
    // Live again: a request made now arrives on the screen.
    const key = await json(await fetch(`${gw.admin}/keys`, { method: "POST", headers: { authorization: `Bearer ${ENV.GW_ADMIN}`, "content-type": "application/json" }, body: JSON.stringify({ name: "after-restart" }) }));
    await sdk(key.token).chat.completions.create({ model: "chat", messages: [{ role: "user", content: "back" }] });
    await page.getByRole("cell", { name: key.id }).first().waitFor({ timeout: 5000 });
    await closeAll(context);
  }, 60_000);
});
