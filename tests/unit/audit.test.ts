// The audit log's commit (a change and its entry together or not at all) and its head anchor, over a
// real sqlite store in a temporary directory.
import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../support/temp.ts";
import { AuditLog, auditHash, verifyAudit } from "../../src/governance/audit.ts";
import { auditHeadPath, headText, readHead } from "../../src/store/audit-head.ts";
import { SqliteAuditStore } from "../../src/store/audit.ts";
import { SqliteStore } from "../../src/store/sqlite.ts";

const NOW = 1_800_000_000_000;

function fresh() {
  const path = join(tempDir("gw-audit-"), "gateway.db");
  const store = SqliteStore.open(path);
  const audit = new SqliteAuditStore(store.database, auditHeadPath(path));
  return { path, store, audit, log: new AuditLog(audit, () => NOW) };
}
const attempt = { action: "thing.create", resource: "thing:a", principal: "admin" };

describe("commit", () => {
  test("a write that fails inside the transaction stores neither it nor its entry; memory is untouched and no seq is lost", async () => {
    const { store, log, audit } = fresh();
    store.database.run("CREATE TABLE things (id TEXT PRIMARY KEY)");
    let applied = 0;
    const failing = log.commit(attempt, () => ({
      write: () => {
        store.database.run("INSERT INTO things VALUES ('a')");
        throw new Error("boom");
      },
      apply: () => ++applied,
    }));
    await expect(failing).rejects.toThrow("not applied: the change could not be stored with its audit entry (boom)");
    expect(applied).toBe(0);
    expect(store.database.query("SELECT * FROM things").all()).toEqual([]);
    expect((await audit.page(10)).map((e) => [e.seq, e.outcome])).toEqual([[1, "rejected"]]);
    expect(await log.commit(attempt, () => ({ write: () => store.database.run("INSERT INTO things VALUES ('a')"), apply: () => ++applied }))).toBe(1);
    expect((await audit.page(10)).map((e) => [e.seq, e.outcome])).toEqual([[2, "applied"], [1, "rejected"]]);
    expect(await verifyAudit(audit)).toMatchObject({ ok: true, checked: 2 });
  });

  test("a plan that throws is recorded as rejected and changes nothing", async () => {
    const { log, audit } = fresh();
    await expect(log.commit(attempt, () => { throw new Error("refused"); })).rejects.toThrow("refused");
    expect((await audit.page(10)).map((e) => e.outcome)).toEqual(["rejected"]);
  });
});

describe("head anchor", () => {
  test("written after each append; a rewritten chain and a malformed anchor fail verification", async () => {
    const { path, store, log, audit } = fresh();
    await log.open();
    for (let i = 0; i < 3; i++) await log.record({ ...attempt, outcome: "applied" });
    expect(JSON.parse(readFileSync(`${path}.audit-head`, "utf8"))).toMatchObject({ seq: 3 });
    expect(await verifyAudit(audit)).toMatchObject({ ok: true, checked: 3 });

    // The newest entry replaced by a consistent forgery: its own hash is right, the anchor's is not.
    const [third] = await audit.forward(2, 1);
    const forged = { ...third!, resource: "thing:b" };
    store.database.run("DELETE FROM audit WHERE seq = 3");
    await audit.append(() => ({ ...forged, hash: auditHash(forged) }), undefined, { seq: 2, hash: forged.prev_hash });
    expect(await verifyAudit(audit)).toMatchObject({ ok: false, first_bad_seq: 3, reason: expect.stringContaining("rewritten") });

    writeFileSync(`${path}.audit-head`, "not json");
    expect(await verifyAudit(audit)).toMatchObject({ ok: false, reason: expect.stringContaining("is not a head anchor") });
  });

  test("the anchor is read as node's readFile(path, \"utf8\") read it: a leading BOM is kept (so not a head), a directory is unreadable", async () => {
    const dir = tempDir("gw-audit-head-");
    const path = join(dir, "head");
    const head = { seq: 7, hash: "a".repeat(64) };
    expect(await readHead(path)).toEqual({ state: "none" });
    writeFileSync(path, `${headText(head)}\n`);
    expect(await readHead(path)).toEqual({ state: "ok", path, head });
    writeFileSync(path, `\uFEFF${headText(head)}\n`);
    expect(await readHead(path)).toMatchObject({ state: "bad", path });
    expect(await readHead(dir)).toMatchObject({ state: "bad", path: dir });
  });

  test("the store's own record: entries removed with the anchor file, or under an older anchor, are truncation; seq continues above", async () => {
    const { path, store, log, audit } = fresh();
    await log.open();
    for (let i = 0; i < 5; i++) await log.record({ ...attempt, outcome: "applied" });
    expect(await audit.recordedHead()).toMatchObject({ state: "ok", head: { seq: 5 } });
    const older = readFileSync(`${path}.audit-head`, "utf8").replace(/"seq":5/, '"seq":2');
    store.database.run("DELETE FROM audit WHERE seq > 2");
    const [second] = await audit.forward(1, 1);
    writeFileSync(`${path}.audit-head`, older.replace(/"hash":"[0-9a-f]+"/, `"hash":"${second!.hash}"`));
    expect(await verifyAudit(audit)).toMatchObject({ ok: false, first_bad_seq: 3, reason: expect.stringContaining("meta row audit_head") });
    const reopened = new AuditLog(audit, () => NOW);
    await reopened.open();
    await reopened.record({ ...attempt, outcome: "applied" });
    expect((await audit.page(1))[0]!.seq).toBe(6);
    expect(await verifyAudit(audit)).toMatchObject({ ok: false, first_bad_seq: 6, reason: expect.stringContaining("missing") });
  });

  test("the oldest entries removed: nothing is pruned, so a chain not starting at 1 fails at entry 1", async () => {
    const { store, log, audit } = fresh();
    for (let i = 0; i < 3; i++) await log.record({ ...attempt, outcome: "applied" });
    store.database.run("DELETE FROM audit WHERE seq = 1");
    expect(await verifyAudit(audit)).toMatchObject({ ok: false, first_bad_seq: 1, checked: 0, reason: expect.stringContaining("the oldest stored entry is 2: entry 1 was removed") });
  });

  test("an entry without a credential hashes as before the member existed; with one, dropping it breaks the hash", () => {
    const old = { prev_hash: "", seq: 1, ts: 5, action: "a.b", resource: "r", outcome: "applied" as const, principal: "admin" };
    expect(auditHash({ ...old, credential: null })).toBe(new Bun.CryptoHasher("sha256").update("|1|5|a.b|r|applied|admin").digest("hex"));
    expect(auditHash({ ...old, credential: "admin-tokens:ops" })).not.toBe(auditHash(old));
  });
});
