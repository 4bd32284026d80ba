// Issue 22 class 7, "500, yet applied", on the built binary: when the audit entry of a mutation cannot be
// stored (here a sqlite trigger on the store refuses it, as a full or failing disk would), the mutation is
// not live and not stored either: the answer is a 500 in the admin envelope, and after a restart nothing
// of it is there. Once the audit log works again, seq continues with no gap and the chain verifies.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { json, LISTEN_ANY, startGateway, type RunningGateway } from "../support/gateway.ts";

const ENV = { GW_ADMIN: "commit-admin-token-19c4", GW_SIGNING_KEY: "commit-signing-key-0a1b2c3d4e" };
const CONFIG = `${LISTEN_ANY}store: {module: sqlite, settings: {path: ./state/gateway.db}}
security: {admin_rate_limit: {per_second: 1000, burst: 10000}}
providers:
  local: {protocol: mock}
models:
  mock-1: {provider: local}
pools:
  chat: {members: [{model: mock-1}]}
auth:
  chain: [keys]
  signing_key: {env: GW_SIGNING_KEY}
  admin_auth: [admin-tokens]
  admin_tokens: [{token: {env: GW_ADMIN}}]
`;

let gw: RunningGateway;
let dir: string;
let key: { id: string; token: string };
const call = (path: string, method = "GET", payload?: unknown) =>
  fetch(`${gw.admin}${path}`, { method, headers: { "x-admin-token": ENV.GW_ADMIN, "content-type": "application/json" }, body: payload === undefined ? undefined : JSON.stringify(payload) });
const chat = (token: string) =>
  fetch(`${gw.data}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify({ model: "chat", messages: [{ role: "user", content: "hi" }] }) });
const db = () => new Database(join(dir, "state/gateway.db"));
const overlayPath = () => join(dir, "gateway.overlay.yaml");

/** Refuses every `applied` audit entry: what a failing disk does to the append, decided by the store itself. */
function breakAudit(): void {
  const d = db();
  d.run("CREATE TRIGGER fail_audit BEFORE INSERT ON audit WHEN NEW.outcome = 'applied' BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END");
  d.close();
}
function mendAudit(): void {
  const d = db();
  d.run("DROP TRIGGER fail_audit");
  d.close();
}

beforeAll(async () => {
  // First boot: one key, one API group and one setting exist before the audit log starts failing.
  gw = await startGateway(CONFIG, { env: ENV });
  dir = gw.dir;
  key = (await json(await call("/keys", "POST", { name: "existing" }))) as { id: string; token: string };
  expect((await call("/groups", "POST", { name: "existing-group" })).status).toBe(201);
  expect((await call("/config/settings", "PUT", { per_request_fee: 0.01 })).status).toBe(200);
  await gw.stop();
  breakAudit();
  gw = await startGateway(CONFIG, { env: ENV, dir });
});
afterAll(async () => {
  await gw?.stop();
});

async function expect500(response: Response): Promise<void> {
  expect(response.status).toBe(500);
  const body = (await json(response)) as { error: { code: string; message: string } };
  expect(body.error.code).toBe("internal");
  expect(body.error.message).toBe("not applied: the change could not be stored with its audit entry (disk I/O error)");
}

describe("a mutation whose audit entry fails is not applied", () => {
  test("keys: mint, update, revoke and delete answer 500 and change nothing; the key still serves", async () => {
    const before = (await json(await call("/audit?limit=1"))).items[0].seq as number;
    await expect500(await call("/keys", "POST", { name: "never-minted" }));
    const listed = (await json(await call("/keys"))) as { items: { name: string }[] };
    expect(listed.items.map((k) => k.name)).toEqual(["existing"]);

    await expect500(await call(`/keys/${key.id}`, "PATCH", { name: "renamed", enabled: false }));
    await expect500(await call(`/keys/${key.id}/revoke`, "POST"));
    await expect500(await call(`/keys/${key.id}`, "DELETE"));
    expect(await json(await call(`/keys/${key.id}`))).toMatchObject({ name: "existing", enabled: true, state: "active" });
    expect((await chat(key.token)).status).toBe(200);
    // Each attempt is recorded as rejected (not applied), with no seq skipped by the failed entries.
    const entries = (await json(await call("/audit?limit=4"))).items.reverse() as { seq: number; action: string; outcome: string }[];
    expect(entries.map((e) => [e.seq, e.action, e.outcome])).toEqual([
      [before + 1, "key.create", "rejected"],
      [before + 2, "key.update", "rejected"],
      [before + 3, "key.revoke", "rejected"],
      [before + 4, "key.delete", "rejected"],
    ]);
  });

  test("groups: create, update and delete answer 500 and change nothing", async () => {
    await expect500(await call("/groups", "POST", { name: "never-created" }));
    expect((await call("/groups/never-created")).status).toBe(404);
    await expect500(await call("/groups/existing-group", "PATCH", { enabled: false, limits: [{ window: "minute", requests: 1 }] }));
    await expect500(await call("/groups/existing-group", "DELETE"));
    expect(await json(await call("/groups/existing-group"))).toMatchObject({ name: "existing-group", enabled: true, limits: [] });
  });

  test("config: settings, apply, rollback, reload and PUT /admin-auth answer 500; version, settings and overlay file unchanged", async () => {
    const overlay = readFileSync(overlayPath(), "utf8");
    const version = (await json(await call("/info"))).config_version as number;
    await expect500(await call("/config/settings", "PUT", { per_request_fee: 0.5, rate_card: { "mock-1": { input: 9, output: 9 } } }));
    expect((await json(await call("/config/settings"))).settings).toEqual({ per_request_fee: 0.01 });
    expect(readFileSync(overlayPath(), "utf8")).toBe(overlay);
    expect(existsSync(`${overlayPath()}.${gw.proc.pid}.tmp`)).toBe(false);
    await expect500(await call("/config/apply", "POST", { yaml: readFileSync(join(dir, "gateway.test.yaml"), "utf8").replace("mock-1: {provider: local}", "mock-1: {provider: local}\n  mock-2: {provider: local}") }));
    await expect500(await call("/config/rollback", "POST", { version }));
    await expect500(await call("/config/reload", "POST"));
    await expect500(await call("/admin-auth", "PUT", { modules: ["admin-tokens"] }));
    expect((await json(await call("/info"))).config_version).toBe(version);
    expect((await json(await call("/config/versions"))).items.map((v: { version: number }) => v.version)).toEqual([version]);
  });

  test("a mint that provisions its group answers 500 (not 400), and neither the group nor the key exists", async () => {
    await expect500(await call("/keys", "POST", { name: "provisioning", group: "new-leaf", parent: "existing-group" }));
    expect((await call("/groups/new-leaf")).status).toBe(404);
    expect((await json(await call("/keys"))).items.map((k: { name: string }) => k.name)).toEqual(["existing"]);
  });

  test("keys: each PATCH member alone answers 500 and none is live; the key serves as before", async () => {
    const members = [{ name: "renamed" }, { enabled: false }, { allowed_pools: [] }, { labels: { team: "x" } }, { group: "existing-group" }, { allowed_pools: null, labels: null, group: null }];
    for (const member of members) await expect500(await call(`/keys/${key.id}`, "PATCH", member));
    expect(await json(await call(`/keys/${key.id}`))).toMatchObject({ name: "existing", enabled: true, allowed_pools: null, group: null, labels: {}, state: "active" });
    expect((await chat(key.token)).status).toBe(200);
    const entries = (await json(await call(`/audit?limit=${members.length}`))).items as { action: string; outcome: string }[];
    expect(entries.every((e) => e.action === "key.update" && e.outcome === "rejected")).toBe(true);
  });

  test("POST /auth/cache/flush and POST /restart answer 500 in the envelope; the process does not restart", async () => {
    const started = (await json(await call("/info"))).started_at;
    await expect500(await call("/auth/cache/flush", "POST"));
    await expect500(await call("/restart", "POST"));
    await Bun.sleep(300);
    expect(gw.proc.exitCode).toBeNull();
    expect((await json(await call("/info"))).started_at).toBe(started);
    const entries = (await json(await call("/audit?limit=2"))).items.reverse() as { action: string; outcome: string }[];
    expect(entries.map((e) => [e.action, e.outcome])).toEqual([
      ["auth.cache_flush", "rejected"],
      ["gateway.restart", "rejected"],
    ]);
    expect(gw.logs.some((line) => line.includes("unhandled error"))).toBe(false);
  });

  test("a config apply that would remove the serving pool answers 500 and the data plane still serves it", async () => {
    const yaml = readFileSync(join(dir, "gateway.test.yaml"), "utf8").replace("chat: {members: [{model: mock-1}]}", "other: {members: [{model: mock-1}]}");
    expect(yaml).toContain("other: {members");
    await expect500(await call("/config/apply", "POST", { yaml }));
    expect((await chat(key.token)).status).toBe(200);
  });

  test("a refused mutation is still audited as rejected while applied entries fail", async () => {
    const before = (await json(await call("/audit?limit=1"))).items[0].seq as number;
    expect((await call("/groups", "POST", { name: "existing-group" })).status).toBe(409);
    expect((await json(await call("/audit?limit=1"))).items[0]).toMatchObject({ seq: before + 1, action: "group.create", outcome: "rejected" });
  });

  test("mended: the next change gets the next seq, the chain verifies, and a restart shows none of the failed changes", async () => {
    mendAudit();
    const before = (await json(await call("/audit?limit=1"))).items[0].seq as number;
    expect((await call("/groups", "POST", { name: "after-mend" })).status).toBe(201);
    expect((await json(await call("/audit?limit=1"))).items[0]).toMatchObject({ seq: before + 1, action: "group.create", outcome: "applied" });
    expect(await json(await call("/audit/verify"))).toMatchObject({ ok: true });
    await gw.stop();
    gw = await startGateway(CONFIG, { env: ENV, dir });
    expect((await json(await call("/keys"))).items.map((k: { name: string }) => k.name)).toEqual(["existing"]);
    expect((await json(await call("/groups"))).items.map((g: { name: string }) => g.name).sort()).toEqual(["after-mend", "existing-group"]);
    expect((await json(await call("/config/settings"))).settings).toEqual({ per_request_fee: 0.01 });
    expect((await chat(key.token)).status).toBe(200);
    const d = db();
    expect(d.query("SELECT name, revoked_at, deleted_at FROM keys").all()).toEqual([{ name: "existing", revoked_at: null, deleted_at: null }]);
    d.close();
  });
});

describe("a mutation whose own store write fails leaves no applied entry", () => {
  test("keys and groups tables refusing writes: 500, nothing live, each attempt rejected, the chain intact", async () => {
    const d = db();
    for (const [table, op] of [["keys", "INSERT"], ["keys", "UPDATE"], ["groups", "INSERT"], ["groups", "UPDATE"], ["groups", "DELETE"]]) {
      d.run(`CREATE TRIGGER fail_${table}_${op} BEFORE ${op} ON ${table} BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END`);
    }
    d.close();
    const before = (await json(await call("/audit?limit=1"))).items[0].seq as number;
    await expect500(await call("/keys", "POST", { name: "never-minted" }));
    await expect500(await call(`/keys/${key.id}`, "PATCH", { enabled: false }));
    await expect500(await call(`/keys/${key.id}/revoke`, "POST"));
    await expect500(await call(`/keys/${key.id}`, "DELETE"));
    await expect500(await call("/groups", "POST", { name: "never-created" }));
    await expect500(await call("/groups/existing-group", "PATCH", { enabled: false }));
    await expect500(await call("/groups/existing-group", "DELETE"));
    expect((await chat(key.token)).status).toBe(200);
    expect((await json(await call("/keys"))).items.map((k: { name: string }) => k.name)).toEqual(["existing"]);
    expect(await json(await call("/groups/existing-group"))).toMatchObject({ enabled: true });
    expect((await call("/groups/never-created")).status).toBe(404);
    const entries = (await json(await call("/audit?limit=7"))).items as { seq: number; outcome: string }[];
    expect(entries.map((e) => e.seq)).toEqual([7, 6, 5, 4, 3, 2, 1].map((i) => before + i));
    expect(entries.every((e) => e.outcome === "rejected")).toBe(true);
    expect(await json(await call("/audit/verify"))).toMatchObject({ ok: true });
    const mended = db();
    for (const table of ["keys_INSERT", "keys_UPDATE", "groups_INSERT", "groups_UPDATE", "groups_DELETE"]) mended.run(`DROP TRIGGER fail_${table}`);
    mended.close();
  });
});

describe("an audit log that refuses every entry", () => {
  test("a refused mutation still answers its own 400, 404 or 409 (logged, not a 500); an applied one is the 500", async () => {
    const d = db();
    d.run("CREATE TRIGGER fail_every_audit BEFORE INSERT ON audit BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END");
    d.close();
    const before = (await json(await call("/audit?limit=1"))).items[0].seq as number;
    expect((await call("/keys", "POST", { name: 5 })).status).toBe(400);
    expect((await call("/groups", "POST", { name: "existing-group" })).status).toBe(409);
    expect((await call("/keys/key_nope", "DELETE")).status).toBe(404);
    expect((await call("/keys", "POST", "not an object")).status).toBe(400);
    await expect500(await call("/groups", "POST", { name: "never-created" }));
    expect(gw.logs.some((line) => line.includes("unhandled error"))).toBe(false);
    expect(gw.logs.some((line) => line.includes("could not store the audit entry of a refused attempt"))).toBe(true);
    const mended = db();
    mended.run("DROP TRIGGER fail_every_audit");
    mended.close();
    expect((await call("/groups", "POST", { name: "after-every" })).status).toBe(201);
    expect((await json(await call("/audit?limit=1"))).items[0]).toMatchObject({ seq: before + 1, outcome: "applied" });
  });
});
