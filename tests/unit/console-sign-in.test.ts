// Which identity providers the console offers a sign-in with, and the console's state cookie kept apart
// from the data plane's (src/admin/console-sign-in.ts, src/identity/sign-in-state.ts).
import { describe, expect, test } from "bun:test";
import { consoleSignInProviders } from "../../src/admin/console-sign-in.ts";
import { loadBoot } from "../../src/config/lifecycle.ts";
import { parseConfigText } from "../../src/config/load.ts";
import { newSignIn, SignInStates, stateCookie, STATE_COOKIE } from "../../src/identity/sign-in-state.ts";

const ENV = { GW_SIGNING_KEY: "unit-console-sign-in-key-0123456789", S: "client-secret-unit" };

function snapshot(adminAuth: string) {
  const text = `providers: {local: {protocol: mock}}
models: {chat: {provider: local}}
public_url: http://127.0.0.1:8080
auth:
  signing_key: {env: GW_SIGNING_KEY}
  admin_auth: ${adminAuth}
identity-providers:
  corp: {module: oidc, settings: {issuer: "https://corp.example", audience: gw}, browser_login: {client_secret: {env: S}}, max_admin_scope: full}
  plain: {module: oidc, settings: {issuer: "https://plain.example", audience: gw}}
  other: {module: oidc, settings: {issuer: "https://other.example", audience: gw}, browser_login: {client_secret: {env: S}}}
`;
  const boot = loadBoot(parseConfigText(text, "unit", ENV), "unit", {}, ENV);
  if (!boot.result.ok) throw new Error(boot.result.errors.join("; "));
  return boot.result.snapshot;
}

describe("consoleSignInProviders", () => {
  test("only oidc instances with browser_login that admin_auth names (by name, or every one through `oidc`), in config order", () => {
    expect(consoleSignInProviders(snapshot("[corp, plain]")).map((p) => p.name)).toEqual(["corp"]);
    expect(consoleSignInProviders(snapshot("[oidc]")).map((p) => p.name)).toEqual(["corp", "other"]);
    expect(consoleSignInProviders(snapshot("[plain]")).map((p) => p.name)).toEqual([]);
  });
});

describe("the console's state cookie", () => {
  const consoleCookie = { name: "gw_console_sign_in", path: "/ui/callback" };
  const key = ENV.GW_SIGNING_KEY;
  const now = 1_800_000_000;

  test("carries its own name and path, and is redeemed only under that name", () => {
    const { state } = newSignIn("corp", false, now);
    const cookie = stateCookie(state, key, false, consoleCookie);
    expect(cookie).toMatch(/^gw_console_sign_in=[^;]+; HttpOnly; SameSite=Lax; Path=\/ui\/callback; Max-Age=600$/);
    const header = cookie.split(";")[0]!;
    // The data plane's callback does not read it, and the console's does not read the data plane's.
    expect(new SignInStates().redeem(header, "corp", state.s, key, now).ok).toBe(false);
    const dataPlane = stateCookie(state, key, false).split(";")[0]!;
    expect(dataPlane.startsWith(`${STATE_COOKIE.name}=`)).toBe(true);
    expect(new SignInStates().redeem(dataPlane, "corp", state.s, key, now, consoleCookie).ok).toBe(false);
    const states = new SignInStates();
    expect(states.redeem(header, "corp", state.s, key, now, consoleCookie).ok).toBe(true);
    expect(states.redeem(header, "corp", state.s, key, now, consoleCookie)).toEqual({ ok: false, reason: "this sign-in was already completed; start again" });
  });
});
