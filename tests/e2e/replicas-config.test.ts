// One config for a fleet of the built binary on one real PostgreSQL (Debian's, started here): three
// replicas booting together on an empty database share version 0; an apply, a settings change and a
// rollback on any replica are live on the others within 2 s at one fleet config_version; GET
// /config/versions is one list; two changes with one expected version on two replicas never both apply,
// two without one both do at distinct versions; a replica started later joins at the newest version; a
// value the config took from the environment is stored as its ${VAR}, never as the value.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { json, startGateway, type RunningGateway } from "../support/gateway.ts";
import { replicaConfig, usePostgres } from "../support/postgres.ts";

const server = usePostgres("pg-config-");
const SECRET = "sk-upstream-secret-4f9a2c7e";
const ENV = { GW_ADMIN: "config-admin-token-1a2b", GW_SIGNING_KEY: "config-signing-key-5566778899", GW_UP_KEY: SECRET };
const config = replicaConfig(4);
/** The file plus a second model on the mock provider and an upstream whose key comes from ${GW_UP_KEY}. */
const withModel2 = config
  .replace("providers:\n", 'providers:\n  elsewhere: {protocol: openai, base_url: "http://127.0.0.1:9/v1", api_key: "${GW_UP_KEY}"}\n')
  .replace("models:\n", "models:\n  mock-2: {provider: local}\n");

let url: string;
let replicas: RunningGateway[] = [];
let token: string;

beforeAll(async () => {
  url = await server().createDatabase("fleet_config");
  replicas = await Promise.all([1, 2, 3].map(() => startGateway(config, { env: { ...ENV, GW_PG_URL: url } })));
  const minted = await admin(replicas[0]!, "/keys", { method: "POST", body: JSON.stringify({ name: "config-ci" }) });
  token = ((await json(minted)) as { token: string }).token;
}, 60_000);

afterAll(async () => {
  await Promise.all(replicas.map((r) => r.stop()));
});

function admin(r: RunningGateway, path: string, init: RequestInit = {}) {
  return fetch(`${r.admin}${path}`, { ...init, headers: { "x-admin-token": ENV.GW_ADMIN, "content-type": "application/json" } });
}
const versionOf = async (r: RunningGateway) => ((await json(await admin(r, "/config/settings"))) as { config_version: number }).config_version;
const serves = async (r: RunningGateway, model: string) =>
  new OpenAI({ apiKey: token, baseURL: `${r.data}/v1`, maxRetries: 0 }).chat.completions.create({ model, messages: [{ role: "user", content: "hi" }] }).then(
    () => true,
    () => false,
  );

/** Milliseconds until every replica holds `holds`, polling every 10 ms; throws past 2 s. */
async function everywhereWithin2s(holds: (r: RunningGateway) => Promise<boolean>): Promise<number> {
  const started = performance.now();
  for (const r of replicas) {
    while (!(await holds(r))) {
      if (performance.now() - started > 2_000) throw new Error("not on every replica within 2 s");
      await Bun.sleep(10);
    }
  }
  return performance.now() - started;
}

describe("one config for the fleet", () => {
  test("three replicas booting together on an empty database share version 0, stored once", async () => {
    for (const r of replicas) expect(await versionOf(r)).toBe(0);
    const rows = (await server().sql("SELECT version, principal FROM config_versions ORDER BY version", "fleet_config")) as { version: string; principal: string }[];
    expect(rows.map((r) => Number(r.version))).toEqual([0]);
  });

  test("an apply, a settings change and a rollback, each on another replica, are live everywhere within 2 s at one config_version", async () => {
    const [a, b, c] = replicas as [RunningGateway, RunningGateway, RunningGateway];
    expect(await serves(a, "mock-2")).toBe(false);
    const applied = await admin(a, "/config/apply", { method: "POST", body: JSON.stringify({ yaml: withModel2 }) });
    expect(applied.status).toBe(200);
    expect(((await applied.json()) as { config_version: number }).config_version).toBe(1);
    const applyMs = await everywhereWithin2s((r) => serves(r, "mock-2"));
    await everywhereWithin2s(async (r) => (await versionOf(r)) === 1);

    const settings = await admin(b, "/config/settings", { method: "PUT", body: JSON.stringify({ per_request_fee: 0.25 }) });
    expect(settings.status).toBe(200);
    const settingsMs = await everywhereWithin2s(async (r) => ((await json(await admin(r, "/config/settings"))) as { settings: { per_request_fee?: number } }).settings.per_request_fee === 0.25);
    await everywhereWithin2s(async (r) => (await versionOf(r)) === 2);

    const rolledBack = await admin(c, "/config/rollback", { method: "POST", body: JSON.stringify({ version: 0 }) });
    expect(rolledBack.status).toBe(200);
    expect(await rolledBack.json()).toEqual({ restored_version: 0, config_version: 3 });
    const rollbackMs = await everywhereWithin2s(async (r) => !(await serves(r, "mock-2")));
    await everywhereWithin2s(async (r) => (await versionOf(r)) === 3);
    console.log(`fleet config: apply live everywhere after ${Math.round(applyMs)} ms, settings ${Math.round(settingsMs)} ms, rollback ${Math.round(rollbackMs)} ms`);

    // One list of versions, the same on every replica.
    const lists = await Promise.all(replicas.map(async (r) => ((await json(await admin(r, "/config/versions"))) as { items: { version: number; summary: string }[] }).items));
    expect(lists[0]!.map((v) => v.version)).toEqual([3, 2, 1, 0]);
    for (const list of lists) expect(list).toEqual(lists[0]!);
  }, 30_000);

  test("two changes with one expected version on two replicas: exactly one applies; two without one both apply at distinct versions", async () => {
    const [a, b] = replicas as [RunningGateway, RunningGateway];
    const current = await versionOf(a);
    const body = (fee: number) => JSON.stringify({ per_request_fee: fee, expected_version: current });
    const raced = await Promise.all([admin(a, "/config/settings", { method: "PUT", body: body(0.5) }), admin(b, "/config/settings", { method: "PUT", body: body(0.75) })]);
    expect(raced.map((r) => r.status).sort()).toEqual([200, 409]);
    const loser = raced.find((r) => r.status === 409)!;
    expect(((await loser.json()) as { error: { code: string } }).error.code).toBe("version_conflict");

    const free = await Promise.all([admin(a, "/config/settings", { method: "PUT", body: JSON.stringify({ per_request_fee: 1 }) }), admin(b, "/config/settings", { method: "PUT", body: JSON.stringify({ per_request_fee: 2 }) })]);
    expect(free.map((r) => r.status)).toEqual([200, 200]);
    const versions = await Promise.all(free.map(async (r) => ((await r.json()) as { config_version: number }).config_version));
    expect(new Set(versions).size).toBe(2);
    expect(Math.min(...versions)).toBe(current + 2);
  }, 30_000);

  test("per-replica sections are refused in the fleet's settings; a replica started later joins at the newest version", async () => {
    const refused = await admin(replicas[0]!, "/config/settings", { method: "PUT", body: JSON.stringify({ listen: "127.0.0.1:0" }) });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain("each replica takes it from its own config file");

    const applied = await admin(replicas[1]!, "/config/apply", { method: "POST", body: JSON.stringify({ yaml: withModel2 }) });
    expect(applied.status).toBe(200);
    const newest = ((await applied.json()) as { config_version: number }).config_version;
    const late = await startGateway(config, { env: { ...ENV, GW_PG_URL: url } });
    replicas.push(late);
    expect(await versionOf(late)).toBe(newest);
    expect(await serves(late, "mock-2")).toBe(true);
    // Its file's own version 0 is not a new version: the fleet's list is unchanged.
    const rows = (await server().sql("SELECT count(*)::int AS n FROM config_versions", "fleet_config")) as { n: number }[];
    expect(rows[0]!.n).toBe(newest + 1);
  }, 30_000);

  test("a replica whose environment lacks a variable the fleet's config uses does not start, naming the version and the variable, never a value", async () => {
    const { GW_UP_KEY: _, ...withoutKey } = ENV;
    const refused = await startGateway(config, { env: { ...withoutKey, GW_PG_URL: url } }).then(
      (g) => (void g.stop(), undefined),
      (error: Error) => error,
    );
    expect(refused?.message).toContain("config unavailable; not starting");
    expect(refused?.message).toMatch(/the fleet's config version \d+ does not load here/);
    expect(refused?.message).toContain("GW_UP_KEY");
    expect(refused?.message).not.toContain(SECRET);
    expect(refused?.message).not.toContain(server().password);
  }, 30_000);

  test("a value the config took from the environment is stored as its ${VAR}, never as the value", async () => {
    const rows = (await server().sql("SELECT base, overlay FROM config_versions", "fleet_config")) as { base: string; overlay: string }[];
    const stored = rows.map((r) => r.base + r.overlay).join("\n");
    expect(stored).toContain("${GW_UP_KEY}");
    expect(stored).not.toContain(SECRET);
    expect(stored).not.toContain(server().password);
  });

  test("every replica shows a version's source alike, the key as its ${VAR}, and the same diff lines", async () => {
    const newest = await versionOf(replicas[0]!);
    const sources = await Promise.all(replicas.map(async (r) => ((await json(await admin(r, `/config/versions/${newest}/source`))) as { yaml: string }).yaml));
    for (const source of sources) expect(source).toBe(sources[0]!);
    expect(sources[0]).toContain("api_key: ${GW_UP_KEY}");
    const diffs = await Promise.all(replicas.map(async (r) => ((await json(await admin(r, `/config/diff?from=0&to=${newest}`))) as { lines: { op: string; text: string }[] }).lines));
    for (const lines of diffs) expect(lines).toEqual(diffs[0]!);
    expect(diffs[0]!.filter((l) => l.op === "+").map((l) => l.text.trim())).toContain("mock-2:");
    const shown = JSON.stringify([sources, diffs]);
    expect(shown).not.toContain(SECRET);
    expect(shown).not.toContain(server().password);
  });
});
