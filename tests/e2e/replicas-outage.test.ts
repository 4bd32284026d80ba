// A replica of the built binary when its PostgreSQL stops mid-run and comes back: keys keep
// authenticating from memory and requests are served, /healthz says degraded, admin reads answer from
// memory, an admin mutation is refused without being half-applied, a request whose chain has a limit is
// refused 503 `store unavailable` in the caller's protocol (fail_closed), and after the database returns
// the ledger holds every request that was served (counted) and /healthz says ok again. Rows served while the
// database is away go to the replica's spool on disk: a replica killed with SIGKILL meanwhile loses none of
// them (its successor on the same spool writes them, exactly once); a second live replica on one spool file
// is refused naming it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { json, startGateway, type RunningGateway } from "../support/gateway.ts";
import { replicaConfig, usePostgres } from "../support/postgres.ts";
import { until } from "../support/until.ts";

const server = usePostgres("pg-outage-");
const ENV = { GW_ADMIN: "outage-admin-token-5e6f", GW_SIGNING_KEY: "outage-signing-key-0011223344" };
const config = replicaConfig(2);

let gw: RunningGateway;
let url: string;

beforeAll(async () => {
  url = await server().createDatabase("outage");
  gw = await startGateway(config, { env: { ...ENV, GW_PG_URL: url } });
}, 60_000);

afterAll(async () => {
  await gw?.stop();
});

const admin = (path: string, init: RequestInit = {}) => fetch(`${gw.admin}${path}`, { ...init, headers: { "x-admin-token": ENV.GW_ADMIN, "content-type": "application/json" } });
const health = async () => (await fetch(`${gw.data}/healthz`)).text();
/** gateway_store_up as the replica's /metrics shows it. */
const storeUp = async (token: string) => Number(/^gateway_store_up (\d+)$/m.exec(await (await fetch(`${gw.data}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text())?.[1]);
const ledgerRequests = async () => Number(((await server().sql("SELECT COALESCE(SUM(requests), 0)::int AS n FROM ledger", "outage")) as { n: number }[])[0]!.n);

describe("a replica whose database stops and returns", () => {
  test("serves from memory meanwhile, says degraded, refuses mutations whole, and meters every served request once it is back", async () => {
    const key = (await json(await admin("/keys", { method: "POST", body: JSON.stringify({ name: "outage" }) }))) as { id: string; token: string };
    expect((await admin("/groups", { method: "POST", body: JSON.stringify({ name: "limited", limits: [{ window: "hour", requests: 1000 }] }) })).status).toBe(201);
    const limited = (await json(await admin("/keys", { method: "POST", body: JSON.stringify({ name: "limited", group: "limited" }) }))) as { id: string; token: string };
    const limitedClient = new OpenAI({ apiKey: limited.token, baseURL: `${gw.data}/v1`, maxRetries: 0 });
    const askLimited = () => limitedClient.chat.completions.create({ model: "mock-1", messages: [{ role: "user", content: "hi" }] });
    expect((await askLimited()).choices[0]!.message.role).toBe("assistant");
    const client = new OpenAI({ apiKey: key.token, baseURL: `${gw.data}/v1`, maxRetries: 0 });
    const ask = () => client.chat.completions.create({ model: "mock-1", messages: [{ role: "user", content: "hi" }] });
    for (let i = 0; i < 5; i++) await ask();
    await until(async () => (await ledgerRequests()) === 6, 5_000, 50);
    expect(await health()).toBe("ok");

    await server().stop();
    for (let i = 0; i < 10; i++) expect((await ask()).choices[0]!.message.role).toBe("assistant");
    // A limit cannot be checked: fail_closed refuses in the caller's own shape, never serves unchecked.
    const closed = (await askLimited().then(() => undefined, (error: unknown) => error)) as { status: number; headers: Headers | Record<string, string>; message: string } | undefined;
    expect(closed?.status).toBe(503);
    expect(closed?.message).toContain("store unavailable");
    const retryAfter = closed?.headers instanceof Headers ? closed.headers.get("retry-after") : closed?.headers?.["retry-after"];
    expect(retryAfter).toBe("1");
    const anthropic = await fetch(`${gw.data}/v1/messages`, { method: "POST", headers: { "x-api-key": limited.token, "anthropic-version": "2023-06-01", "content-type": "application/json" }, body: JSON.stringify({ model: "mock-1", max_tokens: 16, messages: [{ role: "user", content: "hi" }] }) });
    const anthropicBody = (await anthropic.json()) as { type: string; error: { type: string; message: string } };
    expect([anthropic.status, anthropicBody.type, anthropicBody.error.type]).toEqual([529, "error", "overloaded_error"]);
    expect(anthropicBody.error.message).toContain("store unavailable");
    expect(gw.logs.some((line) => line.includes("store unavailable: limits cannot be checked") && line.includes("store postgres ("))).toBe(true);
    await until(async () => (await health()) === "degraded", 5_000, 50);
    const down = async () => ((await json(await admin("/info"))) as { store: { state: string; spooled_rows: number } }).store;
    expect((await down()).state).toBe("unavailable");
    // The served requests' rows wait for the database (the ledger batch fails within its 100 ms).
    await until(async () => (await down()).spooled_rows > 0, 5_000, 50);
    expect(await storeUp(key.token)).toBe(0);
    // Reads are answered from memory.
    const listed = await admin("/keys");
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as { items: { id: string }[] }).items.map((k) => k.id).sort()).toEqual([key.id, limited.id].sort());
    expect((await admin("/groups")).status).toBe(200);
    expect((await admin("/info")).status).toBe(200);
    const refused = await admin("/keys", { method: "POST", body: JSON.stringify({ name: "while-down" }) });
    expect(refused.status).toBe(500);
    const refusal = await refused.text();
    expect(refusal).not.toContain(server().password);
    // A config change cannot take the fleet's newest version first: refused in the admin envelope, nothing applied.
    const versionBefore = ((await json(await admin("/config/settings"))) as { config_version: number }).config_version;
    const settings = await admin("/config/settings", { method: "PUT", body: JSON.stringify({ per_request_fee: 0.5 }) });
    expect(settings.status).toBe(500);
    const settingsRefusal = (await settings.json()) as { error: { code: string; message: string } };
    expect(settingsRefusal.error.code).toBe("internal");
    expect(settingsRefusal.error.message).toStartWith("not applied: the fleet's newer config versions could not be taken");
    expect(JSON.stringify(settingsRefusal)).not.toContain(server().password);
    expect(((await json(await admin("/config/settings"))) as { config_version: number }).config_version).toBe(versionBefore);
    expect(gw.logs.join("\n")).not.toContain(server().password);

    await server().start();
    await until(async () => (await health()) === "ok", 10_000, 100);
    await until(async () => (await ledgerRequests()) === 16, 10_000, 100);
    await until(async () => (await storeUp(key.token)) === 1, 5_000, 100);
    expect(((await json(await admin("/info"))) as { store: unknown }).store).toMatchObject({ state: "ok", spooled_rows: 0 });
    const keys = (await json(await admin("/keys"))) as { items: { name: string }[] };
    expect(keys.items.map((k) => k.name).sort()).toEqual(["limited", "outage"]);
    expect((await ask()).choices[0]!.message.role).toBe("assistant");
    expect((await askLimited()).choices[0]!.message.role).toBe("assistant");
    expect(gw.logs.some((line) => line.includes("store available again: limits checked"))).toBe(true);
  }, 60_000);

  test("rows served while the database is away survive a SIGKILL in the spool and are written once by the next replica on it", async () => {
    const key = (await json(await admin("/keys", { method: "POST", body: JSON.stringify({ name: "spooled" }) }))) as { id: string; token: string };
    const client = new OpenAI({ apiKey: key.token, baseURL: `${gw.data}/v1`, maxRetries: 0 });
    const ask = () => client.chat.completions.create({ model: "mock-1", messages: [{ role: "user", content: "hi" }] });
    const served = async () => Number(((await server().sql(`SELECT COALESCE(SUM(requests), 0)::int AS n FROM ledger WHERE key_id = '${key.id}'`, "outage")) as { n: number }[])[0]!.n);
    await ask();
    await until(async () => (await served()) === 1, 5_000, 50);

    await server().stop();
    for (let i = 0; i < 12; i++) await ask();
    const spool = join(gw.dir, "gateway.spool");
    // Each batch is fsynced before it counts: the 12 requests' rows are on disk well within a second.
    await until(async () => existsSync(spool) && readFileSync(spool, "utf8").split("\n").filter(Boolean).length > 0 && (((await json(await admin("/info"))) as { store: { spooled_rows: number } }).store.spooled_rows > 0), 5_000, 50);
    await Bun.sleep(300);
    expect(readFileSync(spool, "utf8")).not.toContain(server().password);
    gw.proc.kill("SIGKILL");
    await gw.proc.exited;

    await server().start();
    const dir = gw.dir;
    gw = await startGateway(config, { env: { ...ENV, GW_PG_URL: url }, dir });
    await until(async () => (await served()) === 13, 10_000, 100);
    expect(gw.logs.join("\n")).toContain("store available again: spooled metering written");
    // Its run state, kept beside the spool: the kill was not a clean stop.
    expect(gw.logs.join("\n")).toContain("previous run did not stop cleanly");
    await Bun.sleep(1_500);
    expect(await served()).toBe(13);
    expect(readFileSync(spool, "utf8")).toBe("");

    const second = await startGateway(config, { env: { ...ENV, GW_PG_URL: url }, dir }).then(
      (g) => (void g.stop(), undefined),
      (error: Error) => error,
    );
    expect(second?.message).toContain(`metering spool ${spool} is in use by another running gateway`);
    expect(second?.message).toContain("store.settings.spool_path");
  }, 60_000);
});
