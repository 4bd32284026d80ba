// Issue 22 class 10 on the built binary: a store file that is there but unusable (zero length, not
// sqlite, a corrupt page, a row that does not parse) stops the boot with one line naming the file and
// what is wrong, never a fresh empty store and never a stack trace; a new store is made only where no
// file exists, and the boot says so.
import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { baseEnv, ensureBinary, json, LISTEN_ANY, runGateway, startGateway, tempDir } from "../support/gateway.ts";

const ENV = { GW_ADMIN: "files-admin-token-6d5c", GW_SIGNING_KEY: "files-signing-key-99aa88bb77" };
const CONFIG = `${LISTEN_ANY}store: {module: sqlite, settings: {path: ./state/gateway.db}}
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

/** Boots over `dir` expecting a refusal: exit 1 and one error line naming what is wrong, no stack. */
async function refused(dir: string, ...expected: string[]): Promise<void> {
  const configPath = join(dir, "gateway.test.yaml");
  writeFileSync(configPath, CONFIG);
  const run = await runGateway(["--config", configPath], { cwd: dir, env: ENV });
  expect(run.stderr).not.toContain("fatal error");
  expect(run.code).toBe(1);
  const lines = run.stderr.trim().split("\n");
  expect(lines).toHaveLength(1);
  const record = JSON.parse(lines[0]!);
  expect(record.level).toBe("error");
  const text = `${record.msg} ${record.error}`;
  expect(text).toContain(join(dir, "state/gateway.db"));
  for (const part of expected) expect(text).toContain(part);
  expect(run.stderr).not.toMatch(/\n\s+at /);
}

function storeFile(dir: string, bytes: Uint8Array | string): void {
  mkdirSync(join(dir, "state"), { recursive: true });
  writeFileSync(join(dir, "state/gateway.db"), bytes);
}

/** A store with one key and one API group in it, from a real boot. */
async function populated(): Promise<{ dir: string; keyId: string }> {
  const gw = await startGateway(CONFIG, { env: ENV });
  const call = (path: string, payload: unknown) => fetch(`${gw.admin}${path}`, { method: "POST", headers: { "x-admin-token": ENV.GW_ADMIN, "content-type": "application/json" }, body: JSON.stringify(payload) });
  const key = (await json(await call("/keys", { name: "k1", labels: { team: "a" } }))) as { id: string };
  expect((await call("/groups", { name: "team-a", limits: [{ window: "minute", requests: 5 }] })).status).toBe(201);
  expect(gw.logs.some((line) => line.includes(`"creating new store at ${join(gw.dir, "state/gateway.db")}"`))).toBe(true);
  await gw.stop();
  return { dir: gw.dir, keyId: key.id };
}

function edit(dir: string, sql: string, ...params: string[]): void {
  const db = new Database(join(dir, "state/gateway.db"));
  db.run(sql, params);
  db.close();
}

describe("bad store files stop the boot", () => {
  test("a zero-length file is not taken for a new store", async () => {
    const dir = tempDir();
    storeFile(dir, "");
    await refused(dir, "zero length");
    expect(readFileSync(join(dir, "state/gateway.db")).length).toBe(0);
  });

  test("a file of random bytes is not a sqlite database", async () => {
    const dir = tempDir();
    storeFile(dir, crypto.getRandomValues(new Uint8Array(8192)));
    await refused(dir, "not a sqlite database");
  });

  test("a keys row whose labels are not JSON names the table, the row and the column", async () => {
    const { dir, keyId } = await populated();
    edit(dir, "UPDATE keys SET labels = '{not json' WHERE id = ?", keyId);
    await refused(dir, "table keys", keyId, "labels");
  });

  test("a groups row whose limits are not a list of limits names the table, the row and the column", async () => {
    const { dir } = await populated();
    edit(dir, "UPDATE groups SET limits = '{\"window\": \"minute\"}' WHERE name = ?", "team-a");
    await refused(dir, "table groups", "team-a", "limits");
  });

  test("a damaged page fails sqlite's quick_check", async () => {
    const { dir } = await populated();
    const path = join(dir, "state/gateway.db");
    const bytes = readFileSync(path);
    // Past the header page: the b-tree pages of the tables and their indexes.
    for (let at = 4096 + 16; at < bytes.length; at += 4096) bytes.fill(0xa5, at, at + 64);
    writeFileSync(path, bytes);
    await refused(dir, "corrupt");
  });
});

describe("more bad store files (review of issue 22 class 10)", () => {
  test("a sqlite file of another application is refused and left as it was, not taken over", async () => {
    const dir = tempDir();
    mkdirSync(join(dir, "state"));
    const other = new Database(join(dir, "state/gateway.db"));
    other.run("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)");
    other.run("INSERT INTO invoices (total) VALUES (12.5)");
    other.close();
    const bytes = readFileSync(join(dir, "state/gateway.db"));
    await refused(dir, "is a sqlite database but not a gateway store", "invoices");
    expect(readFileSync(join(dir, "state/gateway.db")).equals(bytes)).toBe(true);
    const after = new Database(join(dir, "state/gateway.db"), { readonly: true });
    expect(after.query("SELECT name FROM sqlite_master WHERE type = 'table'").all()).toEqual([{ name: "invoices" }]);
    after.close();
  });

  test("a store cut short mid-page is truncated, named with its size", async () => {
    const { dir } = await populated();
    const path = join(dir, "state/gateway.db");
    const bytes = readFileSync(path);
    writeFileSync(path, bytes.subarray(0, bytes.length - 1000));
    await refused(dir, "is truncated", `${bytes.length - 1000} bytes`);
    writeFileSync(path, bytes.subarray(0, 60));
    await refused(dir, "is truncated", "shorter than a sqlite header");
  });

  test("a store from a newer gateway names both schema versions", async () => {
    const { dir } = await populated();
    edit(dir, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 0)");
    await refused(dir, "schema version 999", "newer than this build knows (6)");
  });

  test("a directory at the store path, and a path under a file, are refused naming the path", async () => {
    const dir = tempDir();
    mkdirSync(join(dir, "state/gateway.db"), { recursive: true });
    await refused(dir, "is a directory");
    const other = tempDir();
    writeFileSync(join(other, "state"), "a file where the store's directory should be");
    await refused(other, "cannot open sqlite store", "not a directory");
    const fifo = tempDir();
    mkdirSync(join(fifo, "state"));
    expect(Bun.spawnSync(["mkfifo", join(fifo, "state/gateway.db")]).exitCode).toBe(0);
    await refused(fifo, "is not a regular file");
  });

  // Root reads any file, so the refusal is seen as an unprivileged user (where setpriv can switch to one).
  const canDrop = process.getuid?.() === 0 && Bun.which("setpriv") !== null;
  test.skipIf(!canDrop)("a store this process may not read and write is refused naming it, as an unprivileged user", async () => {
    const { dir } = await populated();
    chmodSync(dir, 0o755);
    chmodSync(join(dir, "state"), 0o755);
    chmodSync(join(dir, "gateway.test.yaml"), 0o644);
    chmodSync(join(dir, "state/gateway.db"), 0o600);
    const proc = Bun.spawn(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", ensureBinary(), "--config", join(dir, "gateway.test.yaml")], { cwd: dir, env: baseEnv(ENV), stdout: "pipe", stderr: "pipe" });
    const timer = setTimeout(() => proc.kill("SIGKILL"), 10_000);
    const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
    clearTimeout(timer);
    expect(code).toBe(1);
    const errors = stderr.trim().split("\n").map((line) => JSON.parse(line)).filter((r) => r.level === "error");
    expect(errors).toHaveLength(1);
    expect(errors[0].error).toContain(`store ${join(dir, "state/gateway.db")} cannot be read and written by this process (EACCES`);
  });

  test("a table or column the gateway reads at boot gone: one line naming it, no stack trace", async () => {
    for (const table of ["keys", "groups", "ledger", "audit", "meta"]) {
      const { dir } = await populated();
      edit(dir, `DROP TABLE ${table}`);
      await refused(dir, `has no table ${table}`);
    }
    const { dir } = await populated();
    edit(dir, "ALTER TABLE keys DROP COLUMN labels");
    await refused(dir, "no such column: labels");
  });

  test("a meta row that is not a time does not stop the boot; the unclean-stop line names no time", async () => {
    const { dir } = await populated();
    edit(dir, "INSERT OR REPLACE INTO meta (key, value) VALUES ('ledger_written_at', 'garbage'), ('run_state', 'running')");
    const gw = await startGateway(CONFIG, { env: ENV, dir });
    await gw.stop();
    expect(gw.logs.some((line) => line.includes("previous run did not stop cleanly") && !line.includes("last ledger write"))).toBe(true);
  });

  test("--verify-audit on a store that does not exist refuses naming it and creates nothing", async () => {
    const dir = tempDir();
    const configPath = join(dir, "gateway.test.yaml");
    writeFileSync(configPath, CONFIG);
    const run = await runGateway(["--verify-audit", "--config", configPath], { cwd: dir, env: ENV });
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toBe(`store unavailable: store ${join(dir, "state/gateway.db")} does not exist; there is no audit log to verify`);
    expect(existsSync(join(dir, "state"))).toBe(false);
    writeFileSync(configPath, CONFIG.replace("./state/gateway.db", "\":memory:\""));
    const memory = await runGateway(["--verify-audit", "--config", configPath], { cwd: dir, env: ENV });
    expect(memory.code).toBe(1);
    expect(memory.stderr.trim()).toBe("store unavailable: store :memory: keeps nothing between runs; there is no audit log to verify");
  });

  test("a :memory: store still boots and serves admin writes", async () => {
    const gw = await startGateway(CONFIG.replace("./state/gateway.db", "\":memory:\""), { env: ENV });
    const created = await fetch(`${gw.admin}/groups`, { method: "POST", headers: { "x-admin-token": ENV.GW_ADMIN, "content-type": "application/json" }, body: JSON.stringify({ name: "mem" }) });
    expect(created.status).toBe(201);
    await gw.stop();
    expect(gw.logs.some((line) => line.includes("creating new store"))).toBe(false);
  });
});
