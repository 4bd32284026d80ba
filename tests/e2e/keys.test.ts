// Virtual keys and the ingress auth chain on the built binary: minting, every protocol's credential
// header, inbound SigV4 with an issued pair through the AWS SDK, state changes seen by the very next
// request, native error shapes, allowed_pools, static tokens, /stats and /metrics, the decision cache,
// the governance admin guard, and that no token is kept or shown anywhere but the mint's answer.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand } from "@aws-sdk/client-bedrock-runtime";
import OpenAI from "openai";
import { SignatureV4 } from "@smithy/signature-v4";
import { createHash, createHmac } from "node:crypto";
import { expectNativeRefusal, nativeCalls } from "../support/native-refusal.ts";
import { json, LISTEN_ANY, runGateway, startGateway, tempDir, type RunningGateway } from "../support/gateway.ts";

const ENV = { GW_SIGNING_KEY: "e2e-signing-key-5d1f0c9a7b", GW_CLIENT_TOKEN: "e2e-static-client-token-41c2", GW_ADMIN: "e2e-admin-token-77aa" };

const CONFIG = `${LISTEN_ANY}
store: {module: sqlite, settings: {path: ./state/gateway.db}}
# Many admin calls in a burst: above the default admin rate limit (20/s, burst 100).
security: {admin_rate_limit: {per_second: 1000, burst: 10000}}
providers:
  local: {protocol: mock}
models:
  mock-1: {provider: local}
pools:
  chat: {members: [{model: mock-1}]}
  other: {members: [{model: mock-1}]}
auth:
  chain: [tokens, keys]
  signing_key: {env: GW_SIGNING_KEY}
  tokens: [{name: ci, token: {env: GW_CLIENT_TOKEN}}]
  admin_auth: [admin-tokens]
  admin_tokens: [{token: {env: GW_ADMIN}}]
`;

let gw: RunningGateway;
beforeAll(async () => {
  gw = await startGateway(CONFIG, { env: ENV });
});
afterAll(async () => {
  await gw?.stop();
});

const admin = (path: string, init: RequestInit = {}) => fetch(`${gw.admin}${path}`, { ...init, headers: { "x-admin-token": ENV.GW_ADMIN, "content-type": "application/json", ...init.headers } });
const post = (path: string, body: unknown) => admin(path, { method: "POST", body: JSON.stringify(body) });
const patch = (path: string, body: unknown) => admin(path, { method: "PATCH", body: JSON.stringify(body) });

interface Minted {
  id: string;
  token: string;
  aws_access_key_id?: string;
  aws_secret_access_key?: string;
}
/** Every token and AWS secret minted here, to prove none is kept or shown afterwards. */
const minted: Minted[] = [];
async function mint(body: Record<string, unknown> = {}): Promise<Minted> {
  const response = await post("/keys", { name: "e2e", ...body });
  expect(response.status).toBe(201);
  const key = (await json(response)) as Minted;
  minted.push(key);
  return key;
}


const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const CALLS = nativeCalls(() => gw.data);

const bedrockSigV4 = (accessKeyId: string, secretAccessKey: string) =>
  new BedrockRuntimeClient({ region: "eu-west-3", endpoint: gw.data, maxAttempts: 1, credentials: { accessKeyId, secretAccessKey } });
const converse = (client: BedrockRuntimeClient, modelId = "chat") => client.send(new ConverseCommand({ modelId, messages: [{ role: "user", content: [{ text: "hi" }] }] }));

describe("a minted key", () => {
  test.each(Object.keys(CALLS))("is accepted on %s, and a wrong one refused in the native shape", async (name) => {
    const key = await mint();
    const ok = await CALLS[name]!(key.token);
    expect(ok.status).toBe(200);
    // One signature character changed (not the last: its low bits are padding), so it is always a different signature.
    const at = key.token.length - 5;
    const tampered = `${key.token.slice(0, at)}${key.token[at] === "A" ? "B" : "A"}${key.token.slice(at + 1)}`;
    await expectNativeRefusal(name, await CALLS[name]!(tampered), "authentication");
    await expectNativeRefusal(name, await CALLS[name]!("not-a-key"), "authentication");
  });

  test("the official OpenAI and Anthropic SDKs use it as their API key", async () => {
    const key = await mint();
    const openai = new OpenAI({ apiKey: key.token, baseURL: `${gw.data}/v1`, maxRetries: 0 });
    const completion = await openai.chat.completions.create({ model: "chat", messages: [{ role: "user", content: "hi" }] });
    expect(completion.choices[0]!.message.content).toBeTruthy();
    const anthropic = new Anthropic({ apiKey: key.token, baseURL: gw.data, maxRetries: 0 });
    const message = await anthropic.messages.create({ model: "chat", max_tokens: 16, messages: [{ role: "user", content: "hi" }] });
    expect(message.content.length).toBeGreaterThan(0);
    const refused = new OpenAI({ apiKey: "gwk_forged.AAAA", baseURL: `${gw.data}/v1`, maxRetries: 0 });
    const error = await refused.chat.completions.create({ model: "chat", messages: [{ role: "user", content: "hi" }] }).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
  });

  test("the mint answer: token once, expiry, state, and no AWS pair unless asked", async () => {
    const before = Math.floor(Date.now() / 1000);
    const response = await post("/keys", { name: "shape", labels: { team: "ml" }, expires_in: "2h" });
    expect(response.status).toBe(201);
    const view = await json(response);
    minted.push(view);
    expect(Object.keys(view).sort()).toEqual(["allowed_pools", "created_at", "enabled", "expires_at", "group", "group_provisioned", "id", "labels", "name", "state", "token"]);
    expect(view).toMatchObject({ name: "shape", allowed_pools: null, group: null, enabled: true, labels: { team: "ml" }, state: "active", group_provisioned: false });
    expect(view.token).toStartWith("gwk_");
    expect(view.expires_at).toBeGreaterThanOrEqual(before + 7200);
    expect(view.expires_at).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 7200);
    const defaulted = await mint();
    const fetched = await json(await admin(`/keys/${defaulted.id}`));
    expect(fetched.state).toBe("active");
    expect((defaulted as unknown as { expires_at: number }).expires_at - fetched.created_at).toBe(365 * 86400);
  });
});

describe("inbound SigV4 with an issued AWS pair", () => {
  test("the AWS SDK signs with the pair and the gateway verifies it, streamed or not", async () => {
    const key = await mint({ issue_aws_credential: true });
    expect(key.aws_access_key_id).toMatch(/^[A-Z0-9]{20}$/);
    expect(key.aws_secret_access_key!.length).toBeGreaterThanOrEqual(40);
    const client = bedrockSigV4(key.aws_access_key_id!, key.aws_secret_access_key!);
    const reply = await converse(client);
    expect(reply.output?.message?.content?.[0]?.text).toBeTruthy();
    const streamed = await client.send(new ConverseStreamCommand({ modelId: "chat", messages: [{ role: "user", content: [{ text: "hi" }] }] }));
    let text = "";
    for await (const event of streamed.stream ?? []) text += event.contentBlockDelta?.delta?.text ?? "";
    expect(text).not.toBe("");
    // The bearer token of the same key still works too.
    expect((await CALLS["Bedrock Bearer"]!(key.token)).status).toBe(200);
  });

  test("a wrong secret, an unknown access key id, and a revoked key are refused as AWS refuses", async () => {
    const key = await mint({ issue_aws_credential: true });
    // The last character changed, whatever it was (a secret ending in "x" made the old "wrong" one right).
    const secret = key.aws_secret_access_key!;
    const wrongSecret = bedrockSigV4(key.aws_access_key_id!, `${secret.slice(0, -1)}${secret.endsWith("x") ? "y" : "x"}`);
    await expect(converse(wrongSecret)).rejects.toMatchObject({ name: "UnrecognizedClientException", $metadata: { httpStatusCode: 403 } });
    await expect(converse(bedrockSigV4("GWKA0000000000000000", key.aws_secret_access_key!))).rejects.toMatchObject({ name: "UnrecognizedClientException" });
    const client = bedrockSigV4(key.aws_access_key_id!, key.aws_secret_access_key!);
    await converse(client);
    expect((await post(`/keys/${key.id}/revoke`, {})).status).toBe(200);
    await expect(converse(client)).rejects.toMatchObject({ name: "UnrecognizedClientException" });
  });

  test("a signed body sent chunked (no Content-Length) is verified and served; a deep one is a 400 at once", async () => {
    const key = await mint({ issue_aws_credential: true });
    // A SigV4 signer as a client that streams its body uses it: Content-Length is not among the signed headers.
    const bytes = (data: string | ArrayBuffer | ArrayBufferView) => (typeof data === "string" ? Buffer.from(data) : ArrayBuffer.isView(data) ? Buffer.from(data.buffer, data.byteOffset, data.byteLength) : Buffer.from(data));
    class Sha256 {
      readonly hash;
      constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
        this.hash = secret === undefined ? createHash("sha256") : createHmac("sha256", bytes(secret));
      }
      update(data: string | ArrayBuffer | ArrayBufferView) {
        this.hash.update(bytes(data));
      }
      async digest() {
        return new Uint8Array(this.hash.digest());
      }
    }
    const signer = new SignatureV4({ service: "bedrock", region: "eu-west-3", sha256: Sha256, credentials: { accessKeyId: key.aws_access_key_id!, secretAccessKey: key.aws_secret_access_key! } });
    const url = new URL(gw.data);
    const send = async (path: string, body: string) => {
      const signed = await signer.sign({ method: "POST", protocol: "http:", hostname: url.hostname, port: Number(url.port), path, headers: { host: url.host, "content-type": "application/json" }, body });
      const encoded = new TextEncoder().encode(body);
      const chunked = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let at = 0; at < encoded.length; at += 4096) controller.enqueue(encoded.slice(at, at + 4096));
          controller.close();
        },
      });
      return fetch(`${gw.data}${path}`, { method: "POST", headers: signed.headers, body: chunked });
    };
    const hi = JSON.stringify({ messages: [{ role: "user", content: [{ text: "hi" }] }] });
    const reply = await send("/model/chat/converse", hi);
    expect(reply.status).toBe(200);
    expect(((await reply.json()) as any).output.message.content[0].text).toBeTruthy();
    const streamed = await send("/model/chat/converse-stream", hi);
    expect({ status: streamed.status, type: streamed.headers.get("content-type") }).toEqual({ status: 200, type: "application/vnd.amazon.eventstream" });
    await streamed.arrayBuffer();
    const started = performance.now();
    const deep = await send("/model/chat/converse", `{"messages":${"[".repeat(100_000)}${"]".repeat(100_000)}}`);
    expect({ status: deep.status, type: deep.headers.get("x-amzn-errortype") }).toEqual({ status: 400, type: "ValidationException" });
    expect(((await deep.json()) as any).message).toContain("deeper than 64 levels");
    expect(performance.now() - started).toBeLessThan(500);
  });

  test("allowed_pools holds for SigV4 too: AccessDeniedException", async () => {
    const key = await mint({ issue_aws_credential: true, allowed_pools: ["chat"] });
    const client = bedrockSigV4(key.aws_access_key_id!, key.aws_secret_access_key!);
    await converse(client, "chat");
    await expect(converse(client, "other")).rejects.toMatchObject({ name: "AccessDeniedException", $metadata: { httpStatusCode: 403 } });
  });
});

describe("state changes hold at the very next request", () => {
  test("disable, enable, revoke, delete", async () => {
    const key = await mint();
    const call = () => CALLS["OpenAI Bearer"]!(key.token);
    expect((await call()).status).toBe(200);

    expect(await json(await patch(`/keys/${key.id}`, { enabled: false }))).toMatchObject({ state: "disabled", enabled: false });
    expect((await call()).status).toBe(401);
    expect(await json(await patch(`/keys/${key.id}`, { enabled: true }))).toMatchObject({ state: "active" });
    expect((await call()).status).toBe(200);

    const revoked = await post(`/keys/${key.id}/revoke`, {});
    expect(await json(revoked)).toMatchObject({ id: key.id, state: "revoked" });
    expect((await call()).status).toBe(401);
    expect(await json(await admin(`/keys/${key.id}`))).toMatchObject({ state: "revoked" });
    // Idempotent, and a revoked key cannot be patched back to life.
    expect(await json(await post(`/keys/${key.id}/revoke`, {}))).toMatchObject({ state: "revoked" });
    const patched = await patch(`/keys/${key.id}`, { enabled: true });
    expect(patched.status).toBe(409);
    expect((await json(patched)).error.code).toBe("conflict");

    const deleted = await admin(`/keys/${key.id}`, { method: "DELETE" });
    expect(await json(deleted)).toMatchObject({ state: "tombstoned" });
    expect((await call()).status).toBe(401);
    expect((await admin(`/keys/${key.id}`)).status).toBe(404);
    expect((await admin(`/keys/${key.id}`, { method: "DELETE" })).status).toBe(404);
    expect((await patch(`/keys/${key.id}`, { name: "x" })).status).toBe(409);
  });

  test("a deleted key leaves GET /keys unless include=tombstoned", async () => {
    const key = await mint();
    await admin(`/keys/${key.id}`, { method: "DELETE" });
    const all = async (query: string) => {
      const ids: string[] = [];
      let cursor: string | null = null;
      do {
        const page: any = await json(await admin(`/keys?limit=3${query}${cursor ? `&cursor=${cursor}` : ""}`));
        ids.push(...page.items.map((k: { id: string }) => k.id));
        cursor = page.next_cursor;
      } while (cursor);
      return ids;
    };
    expect(await all("")).not.toContain(key.id);
    expect(await all("&include=tombstoned")).toContain(key.id);
  });

  test("PATCH sets, clears and keeps each field", async () => {
    const key = await mint({ labels: { a: "1" }, allowed_pools: ["other"] });
    const view = await json(await patch(`/keys/${key.id}`, { name: "renamed", allowed_pools: null }));
    expect(view).toMatchObject({ name: "renamed", allowed_pools: null, labels: { a: "1" }, enabled: true });
    expect(await json(await patch(`/keys/${key.id}`, { labels: null, allowed_pools: ["chat"] }))).toMatchObject({ name: "renamed", labels: {}, allowed_pools: ["chat"] });
    expect((await CALLS["OpenAI Bearer"]!(key.token, "other")).status).toBe(403);
    for (const body of [{ name: null }, { enabled: null }, { token: "x" }, { group: "nope" }]) {
      const refused = await patch(`/keys/${key.id}`, body);
      expect(refused.status).toBe(400);
      expect((await json(refused)).error.code).toBe("invalid_request");
    }
  });
});

describe("POST /keys refuses what it must", () => {
  test.each([
    [{ name: "x", max_budget_cents: 10 }, "max_budget_cents"],
    [{ name: "x", rpm_limit: 10 }, "rpm_limit"],
    [{ name: "x", tpm_limit: 10 }, "tpm_limit"],
    [{ name: "x", budget_period: "month" }, "budget_period"],
    [{ name: "x", colour: "red" }, "colour"],
    [{ name: "x", expires_at: 4102444800, expires_in: "1d" }, "expires_in"],
    [{ name: "x", expires_at: 1000 }, "expires_at"],
    [{ name: "x", expires_in: "soon" }, "expires_in"],
    [{ name: "x", allowed_pools: [1] }, "allowed_pools"],
    [{ name: "x", group: "no-such-group" }, "group"],
    [{}, "name"],
  ])("%j names %s", async (body, member) => {
    const response = await post("/keys", body);
    expect(response.status).toBe(400);
    const error = (await json(response)).error;
    expect(error.code).toBe("invalid_request");
    expect(error.message).toContain(member);
  });
});

describe("allowed_pools", () => {
  test.each(Object.keys(CALLS))("a pool outside the list is 403 in the native shape (%s)", async (name) => {
    const key = await mint({ allowed_pools: ["chat"] });
    expect((await CALLS[name]!(key.token, "chat")).status).toBe(200);
    await expectNativeRefusal(name, await CALLS[name]!(key.token, "other"), "permission");
  });

  test("[] allows no pool", async () => {
    const key = await mint({ allowed_pools: [] });
    expect((await CALLS["OpenAI Bearer"]!(key.token, "chat")).status).toBe(403);
  });

  test("GET /v1/models needs a credential and lists only the pools the key may use (OpenAI and Anthropic SDKs)", async () => {
    const ids = async (token: string) => (await new OpenAI({ baseURL: `${gw.data}/v1`, apiKey: token, maxRetries: 0 }).models.list()).data.map((m) => m.id);
    await expect(ids("not-a-key")).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    const anthropicList = async (token: string) => await new Anthropic({ baseURL: gw.data, apiKey: token, maxRetries: 0 }).models.list();
    await expect(anthropicList("not-a-key")).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
    expect(await ids((await mint()).token)).toEqual(["chat", "mock-1", "other"]); // the pools and the bare model alias
    const limited = await mint({ allowed_pools: ["chat"] });
    expect(await ids(limited.token)).toEqual(["chat"]);
    expect((await anthropicList(limited.token)).data.map((m) => m.id)).toEqual(["chat"]);
    expect(await ids((await mint({ allowed_pools: [] })).token)).toEqual([]);
  });
});

describe("the tokens module, /stats and /metrics", () => {
  test("a static client token is accepted alongside keys", async () => {
    expect((await CALLS["OpenAI Bearer"]!(ENV.GW_CLIENT_TOKEN)).status).toBe(200);
    expect((await CALLS["Anthropic x-api-key"]!(ENV.GW_CLIENT_TOKEN)).status).toBe(200);
    expect((await CALLS["OpenAI Bearer"]!(`${ENV.GW_CLIENT_TOKEN}x`)).status).toBe(401);
  });

  test.each(["/stats", "/metrics"])("%s needs a client token or key", async (path) => {
    const key = await mint();
    expect((await fetch(`${gw.data}${path}`)).status).toBe(401);
    expect((await fetch(`${gw.data}${path}`, { headers: bearer("wrong") })).status).toBe(401);
    expect((await fetch(`${gw.data}${path}`, { headers: bearer(ENV.GW_CLIENT_TOKEN) })).status).toBe(200);
    expect((await fetch(`${gw.data}${path}`, { headers: { "x-api-key": key.token } })).status).toBe(200);
    expect((await fetch(`${gw.data}${path}`, { headers: { "x-goog-api-key": key.token } })).status).toBe(200);
    expect((await fetch(`${gw.data}${path}?key=${encodeURIComponent(key.token)}`)).status).toBe(200);
    await post(`/keys/${key.id}/revoke`, {});
    expect((await fetch(`${gw.data}${path}`, { headers: bearer(key.token) })).status).toBe(401);
  });
});

describe("POST /auth/cache/flush", () => {
  test("drops one module's decisions, or all", async () => {
    await post("/auth/cache/flush", {});
    expect((await CALLS["OpenAI Bearer"]!(ENV.GW_CLIENT_TOKEN)).status).toBe(200);
    const key = await mint();
    expect((await CALLS["OpenAI Bearer"]!(key.token)).status).toBe(200);
    expect(await json(await post("/auth/cache/flush", { module: "tokens" }))).toEqual({ flushed: 1 });
    expect(await json(await post("/auth/cache/flush", { module: "tokens" }))).toEqual({ flushed: 0 });
    expect(await json(await admin("/auth/cache/flush", { method: "POST" }))).toEqual({ flushed: 1 });
    // A flushed decision is simply made again.
    expect((await CALLS["OpenAI Bearer"]!(key.token)).status).toBe(200);
  });
});

describe("secrets stay secret", () => {
  test("no token or AWS secret in any read, the logs, the audit log, or the store", async () => {
    expect(minted.length).toBeGreaterThan(5);
    const reads = [await (await admin("/keys?limit=500&include=tombstoned")).text()];
    for (const key of minted) reads.push(await (await admin(`/keys/${key.id}?include=tombstoned`)).text());
    const db = new Database(join(gw.dir, "state/gateway.db"), { readonly: true });
    const dump = (table: string) => JSON.stringify(db.query(`SELECT * FROM ${table}`).all());
    const stored = dump("keys");
    const audit = db.query("SELECT * FROM audit ORDER BY seq").all() as Record<string, string | number>[];
    db.close();
    const logs = gw.logs.join("\n");
    for (const key of minted) {
      for (const secret of [key.token, key.token.split(".")[1]!, key.aws_secret_access_key].filter((s): s is string => s !== undefined)) {
        for (const text of [...reads, logs, stored, JSON.stringify(audit)]) expect(text).not.toContain(secret);
      }
    }
    // The store keeps the token's sha256 (and drops even that on delete).
    const live = minted.at(-1)!;
    expect(stored).toContain(new Bun.CryptoHasher("sha256").update(live.token).digest("hex"));
    for (const text of reads) expect(text).not.toContain(new Bun.CryptoHasher("sha256").update(live.token).digest("hex"));

    // Every mutation is audited, applied or rejected, by the admin principal, in an intact hash chain.
    expect(audit.some((e) => e.action === "key.create" && e.outcome === "applied" && e.resource === `key:${live.id}`)).toBe(true);
    expect(audit.some((e) => e.action === "key.create" && e.outcome === "rejected")).toBe(true);
    for (const action of ["key.update", "key.revoke", "key.delete"]) expect(audit.some((e) => e.action === action)).toBe(true);
    expect(audit.every((e) => e.principal === "admin")).toBe(true);
    let prev = "";
    audit.forEach((e, i) => {
      expect(e.seq).toBe(i + 1);
      expect(e.prev_hash).toBe(prev);
      // The acting credential is hashed in when there is one (issue 22); older entries hash without it.
      const text = [e.prev_hash, e.seq, e.ts, e.action, e.resource, e.outcome, e.principal, ...(e.credential == null ? [] : [e.credential])].join("|");
      expect(e.hash).toBe(new Bun.CryptoHasher("sha256").update(text).digest("hex"));
      prev = e.hash as string;
    });
  });
});

describe("deployments", () => {
  test("a governance deployment with no admin token answers 401 on key endpoints only", async () => {
    const open = await startGateway(`${LISTEN_ANY}
store: {module: sqlite, settings: {path: ./gateway.db}}
providers: {local: {protocol: mock}}
models: {mock-1: {provider: local}}
auth: {chain: [keys], signing_key: {env: GW_SIGNING_KEY}}
`, { env: ENV });
    try {
      const mintOpen = await fetch(`${open.admin}/keys`, { method: "POST", body: JSON.stringify({ name: "x" }) });
      expect(mintOpen.status).toBe(401);
      expect((await json(mintOpen)).error.code).toBe("unauthorized");
      expect((await fetch(`${open.admin}/keys`)).status).toBe(401);
      expect((await fetch(`${open.admin}/info`)).status).toBe(200);
      // The data plane is closed too: the chain is not empty.
      expect((await fetch(`${open.data}/v1/chat/completions`, { method: "POST", body: JSON.stringify({ model: "mock-1", messages: [] }) })).status).toBe(401);
    } finally {
      await open.stop();
    }
  });

  test("without auth.signing_key, POST /keys is 400, and a chain naming keys does not load", async () => {
    const tokensOnly = await startGateway(`${LISTEN_ANY}
store: {module: sqlite, settings: {path: ./gateway.db}}
providers: {local: {protocol: mock}}
models: {mock-1: {provider: local}}
auth: {chain: [tokens], tokens: [{name: ci, token: {env: GW_CLIENT_TOKEN}}]}
`, { env: ENV });
    try {
      const response = await fetch(`${tokensOnly.admin}/keys`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "x" }) });
      expect(response.status).toBe(400);
      expect((await json(response)).error.message).toContain("signing_key");
    } finally {
      await tokensOnly.stop();
    }
    const dir = tempDir();
    writeFileSync(join(dir, "gw.yaml"), `${LISTEN_ANY}auth: {chain: [keys]}\n`);
    const checked = await runGateway(["--check", "--config", join(dir, "gw.yaml")], { cwd: dir });
    expect(checked.code).toBe(1);
    expect(checked.stderr).toContain("auth.signing_key: the keys module needs a signing key");
  });

  test("keys survive a restart: the registry is rebuilt from the store", async () => {
    const key = await mint();
    const revoked = await mint();
    await post(`/keys/${revoked.id}/revoke`, {});
    await gw.stop();
    // The same directory, so the same store file.
    const restarted = await startGatewayIn(gw.dir, join(gw.dir, "gateway.test.yaml"));
    try {
      const call = (t: string) => fetch(`${restarted.data}/v1/chat/completions`, { method: "POST", headers: bearer(t), body: JSON.stringify({ model: "chat", messages: [{ role: "user", content: "hi" }] }) });
      expect((await call(key.token)).status).toBe(200);
      expect((await call(revoked.token)).status).toBe(401);
    } finally {
      await restarted.stop();
    }
  });
});

/** The binary again over an existing directory (startGateway always makes a fresh one). */
async function startGatewayIn(dir: string, configPath: string): Promise<{ data: string; stop: () => Promise<void> }> {
  const { ensureBinary, baseEnv } = await import("../support/gateway.ts");
  const proc = Bun.spawn([ensureBinary(), "--config", configPath], { cwd: dir, env: baseEnv(ENV), stdout: "ignore", stderr: "pipe", stdin: "ignore" });
  const decoder = new TextDecoder();
  let pending = "";
  for await (const chunk of proc.stderr) {
    pending += decoder.decode(chunk, { stream: true });
    const line = pending.split("\n").find((l) => l.includes('"gateway started"'));
    if (line) {
      const record = JSON.parse(line);
      return {
        data: `http://${record.data}`,
        stop: async () => {
          proc.kill("SIGTERM");
          await proc.exited;
        },
      };
    }
  }
  throw new Error(`gateway did not start:\n${pending}`);
}
