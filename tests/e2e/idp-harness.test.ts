// The identity tests' harnesses themselves (tests/support/oidc-op.ts, forge.ts, chromium.ts): a real
// authorization-code + PKCE sign-in at the OIDC provider in headless Chromium, redeemed by a tiny relying
// party with client_secret_basic; the provider's cancel, TLS, signing, key rotation and JWKS counter; the
// forge's OAuth web flow and REST calls over fetch.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from "jose";
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { launchBrowser } from "../support/chromium.ts";
import { startForge, type StartedForge } from "../support/forge.ts";
import { cancelAtOp, signInAtOp, startOp, type StartedOp } from "../support/oidc-op.ts";
import { makeTlsDir } from "../support/tls.ts";

const CLIENT = { client_id: "gateway", client_secret: "op-client-secret" };
const pkce = () => {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
};

describe("OIDC provider in a browser", () => {
  let op: StartedOp;
  let browser: Browser;
  // The relying party's callback: redeems the code and keeps what came back, for the test to read.
  const flows = new Map<string, { verifier: string; nonce: string }>();
  const results = new Map<string, Record<string, unknown>>();
  const rp = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const q = new URL(req.url).searchParams;
      const state = q.get("state") ?? "";
      const flow = flows.get(state);
      if (!flow) return new Response("unknown state", { status: 400 });
      if (q.get("error")) {
        results.set(state, { error: q.get("error") });
        return new Response("cancelled");
      }
      const res = await fetch(`${op.issuer}/token`, {
        method: "POST",
        headers: { authorization: `Basic ${btoa(`${CLIENT.client_id}:${CLIENT.client_secret}`)}` },
        body: new URLSearchParams({ grant_type: "authorization_code", code: q.get("code") ?? "", redirect_uri: redirectUri, code_verifier: flow.verifier }),
      });
      const body = (await res.json()) as { id_token: string };
      const { payload } = await jwtVerify(body.id_token, createRemoteJWKSet(new URL(op.jwksUrl)), { issuer: op.issuer, audience: CLIENT.client_id });
      results.set(state, { ...payload, kid: decodeProtectedHeader(body.id_token).kid });
      return new Response("signed in");
    },
  });
  const redirectUri = `http://127.0.0.1:${rp.port}/cb`;

  const authorizeUrl = (state: string) => {
    const { verifier, challenge } = pkce();
    const nonce = randomBytes(8).toString("hex");
    flows.set(state, { verifier, nonce });
    const params = { response_type: "code", client_id: CLIENT.client_id, redirect_uri: redirectUri, scope: "openid profile email", state, nonce, code_challenge: challenge, code_challenge_method: "S256" };
    return `${op.issuer}/auth?${new URLSearchParams(params)}`;
  };

  beforeAll(async () => {
    [op, browser] = await Promise.all([
      startOp({ clients: [{ ...CLIENT, redirect_uris: [redirectUri] }], accounts: [{ sub: "alice", claims: { groups: ["ml", "ops"], email: "alice@example.test" } }] }),
      launchBrowser(),
    ]);
  });
  afterAll(async () => {
    await browser?.close();
    await op?.stop();
    rp.stop(true);
  });

  test("code + PKCE sign-in gives an ID token with sub, aud, nonce, groups and email", async () => {
    const page = await browser.newPage();
    await page.goto(authorizeUrl("s1"));
    await signInAtOp(page, op.issuer, "alice");
    expect(await page.textContent("body")).toBe("signed in");
    expect(results.get("s1")).toMatchObject({ sub: "alice", aud: CLIENT.client_id, nonce: flows.get("s1")?.nonce, groups: ["ml", "ops"], email: "alice@example.test", kid: op.kid() });
    await page.close();
  });

  test("Cancel at the provider comes back with error=access_denied", async () => {
    const page = await browser.newPage();
    await page.goto(authorizeUrl("s2"));
    await cancelAtOp(page, op.issuer);
    expect(results.get("s2")).toEqual({ error: "access_denied" });
    await page.close();
  });

  test("sign() uses the published key; JWKS fetches are counted; rotate changes the kid", async () => {
    const token = await op.sign({ sub: "bob", aud: CLIENT.client_id });
    const before = await op.jwksFetches();
    await jwtVerify(token, createRemoteJWKSet(new URL(op.jwksUrl)), { issuer: op.issuer, audience: CLIENT.client_id });
    expect(await op.jwksFetches()).toBe(before + 1);
    const oldKid = op.kid();
    await op.rotate({ keepOld: true });
    expect(op.kid()).not.toBe(oldKid);
    const { keys } = (await (await fetch(op.jwksUrl)).json()) as { keys: { kid: string }[] };
    expect(keys.map((key) => key.kid)).toEqual([op.kid(), oldKid]);
    expect(await op.jwksFetches()).toBe(before + 2);
    expect(decodeProtectedHeader(await op.sign({ sub: "bob" })).kid).toBe(op.kid());
    // The bad-token forms sign() makes are refused by a verifier holding the published keys.
    for (const alg of ["none", "HS256"]) {
      const forged = await op.sign({ sub: "bob", aud: CLIENT.client_id }, { alg });
      await expect(jwtVerify(forged, createRemoteJWKSet(new URL(op.jwksUrl)))).rejects.toThrow();
    }
  });
});

test("OIDC provider over TLS: discovery for a client trusting ca.pem, sign-in in a browser pinning cert.pem", async () => {
  const dir = makeTlsDir();
  const rp = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => new Response(new URL(req.url).searchParams.has("code") ? "got a code" : "no code") });
  const redirectUri = `http://127.0.0.1:${rp.port}/cb`;
  const op = await startOp({ clients: [{ ...CLIENT, redirect_uris: [redirectUri] }], accounts: [{ sub: "alice" }], tls: { certFile: join(dir, "cert.pem"), keyFile: join(dir, "key.pem") } });
  const browser = await launchBrowser({ trustCertFiles: [join(dir, "cert.pem")] });
  try {
    expect(op.issuer).toStartWith("https://127.0.0.1:");
    const res = await fetch(`${op.issuer}/.well-known/openid-configuration`, { tls: { ca: readFileSync(join(dir, "ca.pem"), "utf8") } });
    expect(((await res.json()) as { jwks_uri: string }).jwks_uri).toBe(op.jwksUrl);
    const page = await browser.newPage();
    const q = { response_type: "code", client_id: CLIENT.client_id, redirect_uri: redirectUri, scope: "openid", state: "t", nonce: "n", code_challenge: pkce().challenge, code_challenge_method: "S256" };
    await page.goto(`${op.issuer}/auth?${new URLSearchParams(q)}`);
    await signInAtOp(page, op.issuer, "alice");
    expect(await page.textContent("body")).toBe("got a code");
  } finally {
    await browser.close();
    await op.stop();
    rp.stop(true);
  }
});

describe("forge", () => {
  let forge: StartedForge;
  const callback = "http://127.0.0.1:9/auth/callback/forge";
  beforeAll(async () => {
    forge = await startForge({ clientId: "Iv1.test", clientSecret: "forge-secret", callbackUrl: callback, users: [{ login: "octo", id: 42, orgs: ["acme", "ml-team"] }] });
  });
  afterAll(() => forge?.stop());

  /** The authorize page, then its button for `choice`: the redirect's query. */
  const authorize = async (choice: Record<string, string>, challenge: string) => {
    const q = new URLSearchParams({ client_id: "Iv1.test", redirect_uri: callback, scope: "read:user read:org", state: "st", code_challenge: challenge, code_challenge_method: "S256" });
    const page = await (await fetch(`${forge.base}/login/oauth/authorize?${q}`)).text();
    const request = /name="request" value="([^"]+)"/.exec(page)?.[1] ?? "";
    const res = await fetch(`${forge.base}/login/oauth/authorize`, { method: "POST", body: new URLSearchParams({ request, ...choice }), redirect: "manual" });
    expect(res.status).toBe(302);
    return new URL(res.headers.get("location") ?? "").searchParams;
  };
  const redeem = async (code: string, verifier: string) => {
    const body = new URLSearchParams({ client_id: "Iv1.test", client_secret: "forge-secret", code, redirect_uri: callback, code_verifier: verifier });
    const res = await fetch(`${forge.base}/login/oauth/access_token`, { method: "POST", headers: { accept: "application/json" }, body });
    expect(res.status).toBe(200);
    return (await res.json()) as Record<string, string>;
  };

  test("web flow with PKCE, then /user and /user/orgs; a code is single-use", async () => {
    const { verifier, challenge } = pkce();
    const back = await authorize({ login: "octo" }, challenge);
    expect(back.get("state")).toBe("st");
    const code = back.get("code") ?? "";
    const token = await redeem(code, verifier);
    expect(token).toMatchObject({ token_type: "bearer", scope: "read:user,read:org" });
    const headers = { authorization: `Bearer ${token.access_token}`, accept: "application/vnd.github+json" };
    expect(await (await fetch(`${forge.base}/user`, { headers })).json()).toMatchObject({ login: "octo", id: 42 });
    const orgs = (await (await fetch(`${forge.base}/user/orgs`, { headers })).json()) as { login: string }[];
    expect(orgs.map((org) => org.login)).toEqual(["acme", "ml-team"]);
    expect((await redeem(code, verifier)).error).toBe("bad_verification_code");
    expect((await fetch(`${forge.base}/user`, { headers: { authorization: "token nope" } })).status).toBe(401);
  });

  test("a wrong verifier, wrong secret and Cancel are refused as GitHub does", async () => {
    const { challenge } = pkce();
    expect((await redeem((await authorize({ login: "octo" }, challenge)).get("code") ?? "", pkce().verifier)).error).toBe("bad_verification_code");
    const body = new URLSearchParams({ client_id: "Iv1.test", client_secret: "wrong", code: "x" });
    const res = await fetch(`${forge.base}/login/oauth/access_token`, { method: "POST", headers: { accept: "application/json" }, body });
    expect(((await res.json()) as { error: string }).error).toBe("incorrect_client_credentials");
    const cancelled = await authorize({ cancel: "1" }, challenge);
    expect([cancelled.get("error"), cancelled.get("state")]).toEqual(["access_denied", "st"]);
    expect(cancelled.get("error_uri")).toContain("#access-denied");
  });
});
