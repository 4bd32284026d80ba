// The token exchange and `oidc` in the chains, on the built binary, against a real OpenID Provider (the
// oidc-provider package, tests/support/oidc-op.ts): POST /auth/token and /refresh in both forms, the same
// key within a generation, rotation, expiry, the team from role_bindings or default_team, the per-person
// leaf provisioned from child_default and enforced, every refusal of the design's table; an ID token on
// every data-plane request (all six protocols, every bad-token class refused in the caller's shape, JWKS
// rotation without a refetch storm); a private CA; and the admin plane through OIDC.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { json, LISTEN_ANY, ROOT, startGateway, type RunningGateway } from "../support/gateway.ts";
import { expectNativeRefusal, nativeCalls } from "../support/native-refusal.ts";
import { startOp, type StartedOp } from "../support/oidc-op.ts";
import { SDK_CLIENTS } from "../support/sdk-clients.ts";
import { makeTlsDir } from "../support/tls.ts";
import { blocksUnder } from "../support/doc-blocks.ts";

const ENV = { GW_SIGNING_KEY: "e2e-exchange-signing-key-7c1d02", GW_ADMIN: "e2e-exchange-admin-55e1", GW_UNUSED_SECRET: "never-shown-9f3a" };
const PUBLIC_URL = "https://gateway.example.test";
const CLIENT = { client_id: "gw", client_secret: "op-client-secret", redirect_uris: ["https://gateway.example.test/auth/callback/corp"] };

let op: StartedOp;
let privateOp: StartedOp;
let caPem: string;
let gw: RunningGateway;
let short: RunningGateway;

const config = (extra: string) => `${LISTEN_ANY}
security: {admin_rate_limit: {per_second: 1000, burst: 10000}}
providers: {local: {protocol: mock}}
models: {chat: {provider: local}}
auth:
  signing_key: {env: GW_SIGNING_KEY}
  admin_tokens: [{token: {env: GW_ADMIN}}]
${extra}`;

beforeAll(async () => {
  op = await startOp({ clients: [CLIENT], accounts: [] });
  const tls = makeTlsDir();
  caPem = readFileSync(join(tls, "ca.pem"), "utf8");
  privateOp = await startOp({ clients: [CLIENT], accounts: [], tls: { certFile: join(tls, "cert.pem"), keyFile: join(tls, "key.pem") } });
  const indentedCa = caPem.trim().split("\n").join("\n        ");
  gw = await startGateway(
    config(`  chain: [keys, corp]
  admin_auth: [admin-tokens, corp]
  key_ttl: 30d
public_url: ${PUBLIC_URL}
groups:
  ml: {child_default: [{window: day, requests: 3}]}
  everyone: {}
default_team: everyone
role_bindings:
  corp:
    ml-team: {group: ml}
    gw-admins: {admin_scope: full}
    gw-readers: {admin_scope: read-only}
identity-providers:
  corp: {module: oidc, settings: {issuer: "${op.issuer}", audience: gw}, max_admin_scope: full}
  down: {module: oidc, settings: {issuer: "http://127.0.0.1:9", audience: gw}}
  private:
    module: oidc
    settings:
      issuer: "${privateOp.issuer}"
      audience: gw
      ca_cert_pem: |
        ${indentedCa}
  untrusted: {module: oidc, settings: {issuer: "${privateOp.issuer}", audience: other}}
  sealed: {module: oidc, settings: {issuer: "https://sealed.example", audience: gw}, max_admin_scope: none}
  offline: {module: oidc, settings: {issuer: "http://127.0.0.1:9", audience: gw}, browser_login: {client_secret: {env: GW_UNUSED_SECRET}}}
`),
    { env: ENV },
  );
  short = await startGateway(
    config(`  chain: [keys, corp]
  key_ttl: 2s
groups: {ml: {}}
role_bindings: {corp: {ml-team: {group: ml}}}
identity-providers:
  corp: {module: oidc, settings: {issuer: "${op.issuer}", audience: gw}}
`),
    { env: ENV },
  );
}, 60_000);

afterAll(async () => {
  await Promise.all([gw?.stop(), short?.stop()]);
  await Promise.all([op?.stop(), privateOp?.stop()]);
});

const idToken = (sub: string, groups?: string[], extra: Record<string, unknown> = {}, from = () => op) => from().sign({ sub, aud: "gw", ...(groups && { groups }), ...extra });
const exchangeAt = (base: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${base}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: typeof body === "string" ? body : JSON.stringify(body) });
const exchange = (body: unknown, headers: Record<string, string> = {}, path = "/auth/token") => exchangeAt(gw.data, path, body, headers);
const admin = (path: string, init: RequestInit = {}, credential = ENV.GW_ADMIN) => fetch(`${gw.admin}${path}`, { ...init, headers: { authorization: `Bearer ${credential}`, "content-type": "application/json", ...init.headers } });
const chat = (base: string, token: string) =>
  fetch(`${base}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify({ model: "chat", messages: [{ role: "user", content: "hi" }] }) });

interface Exchanged {
  token: string;
  key_id: string;
  identity: string;
  team: string;
  group: string;
  group_provisioned: boolean;
  expires_at: number;
  base_url: string;
}

/** Every key the exchange answered, to prove none is logged. */
const issued = new Set<string>();

async function exchanged(answer: Response): Promise<Exchanged> {
  const body = await json(answer);
  if (typeof body.token === "string") issued.add(body.token);
  expect({ status: answer.status, body }).toMatchObject({ status: 200 });
  expect(answer.headers.get("cache-control")).toBe("no-store");
  return body as Exchanged;
}

describe("POST /auth/token", () => {
  test("both forms give the same key within a generation; the leaf is provisioned under the team from child_default, enforced, and the key is in GET /keys", async () => {
    const token = await idToken("alice", ["ml-team", "other"]);
    const first = await exchanged(await exchange({ id_token: token, provider: "corp" }));
    const now = Date.now() / 1000;
    expect(first).toMatchObject({ identity: "user:alice", team: "ml", group: "user:alice@ml", group_provisioned: true, base_url: PUBLIC_URL });
    expect(first.token.startsWith("gwk_")).toBe(true);
    expect(Math.abs(first.expires_at - (now + 30 * 86_400))).toBeLessThan(60);
    // The Bearer form, a fresh ID token of the same person: the same key, the leaf already there.
    const second = await exchanged(await exchange("", { authorization: `Bearer ${await idToken("alice", ["ml-team"])}` }));
    expect(second).toEqual({ ...first, group_provisioned: false });

    const key = await json(await admin(`/keys/${first.key_id}`));
    expect(key).toMatchObject({ id: first.key_id, name: "user:alice", group: "user:alice@ml", labels: { provider: "corp" }, state: "active" });
    const leaf = await json(await admin(`/groups/${encodeURIComponent("user:alice@ml")}`));
    expect(leaf).toMatchObject({ name: "user:alice@ml", parent: "ml" });
    expect(leaf.limits).toEqual([expect.objectContaining({ window: "day", requests: 3 })]);
    // child_default's 3 requests a day, charged to the leaf.
    for (let i = 0; i < 3; i++) expect((await chat(gw.data, first.token)).status).toBe(200);
    expect((await chat(gw.data, first.token)).status).toBe(429);
  });

  test("refresh rotates: a new key, the old one refused at once and revoked; the next exchange answers the new one", async () => {
    const token = await idToken("carol", ["ml-team"]);
    const old = await exchanged(await exchange({ id_token: token }));
    expect((await chat(gw.data, old.token)).status).toBe(200);
    const fresh = await exchanged(await exchange({ id_token: token }, {}, "/auth/token/refresh"));
    expect(fresh.key_id).not.toBe(old.key_id);
    expect(fresh.token).not.toBe(old.token);
    expect(fresh.group).toBe("user:carol@ml");
    expect((await chat(gw.data, old.token)).status).toBe(401);
    expect((await chat(gw.data, fresh.token)).status).toBe(200);
    expect((await json(await admin(`/keys/${old.key_id}`))).state).toBe("revoked");
    expect(await exchanged(await exchange({ id_token: token }))).toEqual({ ...fresh, group_provisioned: false });
    // The Bearer form refreshes too.
    const third = await exchanged(await exchange("", { authorization: `Bearer ${token}` }, "/auth/token/refresh"));
    expect(third.key_id).not.toBe(fresh.key_id);
  });

  test("no matching binding lands on default_team", async () => {
    const key = await exchanged(await exchange({ id_token: await idToken("dave") }));
    expect(key).toMatchObject({ identity: "user:dave", team: "everyone", group: "user:dave@everyone", group_provisioned: true });
  });

  test("a key an admin disabled is a pause: exchange and refresh answer 403 and issue nothing", async () => {
    const token = await idToken("erin", ["ml-team"]);
    const key = await exchanged(await exchange({ id_token: token }));
    expect((await admin(`/keys/${key.key_id}`, { method: "PATCH", body: JSON.stringify({ enabled: false }) })).status).toBe(200);
    for (const path of ["/auth/token", "/auth/token/refresh"]) {
      const refused = await exchange({ id_token: token }, {}, path);
      expect(refused.status).toBe(403);
      expect((await json(refused)).error.code).toBe("forbidden");
    }
    const keys = (await json(await admin("/keys?limit=500"))).items.filter((k: { name: string }) => k.name === "user:erin");
    expect(keys.map((k: { id: string }) => k.id)).toEqual([key.key_id]);
  });

  test("a key an admin revoked or deleted is replaced at the next exchange", async () => {
    const token = await idToken("fay", ["ml-team"]);
    const first = await exchanged(await exchange({ id_token: token }));
    expect((await admin(`/keys/${first.key_id}/revoke`, { method: "POST" })).status).toBe(200);
    const second = await exchanged(await exchange({ id_token: token }));
    expect(second.key_id).not.toBe(first.key_id);
    expect((await admin(`/keys/${second.key_id}`, { method: "DELETE" })).status).toBe(200);
    const third = await exchanged(await exchange({ id_token: token }));
    expect(new Set([first.key_id, second.key_id, third.key_id]).size).toBe(3);
    expect((await chat(gw.data, third.token)).status).toBe(200);
  });

  test("each refusal of the design's table, in the gateway envelope, uncached, issuing nothing", async () => {
    const before = (await json(await admin("/keys?limit=500"))).items.length;
    const good = await idToken("gina", ["ml-team"]);
    const cases: [string, Response, number, string][] = [
      ["not JSON", await exchange("{nope"), 400, "invalid_request"],
      ["unknown member", await exchange({ id_token: good, scope: "x" }), 400, "invalid_request"],
      ["unknown provider", await exchange({ id_token: good, provider: "nobody" }), 400, "invalid_request"],
      ["no token", await exchange({ provider: "corp" }), 401, "unauthorized"],
      ["wrong audience", await exchange({ id_token: await op.sign({ sub: "gina", aud: "someone-else" }), provider: "corp" }), 401, "unauthorized"],
      ["expired", await exchange({ id_token: await op.sign({ sub: "gina", aud: "gw", exp: Math.floor(Date.now() / 1000) - 600 }), provider: "corp" }), 401, "unauthorized"],
      ["bad signature", await exchange({ id_token: `${good.slice(0, -4)}AAAA`, provider: "corp" }), 401, "unauthorized"],
      ["issuer unreachable", await exchange({ id_token: good, provider: "down" }), 500, "internal"],
    ];
    for (const [name, answer, status, code] of cases) {
      const body = await json(answer);
      expect({ name, status: answer.status, code: body.error?.code }).toEqual({ name, status, code });
      expect(answer.headers.get("cache-control")).toBe("no-store");
      if (status === 401 && name !== "no token") expect(answer.headers.get("www-authenticate")).toBe('Bearer error="invalid_token"');
    }
    expect((await json(await admin("/keys?limit=500"))).items.length).toBe(before);
    expect(gw.logs.some((line) => line.includes("identity provider unreachable") && line.includes("down"))).toBe(true);
    expect(gw.logs.join("\n")).not.toContain(good);
  });

  test("docs/identity.md's command, as printed, exchanges a held token", async () => {
    const [block] = blocksUnder(ROOT, "docs/identity.md", "Exchanging a token you already hold");
    const run = Bun.spawnSync(["bash", "-ec", block!.text], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", GATEWAY_URL: gw.data, ID_TOKEN: await idToken("nina", ["ml-team"]) } });
    expect(run.exitCode).toBe(0);
    expect(JSON.parse(run.stdout.toString())).toMatchObject({ identity: "user:nina", team: "ml", group: "user:nina@ml" });
  });

  test("a body over 64 KiB is refused before it is read; a subject that cannot name a group is 403; nothing issued", async () => {
    const before = (await json(await admin("/keys?limit=500"))).items.length;
    const big = await exchange({ id_token: "x".repeat(70 * 1024) });
    expect(big.status).toBe(400);
    expect(big.headers.get("cache-control")).toBe("no-store");
    expect((await json(big)).error.message).toContain("over 65536 bytes");
    const spaced = await exchange({ id_token: await op.sign({ sub: "has a space", aud: "gw" }), provider: "corp" });
    expect(spaced.status).toBe(403);
    expect((await json(spaced)).error.code).toBe("forbidden");
    expect((await json(await admin("/keys?limit=500"))).items.length).toBe(before);
  });

  test("browser sign-in with an unreachable issuer is a 502 page, and a provider without browser_login a 404 page", async () => {
    const down = await fetch(`${gw.data}/auth/login/offline`, { redirect: "manual" });
    expect(down.status).toBe(502);
    expect(down.headers.get("content-type")).toContain("text/html");
    expect(down.headers.get("cache-control")).toBe("no-store");
    expect(down.headers.get("set-cookie")).toBeNull();
    expect(await down.text()).toContain("offline could not be reached");
    const none = await fetch(`${gw.data}/auth/login/corp`, { redirect: "manual" });
    expect(none.status).toBe(404);
    expect(await none.text()).toContain("Sign-in failed");
    expect(gw.logs.join("\n")).not.toContain(ENV.GW_UNUSED_SECRET);
  });

  test("ca_cert_pem: a provider behind a private CA is trusted for that provider only", async () => {
    const token = await privateOp.sign({ sub: "hana", aud: "gw" });
    expect((await exchanged(await exchange({ id_token: token, provider: "private" }))).identity).toBe("user:hana");
    const untrusted = await exchange({ id_token: await privateOp.sign({ sub: "hana", aud: "other" }), provider: "untrusted" });
    expect(untrusted.status).toBe(500);
    expect((await json(untrusted)).error.message).toContain("untrusted");
  });

  test("no team and no default_team: 403, nothing issued; an expired key is replaced at the next exchange", async () => {
    const none = await exchangeAt(short.data, "/auth/token", { id_token: await idToken("ivan", ["nobody-binds-this"]) });
    expect(none.status).toBe(403);
    expect((await json(none)).error.code).toBe("forbidden");
    const token = await idToken("ivan", ["ml-team"]);
    const first = await exchanged(await exchangeAt(short.data, "/auth/token", { id_token: token }));
    expect((await chat(short.data, first.token)).status).toBe(200);
    await Bun.sleep(2_100);
    expect((await chat(short.data, first.token)).status).toBe(401);
    const second = await exchanged(await exchangeAt(short.data, "/auth/token", { id_token: token }));
    expect(second.key_id).not.toBe(first.key_id);
    expect((await chat(short.data, second.token)).status).toBe(200);
  });
});

describe("oidc in auth.chain: an ID token on every data-plane request", () => {
  test("admitted on all six protocols through each vendor's SDK, charged to the person's leaf (provisioned on the first request)", async () => {
    const token = await idToken("jack");
    for (const make of SDK_CLIENTS) {
      const client = make(gw.data, token);
      const turn = await client.nonStream("chat", "hello");
      expect({ sdk: client.name, text: turn.text.length > 0 }).toEqual({ sdk: client.name, text: true });
    }
    const leaf = await admin(`/groups/${encodeURIComponent("user:jack@everyone")}`);
    expect(leaf.status).toBe(200);
    expect((await json(leaf)).parent).toBe("everyone");
  });

  test("every bad token class is refused with 401 in the caller's own envelope", async () => {
    const now = Math.floor(Date.now() / 1000);
    const good = await idToken("kate", ["ml-team"]);
    const [header, payload] = good.split(".");
    const bad: Record<string, string> = {
      "wrong iss": await op.sign({ sub: "kate", aud: "gw", iss: "https://evil.example" }),
      "wrong aud": await op.sign({ sub: "kate", aud: "not-gw" }),
      expired: await op.sign({ sub: "kate", aud: "gw", exp: now - 600 }),
      "not yet valid": await op.sign({ sub: "kate", aud: "gw", nbf: now + 600 }),
      "bad signature": `${header}.${payload}.${"A".repeat(342)}`,
      "alg none": await op.sign({ sub: "kate", aud: "gw" }, { alg: "none" }),
      "HS256 keyed with the public key": await op.sign({ sub: "kate", aud: "gw" }, { alg: "HS256" }),
      "unknown kid": await op.sign({ sub: "kate", aud: "gw" }, { kid: "not-a-published-kid" }),
      "missing sub": await op.sign({ aud: "gw", sub: undefined }),
    };
    const calls = nativeCalls(() => gw.data);
    for (const [kind, token] of Object.entries(bad)) {
      for (const [name, call] of Object.entries(calls)) {
        const answer = await call(token);
        try {
          await expectNativeRefusal(name, answer, "authentication");
        } catch (error) {
          throw new Error(`${kind} via ${name}: ${(error as Error).message}`);
        }
      }
    }
    expect((await chat(gw.data, good)).status).toBe(200);
  });

  test("a person with no team (no binding, no default_team) is refused in the caller's permission shape", async () => {
    const token = await idToken("mona", ["nobody-binds-this"]);
    for (const [name, call] of Object.entries(nativeCalls(() => short.data))) await expectNativeRefusal(name, await call(token), "permission");
    expect((await chat(short.data, await idToken("mona", ["ml-team"]))).status).toBe(200);
  });

  test("a rotated key set is picked up without a restart, and a flood of unknown kids makes no refetch storm", async () => {
    expect((await chat(gw.data, await idToken("liam", ["ml-team"]))).status).toBe(200);
    await op.rotate();
    const before = await op.jwksFetches();
    // A new kid refetches the set, at most once per 5 s: the last fetch may have been moments ago.
    const rotated = await idToken("liam", ["ml-team"]);
    const deadline = Date.now() + 8_000;
    let status = (await chat(gw.data, rotated)).status;
    while (status !== 200 && Date.now() < deadline) {
      await Bun.sleep(250);
      status = (await chat(gw.data, rotated)).status;
    }
    expect(status).toBe(200);
    const afterRotation = await op.jwksFetches();
    expect(afterRotation - before).toBe(1);
    const forged = await Promise.all(Array.from({ length: 20 }, (_, i) => op.sign({ sub: "liam", aud: "gw" }, { kid: `forged-${i}` })));
    const answers = await Promise.all(forged.map((token) => chat(gw.data, token)));
    expect(answers.map((a) => a.status)).toEqual(forged.map(() => 401));
    expect((await op.jwksFetches()) - afterRotation).toBeLessThanOrEqual(1);
  }, 20_000);

});

describe("the admin plane through OIDC", () => {
  test("scope from admin_scope bindings: full mutates, read-only reads and is refused a mutation (403, audited), no binding is refused reads too; the audit principal is the identity", async () => {
    const full = await idToken("olga", ["gw-admins"]);
    const reader = await idToken("paul", ["gw-readers"]);
    const nobody = await idToken("quinn", ["ml-team"]);
    const created = await admin("/groups", { method: "POST", body: JSON.stringify({ name: "made-by-oidc" }) }, full);
    expect(created.status).toBe(201);
    expect((await admin("/groups/made-by-oidc", {}, reader)).status).toBe(200);
    const refused = await admin("/groups", { method: "POST", body: JSON.stringify({ name: "not-made" }) }, reader);
    expect(refused.status).toBe(403);
    const none = await admin("/groups", {}, nobody);
    expect(none.status).toBe(403);
    expect((await json(none)).error.code).toBe("forbidden");
    const entries = (await json(await admin("/audit?limit=500"))).items as { action: string; principal: string; outcome: string; resource: string }[];
    expect(entries.some((e) => e.principal === "user:olga" && e.action === "group.create" && e.outcome === "applied")).toBe(true);
    expect(entries.some((e) => e.principal === "user:paul" && e.outcome === "rejected")).toBe(true);
    expect(JSON.stringify(entries)).not.toContain(full);
  });

  test("PUT /admin-auth naming a max_admin_scope: none instance is 400, nothing applied; an oidc instance is taken", async () => {
    const refused = await admin("/admin-auth", { method: "PUT", body: JSON.stringify({ modules: ["admin-tokens", "sealed"] }) });
    expect(refused.status).toBe(400);
    expect((await json(refused)).error.message).toContain("max_admin_scope: none");
    expect((await json(await admin("/admin-auth"))).modules).toEqual(["admin-tokens", "corp"]);
    // An instance name is a module the chain may take.
    const put = await admin("/admin-auth", { method: "PUT", body: JSON.stringify({ modules: ["corp", "admin-tokens"] }) });
    expect(put.status).toBe(200);
    expect(await json(put)).toMatchObject({ configured: true, modules: ["corp", "admin-tokens"], applied: true });
  });

  test("an unsigned or foreign token is not an admin credential (401)", async () => {
    expect((await admin("/groups", {}, await op.sign({ sub: "olga", aud: "gw", groups: ["gw-admins"] }, { alg: "none" }))).status).toBe(401);
    expect((await admin("/groups", {}, await op.sign({ sub: "olga", aud: "gw", groups: ["gw-admins"], iss: "https://evil.example" }))).status).toBe(401);
  });
});

test("no exchanged key and no ID token appears in either gateway's log", async () => {
  expect(issued.size).toBeGreaterThan(5);
  const logs = [...gw.logs, ...short.logs].join("\n");
  for (const token of issued) expect(logs).not.toContain(token);
  expect(logs).not.toContain("eyJ");
});
