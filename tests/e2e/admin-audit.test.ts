// The audit log, admin scopes, PUT /admin-auth, the admin rate limit and POST /restart on the built
// binary: every attempted mutation is recorded once with its principal and outcome, the chain verifies
// after many mutations, and GET /audit/verify and `gateway --verify-audit` catch tampering done in the
// sqlite file itself.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { json, LISTEN_ANY, runGateway, startGateway, type RunningGateway } from "../support/gateway.ts";

const ENV = { GW_ADMIN: "audit-admin-token-5e6f", GW_RO: "audit-readonly-token-7a8b", GW_SIGNING_KEY: "audit-signing-key-0011223344" };
const body = (limits = "{per_second: 1000, burst: 10000}") => `store: {module: sqlite, settings: {path: ./state/gateway.db}}
providers:
  local: {protocol: mock}
models:
  mock-1: {provider: local}
pools:
  chat: {members: [{model: mock-1}]}
security: {admin_rate_limit: ${limits}}
auth:
  chain: [keys]
  signing_key: {env: GW_SIGNING_KEY}
  admin_auth: [admin-tokens]
  admin_tokens: [{token: {env: GW_ADMIN}}, {token: {env: GW_RO}, scope: read-only}]
`;
const CONFIG = `${LISTEN_ANY}${body()}`;

let gw: RunningGateway;
beforeAll(async () => {
  gw = await startGateway(CONFIG, { env: ENV });
});
afterAll(async () => {
  await gw?.stop();
});

const as = (token: string, g?: RunningGateway) => (path: string, method = "GET", payload?: unknown, raw?: string) =>
  fetch(`${(g ?? gw).admin}${path}`, { method, headers: { "x-admin-token": token, "content-type": "application/json" }, body: raw ?? (payload === undefined ? undefined : JSON.stringify(payload)) });
const full = as(ENV.GW_ADMIN);
const readOnly = as(ENV.GW_RO);

interface Entry {
  seq: number;
  action: string;
  resource: string;
  outcome: string;
  principal: string;
  prev_hash: string;
  hash: string;
}
async function allEntries(g = gw): Promise<Entry[]> {
  const out: Entry[] = [];
  let cursor: string | null = null;
  do {
    const page = (await json(await as(ENV.GW_ADMIN, g)(`/audit?limit=7${cursor ? `&cursor=${cursor}` : ""}`))) as { items: Entry[]; next_cursor: string | null };
    out.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor);
  return out;
}

/** Every mutation endpoint of this issue and the governance one, with a body each would accept. */
const MUTATIONS: [string, string, unknown, string][] = [
  ["POST", "/keys", { name: "k" }, "key.create"],
  ["PATCH", "/keys/key_x", { name: "k2" }, "key.update"],
  ["POST", "/keys/key_x/revoke", undefined, "key.revoke"],
  ["DELETE", "/keys/key_x", undefined, "key.delete"],
  ["POST", "/groups", { name: "g" }, "group.create"],
  ["PATCH", "/groups/g", { enabled: false }, "group.update"],
  ["DELETE", "/groups/g", undefined, "group.delete"],
  ["POST", "/auth/cache/flush", {}, "auth.cache_flush"],
  ["POST", "/config/apply", { config: {} }, "config.apply"],
  ["POST", "/config/reload", undefined, "config.reload"],
  ["POST", "/config/rollback", { version: 0 }, "config.rollback"],
  ["PUT", "/config/settings", { rate_card: {} }, "config.settings"],
  ["PUT", "/admin-auth", { modules: ["admin-tokens"] }, "admin_auth.update"],
  ["POST", "/restart", undefined, "gateway.restart"],
];

describe("scopes", () => {
  test("a read-only token reads everything and is refused (403) on every mutation, each audited as rejected", async () => {
    for (const path of ["/info", "/config", "/auth", "/admin-auth", "/audit", "/audit/verify", "/keys", "/groups", "/config/versions", "/config/settings", "/usage/keys"]) {
      expect({ path, status: (await readOnly(path)).status }).toEqual({ path, status: 200 });
    }
    expect((await readOnly("/config/validate", "POST", { config: {} })).status).toBe(200);
    const before = (await allEntries()).length;
    for (const [method, path, payload, action] of MUTATIONS) {
      const refused = await readOnly(path, method, payload);
      expect({ path, status: refused.status }).toEqual({ path, status: 403 });
      expect(((await json(refused)) as { error: { code: string } }).error.code).toBe("forbidden");
      const [newest] = await allEntries();
      expect({ path, entry: newest }).toMatchObject({ path, entry: { action, outcome: "rejected", principal: "admin" } });
    }
    expect((await allEntries()).length).toBe(before + MUTATIONS.length);
  });

  test("no credential is 401 and is not audited; the token works as Bearer too", async () => {
    const before = (await allEntries()).length;
    expect((await fetch(`${gw.admin}/keys`, { method: "POST", body: "{}" })).status).toBe(401);
    expect((await fetch(`${gw.admin}/info`, { headers: { authorization: `Bearer ${ENV.GW_ADMIN}` } })).status).toBe(200);
    expect((await allEntries()).length).toBe(before);
  });
});

describe("audit log", () => {
  test("every attempted mutation is recorded once, applied or rejected, including bodies that never parsed", async () => {
    const before = await allEntries();
    const created = (await json(await full("/keys", "POST", { name: "audited" }))) as { id: string };
    await full(`/keys/${created.id}`, "PATCH", { name: "renamed" });
    await full("/keys", "POST", undefined, "{not json");
    await full("/groups", "POST", { name: "team-a" });
    await full("/groups", "POST", { name: "team-a" });
    await full("/config/settings", "PUT", { observability: {} });
    await full("/config/settings", "PUT", { rate_card: { "mock-1": { input: 1, output: 1 } } });
    const after = await allEntries();
    const added = after.slice(0, after.length - before.length).reverse();
    expect(added.map((e) => [e.action, e.outcome])).toEqual([
      ["key.create", "applied"],
      ["key.update", "applied"],
      ["key.create", "rejected"],
      ["group.create", "applied"],
      ["group.create", "rejected"],
      ["config.settings", "rejected"],
      ["config.settings", "applied"],
    ]);
    expect(added[0]!.resource).toBe(`key:${created.id}`);
    expect(added.every((e) => e.principal === "admin")).toBe(true);
    // The chain: each entry links to the one before it.
    for (let i = 1; i < after.length; i++) expect(after[i - 1]!.prev_hash).toBe(after[i]!.hash);
    expect(after.at(-1)!.seq).toBe(1);
    expect(after.at(-1)!.prev_hash).toBe("");
  });

  test("pages: limit bounds and a foreign cursor are 400", async () => {
    expect((await full("/audit?limit=0")).status).toBe(400);
    expect((await full("/audit?limit=501")).status).toBe(400);
    expect((await full("/audit?cursor=nope")).status).toBe(400);
    const first = (await json(await full("/audit?limit=2"))) as { items: Entry[]; next_cursor: string };
    const second = (await json(await full(`/audit?limit=2&cursor=${first.next_cursor}`))) as { items: Entry[] };
    expect(second.items[0]!.seq).toBe(first.items[1]!.seq - 1);
  });

  test("the verifier catches an altered, a reordered and a deleted entry in the sqlite file", async () => {
    const own = await startGateway(CONFIG, { env: ENV });
    const call = as(ENV.GW_ADMIN, own);
    for (let i = 0; i < 12; i++) await call("/groups", "POST", { name: `g${i}` });
    await call("/config/settings", "PUT", { per_request_fee: 0.01 });
    const intact = (await json(await call("/audit/verify"))) as Record<string, unknown>;
    expect(intact).toEqual({ ok: true, checked: 13, first_bad_seq: null, reason: null });
    await own.stop();
    const configPath = join(own.dir, "gateway.test.yaml");
    const verifyCli = () => runGateway(["--verify-audit", "--config", configPath], { cwd: own.dir, env: ENV });
    const ok = await verifyCli();
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain("13 entries");

    const dbPath = join(own.dir, "state/gateway.db");
    const tamper = (sql: string) => {
      const db = new Database(dbPath);
      db.run(sql);
      db.close();
    };
    const snapshot = () => {
      const db = new Database(dbPath);
      const rows = db.query("SELECT * FROM audit ORDER BY seq").all() as Record<string, unknown>[];
      db.close();
      return rows;
    };
    const restore = (rows: Record<string, unknown>[]) => {
      const db = new Database(dbPath);
      db.run("DELETE FROM audit");
      for (const r of rows) db.query("INSERT INTO audit (seq, ts, action, resource, outcome, principal, credential, prev_hash, hash) VALUES ($seq, $ts, $action, $resource, $outcome, $principal, $credential, $prev_hash, $hash)").run(r as never);
      db.close();
    };
    const original = snapshot();

    tamper("UPDATE audit SET principal = 'someone-else' WHERE seq = 5");
    let broken = await verifyCli();
    expect(broken.code).toBe(1);
    expect(broken.stderr).toContain("entry 5");
    restore(original);

    // Reordered: entries 6 and 7 trade places (their seqs swapped with them).
    const six = original[5]!;
    const seven = original[6]!;
    restore(original.map((r) => (r.seq === 6 ? { ...seven, seq: 6 } : r.seq === 7 ? { ...six, seq: 7 } : r)));
    broken = await verifyCli();
    expect(broken.code).toBe(1);
    expect(broken.stderr).toContain("entry 6");
    restore(original);

    tamper("DELETE FROM audit WHERE seq = 9");
    broken = await verifyCli();
    expect(broken.code).toBe(1);
    expect(broken.stderr).toContain("entry 10");

    // The running gateway's own endpoint sees the same break.
    const again = await startGateway(CONFIG, { env: ENV, dir: own.dir });
    try {
      const verdict = (await json(await as(ENV.GW_ADMIN, again)("/audit/verify"))) as { ok: boolean; first_bad_seq: number; reason: string };
      expect(verdict).toMatchObject({ ok: false, first_bad_seq: 10 });
      expect(verdict.reason).toContain("missing");
    } finally {
      await again.stop();
    }
  });
});

describe("PUT /admin-auth", () => {
  test("unknown modules, an unconfirmed open plane and malformed bodies are 400; a good chain is a new config version", async () => {
    expect((await full("/admin-auth", "PUT", { modules: ["nope"] })).status).toBe(400);
    expect((await full("/admin-auth", "PUT", { modules: [] })).status).toBe(400);
    expect((await full("/admin-auth", "PUT", { modules: "admin-tokens" })).status).toBe(400);
    expect((await full("/admin-auth", "PUT", { modules: ["admin-tokens"], extra: 1 })).status).toBe(400);
    const info = (await json(await full("/info"))) as { config_version: number };
    expect((await full("/admin-auth", "PUT", { modules: ["admin-tokens"], expected_version: info.config_version + 5 })).status).toBe(409);
    const put = await full("/admin-auth", "PUT", { modules: ["admin-tokens"], expected_version: info.config_version });
    expect(put.status).toBe(200);
    expect(await json(put)).toMatchObject({ configured: true, modules: ["admin-tokens"], applied: true, config_version: info.config_version + 1 });
  });

  test("allow_open opens the admin plane: anonymous, full authority, audited as anonymous", async () => {
    const own = await startGateway(CONFIG, { env: ENV });
    try {
      const opened = await as(ENV.GW_ADMIN, own)("/admin-auth", "PUT", { modules: [], allow_open: true });
      expect(await json(opened)).toMatchObject({ configured: false, modules: [], applied: true });
      // Key and group endpoints stay shut to the open posture on a governance deployment (spec "Admin plane" 7).
      expect((await fetch(`${own.admin}/groups`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "anon" }) })).status).toBe(401);
      const anonymous = await fetch(`${own.admin}/config/settings`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ per_request_fee: 0.5 }) });
      expect(anonymous.status).toBe(200);
      const [newest] = await allEntries(own);
      expect(newest).toMatchObject({ action: "config.settings", principal: "anonymous", outcome: "applied" });
    } finally {
      await own.stop();
    }
  });
});

describe("admin rate limit", () => {
  test("past the burst a source address gets 429 rate_limited with Retry-After; data-plane traffic is not limited", async () => {
    const own = await startGateway(`${LISTEN_ANY}${body("{per_second: 1, burst: 5}")}`, { env: ENV });
    try {
      const statuses: number[] = [];
      let limited: Response | undefined;
      for (let i = 0; i < 8; i++) {
        const r = await as(ENV.GW_ADMIN, own)("/info");
        statuses.push(r.status);
        if (r.status === 429) limited ??= r;
      }
      expect(statuses.slice(0, 5)).toEqual([200, 200, 200, 200, 200]);
      expect(statuses.slice(5)).toContain(429);
      expect(limited!.headers.get("retry-after")).toMatch(/^[0-9]+$/);
      expect(((await json(limited!)) as { error: { code: string } }).error.code).toBe("rate_limited");
    } finally {
      await own.stop();
    }
  });
});

describe("POST /restart", () => {
  test("202, then the process comes back on the same ports with restart-only settings applied", async () => {
    const ports: number[] = [];
    for (let i = 0; i < 3; i++) {
      const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
      ports.push(probe.port!);
      probe.stop(true);
    }
    const [data, adminPort, moved] = ports as [number, number, number];
    const own = await startGateway(`listen: 127.0.0.1:${data}\nadmin_listen: 127.0.0.1:${adminPort}\n${body()}`, { env: ENV });
    try {
      const put = await as(ENV.GW_ADMIN, own)("/config/settings", "PUT", { listen: `127.0.0.1:${moved}` });
      expect(((await json(put)) as { reload_to_apply: string[] }).reload_to_apply).toEqual(["listen"]);
      const restarting = await as(ENV.GW_ADMIN, own)("/restart", "POST");
      expect(restarting.status).toBe(202);
      expect(await json(restarting)).toEqual({ restarting: true });
      expect(await own.proc.exited).toBe(0);
      // The successor shares stderr: its own "gateway started" line, with the moved data listener.
      const deadline = Date.now() + 10_000;
      let up = false;
      while (!up && Date.now() < deadline) {
        up = await fetch(`http://127.0.0.1:${moved}/v1/models`).then((r) => r.status < 500, () => false);
        if (!up) await Bun.sleep(100);
      }
      expect(up).toBe(true);
      const info = (await json(await fetch(`http://127.0.0.1:${adminPort}/api/v1/admin/info`, { headers: { "x-admin-token": ENV.GW_ADMIN } }))) as { config_version: number };
      expect(info.config_version).toBe(0);
      const entries = (await json(await fetch(`http://127.0.0.1:${adminPort}/api/v1/admin/audit?limit=1`, { headers: { "x-admin-token": ENV.GW_ADMIN } }))) as { items: Entry[] };
      expect(entries.items[0]).toMatchObject({ action: "gateway.restart", outcome: "applied" });
    } finally {
      // The successor is not our child: stop it through its own pid file-free route, a signal by port owner.
      const pids = Bun.spawnSync(["sh", "-c", `ps -eo pid,args | grep '${join(own.dir, "gateway.test.yaml")}' | grep -v grep | awk '{print $1}'`]).stdout.toString().trim().split("\n").filter(Boolean);
      for (const pid of pids) process.kill(Number(pid), "SIGTERM");
      await own.stop();
    }
  });
});
