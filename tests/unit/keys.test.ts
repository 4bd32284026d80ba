// Virtual keys below the HTTP layer: the token's wire form, the registry's admission rule, the POST
// /keys and PATCH bodies, the key list's pages, the mint rules through a GroupResolver, and the audit chain.
import { describe, expect, test } from "bun:test";
import { CredentialCache } from "../../src/auth/credential-cache.ts";
import { DEFAULT_KEY_TTL_SECS, encodeKeyCursor, parseCreateKeyReq, parseKeyListQuery, parseUpdateKeyReq } from "../../src/admin/key-requests.ts";
import { Secret } from "../../src/config/secret.ts";
import { AuditLog, auditHash } from "../../src/governance/audit.ts";
import { KeyRegistry, keyState } from "../../src/governance/key-registry.ts";
import { KeyService } from "../../src/governance/keys.ts";
import { awsCredential, mintToken, tokenHash, verifyToken } from "../../src/governance/token.ts";
import type { AuditRecord, GroupResolver, MintGroupResult } from "../../src/governance/types.ts";
import { GatewayError } from "../../src/http/errors.ts";
import { SqliteAuditStore } from "../../src/store/audit.ts";
import { SqliteKeyStore, type KeyRecord } from "../../src/store/keys.ts";
import { SqliteStore } from "../../src/store/sqlite.ts";
import { recordingSink } from "../support/audit-sink.ts";

const KEY = "unit-signing-key";
const NOW = 1_800_000_000;

describe("token", () => {
  const claims = { kid: "key_1", sub: "alice", exp: NOW + 60 };

  test("round trip: the claims come back under the same key", () => {
    const token = mintToken(claims, KEY);
    expect(token).toStartWith("gwk_");
    expect(verifyToken(token, KEY, NOW)).toEqual({ ok: true, claims });
  });

  test("a changed payload, signature or signing key is refused", () => {
    const token = mintToken(claims, KEY);
    const [payload, mac] = token.slice(4).split(".") as [string, string];
    const forged = Buffer.from(JSON.stringify({ v: 1, kid: "key_2", sub: "alice", exp: NOW + 60 })).toString("base64url");
    expect(verifyToken(`gwk_${forged}.${mac}`, KEY, NOW)).toEqual({ ok: false, reason: "signature" });
    expect(verifyToken(`gwk_${payload}.${mac.slice(0, -1)}${mac.endsWith("A") ? "B" : "A"}`, KEY, NOW)).toEqual({ ok: false, reason: "signature" });
    expect(verifyToken(token, "another-key", NOW)).toEqual({ ok: false, reason: "signature" });
  });

  test("one spelling per signature: the spare bits of the last base64url character must be zero", () => {
    const token = mintToken(claims, KEY);
    const last = token.at(-1)!;
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    // 32 bytes are 43 characters: the last carries 4 bits and 2 spare ones; setting a spare bit decodes alike.
    const sibling = alphabet[alphabet.indexOf(last) ^ 1]!;
    const respelled = `${token.slice(0, -1)}${sibling}`;
    expect(Buffer.from(respelled.slice(respelled.lastIndexOf(".") + 1), "base64url")).toEqual(Buffer.from(token.slice(token.lastIndexOf(".") + 1), "base64url"));
    expect(verifyToken(respelled, KEY, NOW)).toEqual({ ok: false, reason: "signature" });
  });

  test("expiry: valid until exp, refused from it", () => {
    const token = mintToken(claims, KEY);
    expect(verifyToken(token, KEY, claims.exp - 1).ok).toBe(true);
    expect(verifyToken(token, KEY, claims.exp)).toEqual({ ok: false, reason: "expired" });
  });

  test("the prefix is required; a prefixed non-token is malformed", () => {
    const token = mintToken(claims, KEY);
    expect(verifyToken(token.slice(4), KEY, NOW)).toEqual({ ok: false, reason: "prefix" });
    expect(verifyToken("gwk_nodot", KEY, NOW)).toEqual({ ok: false, reason: "malformed" });
  });

  test("the AWS pair is a function of the signing key and key id", () => {
    const pair = awsCredential("key_1", KEY);
    expect(pair).toEqual(awsCredential("key_1", KEY));
    expect(pair.accessKeyId).toMatch(/^[A-Z0-9]{20}$/);
    expect(awsCredential("key_2", KEY).secretAccessKey).not.toBe(pair.secretAccessKey);
    expect(awsCredential("key_1", "other").secretAccessKey).not.toBe(pair.secretAccessKey);
  });
});

const record = (overrides: Partial<KeyRecord> = {}): KeyRecord => ({
  id: "key_1",
  name: "k",
  subject: "k",
  tokenHash: "h",
  allowedPools: null,
  group: null,
  labels: {},
  enabled: true,
  createdAt: NOW,
  expiresAt: NOW + 100,
  revokedAt: null,
  deletedAt: null,
  awsAccessKeyId: null,
  ...overrides,
});

describe("registry", () => {
  test("admits only an active, unexpired key, with its group, pools and labels", () => {
    const registry = new KeyRegistry();
    registry.put(record({ group: "eng", allowedPools: ["chat"], labels: { team: "ml" } }));
    expect(registry.admit("key_1", NOW)).toEqual({ id: "key_1", module: "keys", group: "eng", allowedPools: ["chat"], labels: { team: "ml" } });
    expect(registry.admit("key_1", NOW + 100)).toBeUndefined();
    expect(registry.admit("key_unknown", NOW)).toBeUndefined();
    for (const change of [{ enabled: false }, { revokedAt: NOW }, { deletedAt: NOW }]) {
      registry.put(record(change));
      expect(registry.admit("key_1", NOW)).toBeUndefined();
    }
    registry.put(record());
    expect(registry.admit("key_1", NOW)?.id).toBe("key_1");
  });

  test("state is derived: tombstoned over revoked over disabled", () => {
    expect(keyState(record())).toBe("active");
    expect(keyState(record({ enabled: false }))).toBe("disabled");
    expect(keyState(record({ enabled: false, revokedAt: 1 }))).toBe("revoked");
    expect(keyState(record({ revokedAt: 1, deletedAt: 2 }))).toBe("tombstoned");
  });

  test("finds a key by its AWS access key id", () => {
    const registry = new KeyRegistry();
    registry.load([record({ awsAccessKeyId: "GWKA1" }), record({ id: "key_2" })]);
    expect(registry.idByAccessKey("GWKA1")).toBe("key_1");
    expect(registry.idByAccessKey("GWKA2")).toBeUndefined();
    expect(registry.size).toBe(2);
  });
});

describe("CreateKeyReq", () => {
  test("defaults: all pools, no group, a year's TTL, no labels", () => {
    expect(parseCreateKeyReq({ name: "a" }, NOW)).toEqual({
      ok: true,
      value: { name: "a", allowedPools: null, expiresAt: NOW + DEFAULT_KEY_TTL_SECS, group: null, parent: null, issueAwsCredential: false, labels: {} },
    });
    expect(DEFAULT_KEY_TTL_SECS).toBe(365 * 86400);
  });

  test("expires_in and expires_at resolve to an instant; parent is ignored without group", () => {
    const parsed = parseCreateKeyReq({ name: "a", expires_in: "12h", parent: "eng", allowed_pools: [] }, NOW);
    expect(parsed.ok && parsed.value).toMatchObject({ expiresAt: NOW + 43200, parent: null, allowedPools: [] });
    const at = parseCreateKeyReq({ name: "a", expires_at: NOW + 5, group: "g", parent: "eng" }, NOW);
    expect(at.ok && at.value).toMatchObject({ expiresAt: NOW + 5, group: "g", parent: "eng" });
  });

  test.each([
    [{ name: "a", rpm_limit: 1, tpm_limit: 2 }, "/rpm_limit, /tpm_limit: removed"],
    [{ name: "a", budget_period: null }, "/budget_period: removed"],
    [{ name: "a", extra: 1 }, "/extra: unknown member"],
    [{ name: "a", expires_at: NOW + 10, expires_in: "1d" }, "not both"],
    [{ name: "a", expires_at: NOW }, "not in the future"],
    [{ name: "a", expires_in: "0s" }, "longer than zero"],
    [{ name: "a", expires_in: "1w" }, "/expires_in"],
    [{ name: "a", labels: { a: 1 } }, "/labels/a"],
    [{ name: "" }, "/name"],
    [[], "must be a JSON object"],
  ])("%j is refused: %s", (body, message) => {
    const parsed = parseCreateKeyReq(body, NOW);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.message).toContain(message);
  });

  test("PATCH: absent keeps, null clears, name and enabled cannot be cleared", () => {
    expect(parseUpdateKeyReq({})).toEqual({ ok: true, value: {} });
    expect(parseUpdateKeyReq({ labels: null, allowed_pools: null, group: null })).toEqual({ ok: true, value: { labels: {}, allowedPools: null, group: null } });
    for (const body of [{ name: null }, { enabled: null }, { token: "x" }]) expect(parseUpdateKeyReq(body).ok).toBe(false);
  });
});

describe("pagination", () => {
  test("limit bounds, cursor round trip and include", () => {
    expect(parseKeyListQuery({})).toEqual({ ok: true, value: { limit: 50, after: undefined, includeTombstoned: false } });
    for (const limit of ["0", "501", "x", "1.5"]) expect(parseKeyListQuery({ limit }).ok).toBe(false);
    expect(parseKeyListQuery({ cursor: "garbage" }).ok).toBe(false);
    expect(parseKeyListQuery({ include: "everything" }).ok).toBe(false);
    const cursor = encodeKeyCursor({ createdAt: NOW, id: "key_9" });
    expect(parseKeyListQuery({ cursor, limit: "500", include: "tombstoned" })).toEqual({ ok: true, value: { limit: 500, after: { createdAt: NOW, id: "key_9" }, includeTombstoned: true } });
  });

  test("the registry lists from memory in (created_at, id) order: loaded unsorted, added, changed in place", () => {
    const registry = new KeyRegistry();
    const rec = (id: string, createdAt: number, over: Partial<KeyRecord> = {}): KeyRecord => ({ id, name: id, subject: id, tokenHash: "h", allowedPools: null, group: null, labels: {}, enabled: true, createdAt, expiresAt: NOW + 60, revokedAt: null, deletedAt: null, awsAccessKeyId: null, ...over });
    registry.load([rec("key_c", 20), rec("key_a", 10), rec("key_b", 20), rec("key_gone", 15, { deletedAt: 16 })]);
    registry.put(rec("key_0", 5));
    registry.put(rec("key_d", 20));
    registry.put(rec("key_b", 20, { name: "renamed" }));
    const ids = (records: KeyRecord[]) => records.map((r) => r.id);
    expect(ids(registry.page(100, undefined, true))).toEqual(["key_0", "key_a", "key_gone", "key_b", "key_c", "key_d"]);
    expect(ids(registry.page(100, undefined, false))).toEqual(["key_0", "key_a", "key_b", "key_c", "key_d"]);
    expect(registry.page(100, undefined, false).find((r) => r.id === "key_b")!.name).toBe("renamed");
    expect(ids(registry.page(2, { createdAt: 15, id: "key_gone" }, false))).toEqual(["key_b", "key_c"]);
    expect(ids(registry.page(10, { createdAt: 20, id: "key_d" }, true))).toEqual([]);
  });

  test("pages walk every key once in (created_at, id) order, also while keys are added", async () => {
    const { service, registry } = serviceOver();
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await service.create(newKey(`k${i}`), "admin")).record.id);
    const seen: string[] = [];
    let page = await service.page(3, undefined, false);
    seen.push(...page.items.map((r) => r.id));
    ids.push((await service.create(newKey("late"), "admin")).record.id);
    while (page.next) {
      page = await service.page(3, page.next, false);
      seen.push(...page.items.map((r) => r.id));
    }
    expect(seen).toEqual(ids);
    await service.remove(ids[0]!, "admin");
    expect((await service.page(100, undefined, false)).items.map((r) => r.id)).not.toContain(ids[0]!);
    expect((await service.page(100, undefined, true)).items.map((r) => r.id)).toContain(ids[0]!);
    expect(registry.get(ids[0]!)?.tokenHash).toBe("");
  });

  test("refresh reloads the named keys from the store into the registry (another replica changed them)", async () => {
    const { service, registry, store } = serviceOver();
    const minted = await service.create(newKey("elsewhere"), "admin");
    // Changed in the store behind this registry's back, as another replica's revoke would be.
    store.update({ ...minted.record, revokedAt: NOW + 5 });
    expect(keyState(registry.get(minted.record.id)!)).toBe("active");
    await service.refresh([minted.record.id, "key_unknown"]);
    expect(keyState(registry.get(minted.record.id)!)).toBe("revoked");
    expect(registry.get("key_unknown")).toBeUndefined();
  });
});

/** A small real GroupResolver over a fixed set of groups, with the spec's mint rules. */
class FixedGroups implements GroupResolver {
  readonly parents = new Map<string, string | null>([
    ["eng", null],
    ["eng-alice", "eng"],
  ]);
  exists(name: string): boolean {
    return this.parents.has(name);
  }
  async resolveForMint(group: string, parent: string | null): Promise<MintGroupResult> {
    if (this.parents.has(group)) {
      if (parent !== null && this.parents.get(group) !== parent) return { ok: false, code: "conflict", message: `group ${group} has another parent` };
      return { ok: true, provisioned: false };
    }
    if (parent === null) return { ok: false, code: "invalid_request", message: `group ${group} does not exist` };
    if (!this.parents.has(parent)) return { ok: false, code: "invalid_request", message: `parent ${parent} does not exist` };
    this.parents.set(group, parent);
    return { ok: true, provisioned: true };
  }
}

const newKey = (name: string, extra: Partial<ReturnType<typeof baseKey>> = {}) => ({ ...baseKey(name), ...extra });
const baseKey = (name: string) => ({ name, allowedPools: null as string[] | null, expiresAt: NOW + 1000, group: null as string | null, parent: null as string | null, issueAwsCredential: false, labels: {} });

function serviceOver(groups?: GroupResolver) {
  const database = SqliteStore.open(":memory:").database;
  const records: AuditRecord[] = [];
  const registry = new KeyRegistry();
  let clock = NOW * 1000;
  const store = new SqliteKeyStore(database);
  const service = new KeyService({
    store,
    registry,
    audit: recordingSink(records),
    groups,
    signingKey: () => new Secret(KEY, "test"),
    // Each mint a second later, so the listing order is the mint order.
    now: () => (clock += 1000),
  });
  return { service, registry, records, database, store };
}

async function refusal(promise: Promise<unknown>): Promise<GatewayError> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(GatewayError);
  return error as GatewayError;
}

describe("mint rules and mutations", () => {
  test("bind existing, 400 without parent, 409 on a parent mismatch, provision under a parent", async () => {
    const { service, records } = serviceOver(new FixedGroups());
    expect((await service.create(newKey("a", { group: "eng-alice" }), "admin")).groupProvisioned).toBe(false);
    expect((await service.create(newKey("b", { group: "eng-alice", parent: "eng" }), "admin")).record.group).toBe("eng-alice");
    expect((await refusal(service.create(newKey("c", { group: "eng-bob" }), "admin"))).status).toBe(400);
    expect((await refusal(service.create(newKey("d", { group: "eng-alice", parent: "ops" }), "admin"))).status).toBe(409);
    const provisioned = await service.create(newKey("e", { group: "eng-bob", parent: "eng" }), "admin");
    expect(provisioned.groupProvisioned).toBe(true);
    expect(records.map((r) => r.outcome)).toEqual(["applied", "applied", "rejected", "rejected", "applied"]);
  });

  test("without a group resolver, naming a group is 400; no group is unlimited", async () => {
    const { service, registry } = serviceOver();
    expect((await refusal(service.create(newKey("a", { group: "eng" }), "admin"))).code).toBe("invalid_request");
    const minted = await service.create(newKey("b"), "admin");
    expect(registry.admit(minted.record.id, NOW)?.group).toBeNull();
  });

  test("the store keeps the token's hash, never the token; the registry follows each mutation", async () => {
    const { service, registry, database } = serviceOver();
    const minted = await service.create(newKey("a", { issueAwsCredential: true }), "admin");
    const row = JSON.stringify(database.query("SELECT * FROM keys").all());
    expect(row).not.toContain(minted.token);
    expect(row).not.toContain(minted.aws!.secretAccessKey);
    expect(row).toContain(tokenHash(minted.token));
    const id = minted.record.id;
    await service.update(id, { enabled: false }, "admin");
    expect(registry.admit(id, NOW)).toBeUndefined();
    await service.update(id, { enabled: true }, "admin");
    expect(registry.admit(id, NOW)).toBeDefined();
    await service.revoke(id, "admin");
    expect(registry.admit(id, NOW)).toBeUndefined();
    expect((await refusal(service.update(id, { name: "x" }, "admin"))).status).toBe(409);
    expect((await service.revoke(id, "admin")).revokedAt).not.toBeNull();
    await service.remove(id, "admin");
    expect((await refusal(service.remove(id, "admin"))).status).toBe(404);
  });
});

describe("audit log", () => {
  test("a hash chain that continues across restarts", async () => {
    const database = SqliteStore.open(":memory:").database;
    const store = new SqliteAuditStore(database);
    const first = new AuditLog(store, () => NOW * 1000);
    await Promise.all([first.record({ action: "key.create", resource: "key:a", outcome: "applied", principal: "admin" }), first.record({ action: "key.revoke", resource: "key:a", outcome: "applied", principal: "admin" })]);
    await new AuditLog(store, () => NOW * 1000).record({ action: "key.delete", resource: "key:a", outcome: "rejected", principal: "anonymous" });
    const entries = (await store.page(10)).reverse();
    expect(entries.map((e) => [e.seq, e.action])).toEqual([[1, "key.create"], [2, "key.revoke"], [3, "key.delete"]]);
    expect(entries[0]!.prev_hash).toBe("");
    for (const [i, e] of entries.entries()) {
      expect(e.hash).toBe(auditHash(e));
      if (i > 0) expect(e.prev_hash).toBe(entries[i - 1]!.hash);
    }
    expect(auditHash({ prev_hash: "", seq: 1, ts: 5, action: "a.b", resource: "r", outcome: "applied", principal: "admin" })).toBe(new Bun.CryptoHasher("sha256").update("|1|5|a.b|r|applied|admin").digest("hex"));
  });
});

describe("credential cache", () => {
  test("bounded per module, flushed per module, renewed with the snapshot", () => {
    const cache = new CredentialCache(2);
    const generation = {};
    cache.set("keys", "a", 1, generation);
    cache.set("keys", "b", 2, generation);
    cache.set("keys", "c", 3, generation);
    cache.set("tokens", "t", 4, generation);
    expect(cache.get("keys", "a", generation)).toBeUndefined();
    expect(cache.get("keys", "c", generation)).toBe(3);
    expect(cache.flush("tokens")).toBe(1);
    expect(cache.get("keys", "b", {})).toBeUndefined();
    expect(cache.flush()).toBe(0);
  });
});
