// Issue 22 classes 9 and 2 on the built binary: the audit head anchor beside the store makes a truncated
// chain (its newest entries deleted from the sqlite file while the gateway is stopped) fail both
// verifiers and log an error at boot, and the next seq continues above the removed ones; each entry names
// which admin token acted (`credential`), without the token.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { cpSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { json, LISTEN_ANY, runGateway, startGateway, tempDir, type RunningGateway } from "../support/gateway.ts";

const ENV = { GW_OPS: "anchor-ops-token-3f2e1d", GW_CI: "anchor-ci-token-8c7b6a", GW_RO: "anchor-ro-token-5a4b3c" };
const CONFIG = `${LISTEN_ANY}store: {module: sqlite, settings: {path: ./state/gateway.db}}
security: {admin_rate_limit: {per_second: 1000, burst: 10000}}
providers:
  local: {protocol: mock}
models:
  mock-1: {provider: local}
pools:
  chat: {members: [{model: mock-1}]}
auth:
  admin_auth: [admin-tokens]
  admin_tokens: [{name: ops, token: {env: GW_OPS}}, {token: {env: GW_CI}}, {name: viewer, token: {env: GW_RO}, scope: read-only}]
`;

let gw: RunningGateway;
const as = (token: string) => (path: string, method = "GET", payload?: unknown) =>
  fetch(`${gw.admin}${path}`, { method, headers: { "x-admin-token": token, "content-type": "application/json" }, body: payload === undefined ? undefined : JSON.stringify(payload) });
const ops = as(ENV.GW_OPS);
const storePath = () => join(gw.dir, "state/gateway.db");
const verifyCli = () => runGateway(["--verify-audit", "--config", join(gw.dir, "gateway.test.yaml")], { cwd: gw.dir, env: ENV });
const newest = async () => (await json(await ops("/audit?limit=1"))).items[0] as { seq: number; action: string; credential: string | null };

beforeAll(async () => {
  gw = await startGateway(CONFIG, { env: ENV });
});
afterAll(async () => {
  await gw?.stop();
});

describe("the acting credential", () => {
  test("each entry names the admin token that acted by its config name, nothing derived from the token", async () => {
    expect((await ops("/groups", "POST", { name: "by-ops" })).status).toBe(201);
    expect((await as(ENV.GW_CI)("/groups", "POST", { name: "by-ci" })).status).toBe(201);
    expect((await as(ENV.GW_RO)("/groups", "POST", { name: "by-viewer" })).status).toBe(403);
    expect((await ops("/groups", "POST", { name: "bad name!" })).status).toBeGreaterThanOrEqual(400);
    const items = (await json(await ops("/audit?limit=4"))).items.reverse() as { action: string; outcome: string; principal: string; credential: string }[];
    expect(items.map((e) => [e.outcome, e.principal, e.credential])).toEqual([
      ["applied", "admin", "admin-tokens:ops"],
      ["applied", "admin", "admin-tokens:admin-token-1"],
      ["rejected", "admin", "admin-tokens:viewer"],
      ["rejected", "admin", "admin-tokens:ops"],
    ]);
    const text = JSON.stringify(items) + gw.logs.join("\n");
    for (const token of Object.values(ENV)) expect(text).not.toContain(token);
    expect(await json(await ops("/audit/verify"))).toMatchObject({ ok: true });
  });
});

describe("the head anchor", () => {
  test("each change logs the new head and writes the anchor beside the store", async () => {
    const head = await newest();
    const anchor = JSON.parse(readFileSync(`${storePath()}.audit-head`, "utf8"));
    expect(anchor.seq).toBe(head.seq);
    expect(gw.logs.some((line) => line.includes(`"audit head seq=${head.seq} hash=${anchor.hash}"`))).toBe(true);
  });

  test("deleting the newest entries fails both verifiers, logs an error at boot, and seq is not reused", async () => {
    for (let i = 0; i < 4; i++) expect((await ops("/groups", "POST", { name: `g${i}` })).status).toBe(201);
    const head = (await newest()).seq;
    await gw.stop();
    expect((await verifyCli()).code).toBe(0);

    const db = new Database(storePath());
    db.run("DELETE FROM audit WHERE seq > ?", [head - 2]);
    db.close();
    const cli = await verifyCli();
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain(`audit log broken at entry ${head - 1}`);
    expect(cli.stderr).toContain("truncated");

    gw = await startGateway(CONFIG, { env: ENV, dir: gw.dir });
    const boot = gw.logs.map((line) => JSON.parse(line)).find((r) => r.level === "error" && String(r.msg).includes("head anchor"));
    expect(boot).toMatchObject({ next_seq: head + 1 });
    expect(boot.reason).toContain("truncated");
    expect(await json(await ops("/audit/verify"))).toMatchObject({ ok: false, first_bad_seq: head - 1 });

    expect((await ops("/groups", "POST", { name: "after" })).status).toBe(201);
    expect(await newest()).toMatchObject({ seq: head + 1, action: "group.create" });
    // The gap stays visible after the next change moved the anchor on.
    const verdict = await json(await ops("/audit/verify"));
    expect(verdict).toMatchObject({ ok: false, first_bad_seq: head + 1 });
    expect(verdict.reason).toContain("missing");
  });

  test("a removed anchor file is reported, not taken for a store that never had one", async () => {
    await gw.stop();
    rmSync(`${storePath()}.audit-head`);
    const cli = await verifyCli();
    expect(cli.code).toBe(1);
    expect(existsSync(`${storePath()}.audit-head`)).toBe(false);
  });
});

describe("truncation variants (review of issue 22 class 9)", () => {
  let base: string;
  let top: number;
  const anchors: string[] = [];
  beforeAll(async () => {
    const first = await startGateway(CONFIG, { env: ENV });
    const call = (name: string) => fetch(`${first.admin}/groups`, { method: "POST", headers: { "x-admin-token": ENV.GW_OPS, "content-type": "application/json" }, body: JSON.stringify({ name }) });
    for (let i = 1; i <= 6; i++) {
      expect((await call(`t${i}`)).status).toBe(201);
      anchors[i] = readFileSync(join(first.dir, "state/gateway.db.audit-head"), "utf8");
    }
    top = 6;
    await first.stop();
    base = first.dir;
  });

  /** A copy of the six-entry store, tampered with by `sql` (and `files`), while no gateway runs. */
  function tampered(sql: string, files: (dir: string) => void = () => {}): string {
    const dir = tempDir();
    cpSync(base, dir, { recursive: true });
    const db = new Database(join(dir, "state/gateway.db"));
    db.run(sql);
    db.close();
    files(join(dir, "state/gateway.db.audit-head"));
    return dir;
  }
  const cliIn = (dir: string) => runGateway(["--verify-audit", "--config", join(dir, "gateway.test.yaml")], { cwd: dir, env: ENV });

  /** Both verifiers and the boot name the truncation; the next change takes a seq above every removed one. */
  async function detected(dir: string, firstBad: number): Promise<void> {
    const cli = await cliIn(dir);
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain(`audit log broken at entry ${firstBad}: the chain ends at entry ${firstBad - 1}`);
    expect(cli.stderr).toContain("truncated");
    const again = await startGateway(CONFIG, { env: ENV, dir });
    try {
      const boot = again.logs.map((line) => JSON.parse(line)).find((r) => r.level === "error" && String(r.msg).includes("head anchor"));
      expect(boot).toMatchObject({ next_seq: top + 1 });
      expect(boot.reason).toContain("truncated");
      const get = (path: string, method = "GET", payload?: unknown) =>
        fetch(`${again.admin}${path}`, { method, headers: { "x-admin-token": ENV.GW_OPS, "content-type": "application/json" }, body: payload === undefined ? undefined : JSON.stringify(payload) });
      const verdict = await json(await get("/audit/verify"));
      expect(verdict).toMatchObject({ ok: false, first_bad_seq: firstBad });
      expect(verdict.reason).toContain("truncated");
      expect((await get("/groups", "POST", { name: "after" })).status).toBe(201);
      expect((await json(await get("/audit?limit=1"))).items[0]).toMatchObject({ seq: top + 1, action: "group.create" });
      // The removed seqs stay a visible gap once the anchor has moved on.
      expect(await json(await get("/audit/verify"))).toMatchObject({ ok: false });
    } finally {
      await again.stop();
    }
    expect((await cliIn(dir)).code).toBe(1);
  }

  test("the newest entry removed", async () => {
    await detected(tampered("DELETE FROM audit WHERE seq = 6"), 6);
  });

  test("every entry removed", async () => {
    await detected(tampered("DELETE FROM audit"), 1);
  });

  test("the oldest entries removed (nothing is ever pruned): both verifiers name entry 1", async () => {
    const dir = tampered("DELETE FROM audit WHERE seq <= 2");
    const cli = await cliIn(dir);
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain("audit log broken at entry 1: the oldest stored entry is 3: entries 1 to 2 were removed from the start of the log (truncated)");
    const again = await startGateway(CONFIG, { env: ENV, dir });
    const verdict = await json(await fetch(`${again.admin}/audit/verify`, { headers: { "x-admin-token": ENV.GW_OPS } }));
    await again.stop();
    expect(verdict).toMatchObject({ ok: false, first_bad_seq: 1, checked: 0 });
  });

  test("the newest entries and the anchor file removed: seq is not reused and the gap does not heal", async () => {
    await detected(tampered("DELETE FROM audit WHERE seq > 3", (anchor) => rmSync(anchor)), 4);
  });

  test("rollback: the newest entries removed and the anchor file replaced by an older, valid one", async () => {
    await detected(tampered("DELETE FROM audit WHERE seq > 3", (anchor) => writeFileSync(anchor, anchors[3]!)), 4);
  });

  test("the anchor file alone removed, every entry kept: reported until the next change writes it again", async () => {
    const dir = tampered("SELECT 1", (anchor) => rmSync(anchor));
    const cli = await cliIn(dir);
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain("is missing");
    const again = await startGateway(CONFIG, { env: ENV, dir });
    const post = await fetch(`${again.admin}/groups`, { method: "POST", headers: { "x-admin-token": ENV.GW_OPS, "content-type": "application/json" }, body: JSON.stringify({ name: "after" }) });
    expect(post.status).toBe(201);
    await again.stop();
    expect((await cliIn(dir)).stdout).toContain(`audit log intact: ${top + 1} entries checked`);
  });
});
