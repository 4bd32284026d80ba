// Replicas of the built binary sharing one real PostgreSQL (Debian's, started here): they boot together on
// an empty database and migrate once; a key minted on one is served by the others within 1 s and its
// revoke holds there within 1 s (measured); the fleet's one audit chain verifies on each replica and with
// `--verify-audit`; a boot with bad credentials stops with a line naming the store, never the password.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { json, LISTEN_ANY, runGateway, startGateway, tempDir, type RunningGateway } from "../support/gateway.ts";
import { replicaConfig, usePostgres } from "../support/postgres.ts";

const server = usePostgres("pg-replicas-");
const ENV = { GW_ADMIN: "replica-admin-token-5e6f", GW_SIGNING_KEY: "replica-signing-key-0011223344" };
const config = replicaConfig(4);

let url: string;
let replicas: RunningGateway[] = [];

beforeAll(async () => {
  url = await server().createDatabase("fleet");
  replicas = await Promise.all([1, 2, 3].map(() => startGateway(config, { env: { ...ENV, GW_PG_URL: url } })));
}, 60_000);

afterAll(async () => {
  await Promise.all(replicas.map((r) => r.stop()));
});

const admin = (r: RunningGateway, path: string, init: RequestInit = {}) => fetch(`${r.admin}${path}`, { ...init, headers: { "x-admin-token": ENV.GW_ADMIN, "content-type": "application/json" } });
const chat = (r: RunningGateway, token: string) => new OpenAI({ apiKey: token, baseURL: `${r.data}/v1`, maxRetries: 0 }).chat.completions.create({ model: "mock-1", messages: [{ role: "user", content: "hi" }] });

/** Milliseconds until `holds` is true, polling every 10 ms; throws past `boundMs`. */
async function timeUntil(holds: () => Promise<boolean>, boundMs: number): Promise<number> {
  const start = performance.now();
  while (!(await holds())) {
    if (performance.now() - start > boundMs) throw new Error(`not within ${boundMs} ms`);
    await Bun.sleep(10);
  }
  return performance.now() - start;
}

/** Requests the fleet's ledger holds for one key. */
const ledgerOf = async (keyId: string) => Number(((await server().sql(`SELECT COALESCE(SUM(requests), 0)::int AS n FROM ledger WHERE key_id = '${keyId}'`, "fleet")) as { n: number }[])[0]!.n);

const served = async (r: RunningGateway, token: string) => {
  try {
    await chat(r, token);
    return true;
  } catch {
    return false;
  }
};

describe("replicas on one PostgreSQL", () => {
  test("three replicas booting together migrate the empty database once", async () => {
    const rows = (await server().sql("SELECT version, count(*)::int AS n FROM schema_migrations GROUP BY version ORDER BY version", "fleet")) as { version: number; n: number }[];
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(row.n).toBe(1);
  });

  test("a key minted on one replica is served by the others within 1 s; its revoke on another holds on all within 1 s", async () => {
    const [a, b, c] = replicas as [RunningGateway, RunningGateway, RunningGateway];
    const minted = (await json(await admin(a, "/keys", { method: "POST", body: JSON.stringify({ name: "fleet-ci" }) }))) as { id: string; token: string };
    expect(minted.token).toStartWith("gwk_");
    expect((await chat(a, minted.token)).choices[0]!.message.role).toBe("assistant");
    const seenB = await timeUntil(() => served(b, minted.token), 1_000);
    const seenC = await timeUntil(() => served(c, minted.token), 1_000);
    expect(Math.max(seenB, seenC)).toBeLessThan(1_000);

    expect((await admin(b, `/keys/${minted.id}/revoke`, { method: "POST" })).status).toBe(200);
    const refusedA = await timeUntil(async () => !(await served(a, minted.token)), 1_000);
    const refusedC = await timeUntil(async () => !(await served(c, minted.token)), 1_000);
    expect(Math.max(refusedA, refusedC)).toBeLessThan(1_000);
    console.log(`fleet propagation: key served on the others after ${Math.round(seenB)} / ${Math.round(seenC)} ms, its revoke held after ${Math.round(refusedA)} / ${Math.round(refusedC)} ms`);
    const refusal = await chat(c, minted.token).then(() => undefined, (error: { status?: number }) => error);
    expect(refusal?.status).toBe(401);
  }, 30_000);

  test("one audit chain for the fleet: the same entries and a verified chain on every replica and with --verify-audit", async () => {
    const seen = await Promise.all(replicas.map(async (r) => (await json(await admin(r, "/audit?limit=100"))) as { items: { seq: number; action: string; hash: string }[] }));
    const first = seen[0]!.items;
    expect(first.map((e) => e.action)).toContain("key.create");
    expect(first.map((e) => e.action)).toContain("key.revoke");
    for (const page of seen) expect(page.items).toEqual(first);
    expect(first.map((e) => e.seq)).toEqual(first.map((_, i) => first.length - i));
    for (const r of replicas) expect(await json(await admin(r, "/audit/verify"))).toMatchObject({ ok: true, checked: first.length });
    const dir = tempDir("gw-replica-verify-");
    await Bun.write(`${dir}/gateway.yaml`, config);
    const cli = await runGateway(["--verify-audit", "--config", `${dir}/gateway.yaml`], { cwd: dir, env: { ...ENV, GW_PG_URL: url } });
    expect(cli.stdout.trim()).toBe(`audit log intact: ${first.length} entries checked`);
    expect(cli.code).toBe(0);
  }, 30_000);

  test("GET /replicas: every replica up with its own id and data listener; one stopped is gone at once", async () => {
    const listed = (await json(await admin(replicas[0]!, "/replicas"))) as { items: { id: string; listen: string; state: string; version: string; config_version: number }[] };
    const ours = new Set(replicas.map((r) => r.data.replace("http://", "")));
    const up = listed.items.filter((i) => ours.has(i.listen));
    expect(up.length).toBe(3);
    expect(new Set(up.map((i) => i.id)).size).toBe(3);
    for (const item of up) expect(item).toMatchObject({ state: "up", config_version: 0 });
    for (const item of up) expect(item.id).toMatch(/^replica_[0-9a-f]{12}$/);
    // Each replica's /info names its own id among them, and its store as the fleet's.
    const infos = await Promise.all(replicas.map(async (r) => ((await json(await admin(r, "/info"))) as { store: { replica_id: string } }).store));
    expect(new Set(infos.map((i) => i.replica_id))).toEqual(new Set(up.map((i) => i.id)));
    for (const info of infos) expect(info).toMatchObject({ module: "postgres", state: "ok", schema_version: 11, spooled_rows: 0 });
    const fourth = await startGateway(config, { env: { ...ENV, GW_PG_URL: url } });
    const fourthListen = fourth.data.replace("http://", "");
    const before = (await json(await admin(replicas[1]!, "/replicas"))) as { items: { listen: string; state: string }[] };
    expect(before.items.find((i) => i.listen === fourthListen)?.state).toBe("up");
    expect(await fourth.stop()).toBe(0);
    const after = (await json(await admin(replicas[2]!, "/replicas"))) as { items: { listen: string; state: string }[] };
    expect(after.items.find((i) => i.listen === fourthListen)?.state).toBe("gone");
  }, 30_000);

  test("GET /replicas of a single process on sqlite lists itself, as `local`", async () => {
    const single = await startGateway(`${LISTEN_ANY}store: {module: sqlite, settings: {path: ./gw.db}}
providers:
  local: {protocol: mock}
models:
  mock-1: {provider: local}
auth:
  admin_auth: [admin-tokens]
  admin_tokens: [{token: {env: GW_ADMIN}}]
`, { env: ENV });
    try {
      const listed = (await json(await admin(single, "/replicas"))) as { items: unknown[] };
      expect(listed.items).toEqual([expect.objectContaining({ id: "local", listen: single.data.replace("http://", ""), state: "up", config_version: 0 })]);
    } finally {
      await single.stop();
    }
  });

  test("kill -9 of a replica loses no metering of requests that ended more than the documented window before it", async () => {
    const victim = await startGateway(config, { env: { ...ENV, GW_PG_URL: url } });
    const minted = (await json(await admin(replicas[0]!, "/keys", { method: "POST", body: JSON.stringify({ name: "victim" }) }))) as { id: string; token: string };
    await timeUntil(() => served(victim, minted.token), 2_000); // the key has reached the victim
    await Bun.sleep(400); // and that request's row is written
    const before = await ledgerOf(minted.id);
    for (let i = 0; i < 20; i++) await chat(victim, minted.token);
    await Bun.sleep(400); // past METERING_AT_RISK_MS (200 ms): the rows are in the database
    victim.proc.kill("SIGKILL");
    await victim.proc.exited;
    expect((await ledgerOf(minted.id)) - before).toBe(20);
  }, 30_000);

  test("bad credentials stop the boot with a line naming the store, never the password", async () => {
    const wrong = url.replace(encodeURIComponent(server().password), "wrong-password-9c1d");
    const dir = tempDir("gw-replica-badpw-");
    await Bun.write(`${dir}/gateway.yaml`, config);
    const run = await runGateway(["--config", `${dir}/gateway.yaml`], { cwd: dir, env: { ...ENV, GW_PG_URL: wrong }, timeoutMs: 20_000 });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain(`store postgres (gateway@127.0.0.1:${server().port}/fleet): authentication failed`);
    expect(run.stderr).not.toContain("wrong-password-9c1d");
    expect(run.stderr).not.toContain(server().password);
  }, 30_000);

  test("an unreachable database and another signing key each stop the boot with a line naming the store", async () => {
    const dir = tempDir("gw-replica-bad-");
    await Bun.write(`${dir}/gateway.yaml`, config.replace("pool_size: 4", "pool_size: 4, connect_timeout_secs: 1"));
    const dead = `postgres://gateway:${encodeURIComponent(server().password)}@127.0.0.1:1/fleet`;
    const unreachable = await runGateway(["--config", `${dir}/gateway.yaml`], { cwd: dir, env: { ...ENV, GW_PG_URL: dead }, timeoutMs: 20_000 });
    expect(unreachable.code).not.toBe(0);
    expect(unreachable.stderr).toContain("store postgres (gateway@127.0.0.1:1/fleet): unreachable");
    expect(unreachable.stderr).not.toContain(server().password);
    const otherKey = await runGateway(["--config", `${dir}/gateway.yaml`], { cwd: dir, env: { ...ENV, GW_SIGNING_KEY: "another-signing-key-99887766", GW_PG_URL: url }, timeoutMs: 20_000 });
    expect(otherKey.code).not.toBe(0);
    expect(otherKey.stderr).toContain(`store postgres (gateway@127.0.0.1:${server().port}/fleet): auth.signing_key differs`);
    expect(otherKey.stderr).not.toContain("another-signing-key-99887766");
  }, 30_000);

  test("a table missing from the fleet's database stops the boot with one line naming the store, no stack trace", async () => {
    const broken = await server().createDatabase("broken");
    const first = await startGateway(config, { env: { ...ENV, GW_PG_URL: broken } });
    expect(await first.stop()).toBe(0);
    await server().sql("DROP TABLE groups", "broken");
    const dir = tempDir("gw-replica-broken-");
    await Bun.write(`${dir}/gateway.yaml`, config);
    const run = await runGateway(["--config", `${dir}/gateway.yaml`], { cwd: dir, env: { ...ENV, GW_PG_URL: broken }, timeoutMs: 20_000 });
    expect(run.code).toBe(1);
    const line = run.stderr.split("\n").find((l) => l.includes("store unreadable; not starting"));
    expect(JSON.parse(line!).error).toStartWith(`store postgres (gateway@127.0.0.1:${server().port}/broken): `);
    expect(run.stderr).not.toContain("    at ");
    expect(run.stderr).not.toContain(server().password);
  }, 30_000);

  test("a URL written in the config rather than referenced is refused at --check, its value never repeated", async () => {
    const dir = tempDir("gw-replica-plain-");
    await Bun.write(`${dir}/gateway.yaml`, config.replace("{env: GW_PG_URL}", `"postgres://gateway:plain-secret-77@127.0.0.1:5432/fleet"`));
    const run = await runGateway(["--check", "--config", `${dir}/gateway.yaml`], { cwd: dir, env: ENV });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain("store.settings.url");
    expect(run.stderr).not.toContain("plain-secret-77");
  });
});
