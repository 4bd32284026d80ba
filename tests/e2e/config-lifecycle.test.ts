// The config lifecycle on the built binary: an apply serves traffic at once, an invalid one changes
// nothing and names every error, versions / diff / rollback round-trip, expected_version and If-Match
// hold under concurrent applies, reload re-reads the file, and the settings overlay is live for live
// sections, stored for restart-only ones, and applied again at the next boot.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { json, LISTEN_ANY, startGateway, type RunningGateway } from "../support/gateway.ts";

const ENV = { GW_ADMIN: "lifecycle-admin-token-1a2b" };
const BASE = `store: {module: sqlite, settings: {path: ./state/gateway.db}}
providers:
  local: {protocol: mock}
models:
  mock-1: {provider: local}
pools:
  chat: {members: [{model: mock-1}]}
auth:
  chain: []
  admin_auth: [admin-tokens]
  admin_tokens: [{token: {env: GW_ADMIN}}]
`;
const CONFIG = `${LISTEN_ANY}${BASE}`;
/** The same config plus a pool `extra`: what the tests apply. */
const WITH_EXTRA = {
  listen: "127.0.0.1:0",
  admin_listen: "127.0.0.1:0",
  store: { module: "sqlite", settings: { path: "./state/gateway.db" } },
  providers: { local: { protocol: "mock" } },
  models: { "mock-1": { provider: "local" } },
  pools: { chat: { members: [{ model: "mock-1" }] }, extra: { members: [{ model: "mock-1" }] } },
  auth: { chain: [], admin_auth: ["admin-tokens"], admin_tokens: [{ token: { env: "GW_ADMIN" } }] },
};

let gw: RunningGateway;
beforeAll(async () => {
  gw = await startGateway(CONFIG, { env: ENV });
});
afterAll(async () => {
  await gw?.stop();
});

const admin = (path: string, init: RequestInit = {}) => fetch(`${gw.admin}${path}`, { ...init, headers: { "x-admin-token": ENV.GW_ADMIN, "content-type": "application/json", ...init.headers } });
const post = (path: string, body: unknown, headers: Record<string, string> = {}) => admin(path, { method: "POST", body: JSON.stringify(body), headers });
const chat = (model: string, g = gw) =>
  fetch(`${g.data}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }) });
const version = async () => ((await json(await admin("/info"))) as { config_version: number }).config_version;

describe("apply, versions, diff, rollback", () => {
  test("an applied config serves traffic at once; an invalid one lists every error and changes nothing", async () => {
    expect((await chat("extra")).status).toBe(404);
    const before = await version();
    const bad = await post("/config/apply", { config: { ...WITH_EXTRA, pools: { chat: { members: [{ model: "nope" }] } }, per_request_fee: -1 } });
    expect(bad.status).toBe(400);
    const message = ((await json(bad)) as { error: { code: string; message: string } }).error;
    expect(message.code).toBe("invalid_request");
    expect(message.message).toContain("per_request_fee");
    expect(message.message).toContain("nope");
    expect(await version()).toBe(before);

    const applied = await post("/config/apply", { config: WITH_EXTRA });
    expect(applied.status).toBe(200);
    expect(await json(applied)).toMatchObject({ applied: true, config_version: before + 1 });
    expect((await chat("extra")).status).toBe(200);
    expect(await version()).toBe(before + 1);
  });

  test("YAML applies too, and a malformed wrapper is 400", async () => {
    const v = await version();
    const applied = await post("/config/apply", { yaml: `${CONFIG}pools_typo: 1\n` });
    expect(applied.status).toBe(400);
    expect(((await json(applied)) as { error: { message: string } }).error.message).toContain("pools_typo");
    expect((await post("/config/apply", { config: WITH_EXTRA, yaml: "x" })).status).toBe(400);
    expect((await post("/config/apply", { nothing: 1 })).status).toBe(400);
    expect((await admin("/config/apply", { method: "POST", body: "{not json" })).status).toBe(400);
    expect(await version()).toBe(v);
  });

  test("hooks whose on_error fallbacks form a cycle are refused by apply with their paths", async () => {
    const v = await version();
    const gate = (next: string) => ({ kind: "gate", builtin: "http-gate", on_error: next, settings: { url: "http://127.0.0.1:9/policy" } });
    const hooked = { ...WITH_EXTRA, pools: { ...WITH_EXTRA.pools, extra: { members: [{ model: "mock-1" }], hooks: ["gate-a"] } }, hooks: { "gate-a": gate("gate-b"), "gate-b": gate("gate-a") } };
    const refused = await post("/config/apply", { config: hooked });
    expect(refused.status).toBe(400);
    const text = await refused.text();
    expect(text).toContain("hooks.gate-a.on_error: fallback cycle gate-a -> gate-b -> gate-a");
    expect(await version()).toBe(v);
  });

  test("hooks are judged with the config: a pool naming a hook that does not exist is refused with its path", async () => {
    const v = await version();
    const hooked = { ...WITH_EXTRA, pools: { ...WITH_EXTRA.pools, extra: { members: [{ model: "mock-1" }], hooks: ["tap-missing"] } }, hooks: { "tap-a": { kind: "tap", transport: { kind: "plugin", target: "acme/webhook" } } } };
    const refused = await post("/config/apply", { config: hooked });
    expect(refused.status).toBe(400);
    const text = await refused.text();
    expect(text).toContain('pools.extra.hooks[0]: unknown hook \\"tap-missing\\"');
    expect(text).toContain("hooks.tap-a.at: a tap needs its stage");
    expect(await version()).toBe(v);
  });

  test("versions page newest first; detail shows hooks; diff names them; rollback is a new version", async () => {
    const page = (await json(await admin("/config/versions?limit=1"))) as { items: { version: number; summary: string; principal: string }[]; next_cursor: string | null };
    const newest = await version();
    expect(page.items).toHaveLength(1);
    expect(page.items[0]).toMatchObject({ version: newest, summary: "config.apply", principal: "admin" });
    expect(page.next_cursor).not.toBeNull();
    const rest = (await json(await admin(`/config/versions?cursor=${page.next_cursor}`))) as { items: { version: number }[]; next_cursor: string | null };
    expect(rest.items.map((i) => i.version)).toEqual([...Array(newest).keys()].reverse());
    expect(rest.next_cursor).toBeNull();
    expect((await admin("/config/versions?limit=0")).status).toBe(400);
    expect((await admin("/config/versions?cursor=bogus")).status).toBe(400);

    const detail = (await json(await admin(`/config/versions/${newest}`))) as { hooks: Record<string, { name: string }>; global_hooks: string[] };
    expect(detail.hooks).toEqual({}); // no applied config of this test carries a hook
    expect((await admin("/config/versions/999")).status).toBe(404);
    expect((await admin("/config/versions/abc")).status).toBe(400);

    const diff = (await json(await admin(`/config/diff?from=0&to=${newest}`))) as { hooks: { added: string[]; removed: string[]; changed: string[] }; global_hooks?: unknown };
    expect(diff.hooks).toEqual({ added: [], removed: [], changed: [] });
    expect(diff.global_hooks).toBeUndefined();
    expect((await admin("/config/diff?from=0")).status).toBe(400);
    expect((await admin("/config/diff?from=0&to=999")).status).toBe(404);

    const rolled = await post("/config/rollback", { version: 0 });
    expect(rolled.status).toBe(200);
    expect(await json(rolled)).toEqual({ restored_version: 0, config_version: newest + 1 });
    expect((await chat("extra")).status).toBe(404);
    expect((await chat("chat")).status).toBe(200);
    expect((await post("/config/rollback", { version: 12345 })).status).toBe(404);
    expect((await post("/config/rollback", {})).status).toBe(400);
  });

  test("expected_version and If-Match: concurrent applies never both succeed", async () => {
    const v = await version();
    const answers = await Promise.all(Array.from({ length: 10 }, () => post("/config/apply", { config: WITH_EXTRA, expected_version: v })));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(9);
    const conflict = (await json(answers.find((a) => a.status === 409)!)) as { error: { code: string } };
    expect(conflict.error.code).toBe("version_conflict");
    expect(await version()).toBe(v + 1);

    expect((await post("/config/rollback", { version: 0 }, { "if-match": String(v) })).status).toBe(409);
    expect((await post("/config/rollback", { version: 0 }, { "if-match": `"${v + 1}"` })).status).toBe(200);
    expect((await post("/config/rollback", { version: 0 }, { "if-match": "abc" })).status).toBe(400);
  });

  test("a request in flight finishes on the snapshot it started with", async () => {
    const slow = { ...WITH_EXTRA, providers: { ...WITH_EXTRA.providers, sleepy: { protocol: "mock", latency_ms: 700 } }, models: { ...WITH_EXTRA.models, "slow-1": { provider: "sleepy" } }, pools: { ...WITH_EXTRA.pools, slow: { members: [{ model: "slow-1" }] } } };
    expect((await post("/config/apply", { config: slow })).status).toBe(200);
    const inFlight = chat("slow");
    await Bun.sleep(150);
    // The pool, its lane and its provider are gone from the live config while the request waits upstream.
    expect((await post("/config/apply", { config: WITH_EXTRA })).status).toBe(200);
    expect((await chat("slow")).status).toBe(404);
    const answered = await inFlight;
    expect(answered.status).toBe(200);
    expect(((await json(answered)) as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toBe("mock: hi");
  });

  test("reload re-reads the file; a broken file changes nothing", async () => {
    const chatPool = "  chat: {members: [{model: mock-1}]}\n";
    writeFileSync(join(gw.dir, "gateway.test.yaml"), CONFIG.replace(chatPool, `${chatPool}  reloaded: {members: [{model: mock-1}]}\n`));
    const reloaded = await post("/config/reload", null);
    expect(reloaded.status).toBe(200);
    expect(await json(reloaded)).toMatchObject({ reloaded: true, config_version: await version() });
    expect((await chat("reloaded")).status).toBe(200);
    const v = await version();
    writeFileSync(join(gw.dir, "gateway.test.yaml"), `${CONFIG}unknown_section: 1\n`);
    const refused = await post("/config/reload", null);
    expect(((await json(refused)) as { error: { message: string } }).error.message).toContain("unknown_section");
    expect(refused.status).toBe(400);
    expect(await version()).toBe(v);
    expect((await chat("reloaded")).status).toBe(200);
  });
});

describe("settings overlay", () => {
  test("GET shows the overlay; unknown members are 400", async () => {
    const got = (await json(await admin("/config/settings"))) as Record<string, unknown>;
    expect(got).toMatchObject({ applied: false, settings: {}, reload_to_apply: [] });
    for (const member of ["observability", "metrics", "pools"]) {
      const refused = await admin("/config/settings", { method: "PUT", body: JSON.stringify({ [member]: {} }) });
      expect(refused.status).toBe(400);
    }
  });

  test("a malformed body or a bad value is 400 naming the member, and nothing is stored or applied", async () => {
    const before = await version();
    const put = (body: string) => admin("/config/settings", { method: "PUT", body });
    for (const [body, names] of [
      ["[]", "JSON object"],
      ["{not json", "not valid JSON"],
      ['{"security": {"max_body_bytes": "big"}}', "security.max_body_bytes"],
      ['{"limits": {"nope": 1}}', "limits.nope"],
      ['{"listen": 8080}', "listen"],
    ] as const) {
      const refused = await put(body);
      expect({ body, status: refused.status }).toEqual({ body, status: 400 });
      expect(((await json(refused)) as { error: { message: string } }).error.message).toContain(names);
    }
    expect(await version()).toBe(before);
    expect(((await json(await admin("/config/settings"))) as { settings: unknown }).settings).toEqual({});
    expect(existsSync(join(gw.dir, "gateway.overlay.yaml"))).toBe(false);
  });

  test("a live section takes effect without restart", async () => {
    const big = "x".repeat(4096);
    const before = await fetch(`${gw.data}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "chat", messages: [{ role: "user", content: big }] }) });
    expect(before.status).toBe(200);
    const put = await admin("/config/settings", { method: "PUT", body: JSON.stringify({ security: { max_body_bytes: 2048 } }) });
    expect(put.status).toBe(200);
    expect(await json(put)).toMatchObject({ applied: true, settings: { security: { max_body_bytes: 2048 } }, reload_to_apply: [] });
    const after = await fetch(`${gw.data}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "chat", messages: [{ role: "user", content: big }] }) });
    expect(after.status).toBe(413);
    const cleared = await admin("/config/settings", { method: "PUT", body: JSON.stringify({ security: null }) });
    expect(await json(cleared)).toMatchObject({ settings: {} });
  });
});

describe("restart-only settings and the overlay across a restart", () => {
  test("a new listen address shows in reload_to_apply, is stored, and is bound after a restart", async () => {
    const own = await startGateway(CONFIG, { env: ENV });
    try {
      const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
      const port = probe.port;
      probe.stop(true);
      const put = await fetch(`${own.admin}/config/settings`, {
        method: "PUT",
        headers: { "x-admin-token": ENV.GW_ADMIN, "content-type": "application/json" },
        body: JSON.stringify({ listen: `127.0.0.1:${port}`, rate_card: { "mock-1": { input: 1, output: 2 } }, store: { settings: { path: "./state/gateway.db" } } }),
      });
      expect(put.status).toBe(200);
      const view = (await json(put)) as { reload_to_apply: string[]; settings: { store: Record<string, unknown> } };
      expect(view.reload_to_apply.sort()).toEqual(["listen", "store"]);
      expect(view.settings.store).toEqual({ settings_keys: ["path"] });
      expect(own.data).not.toBe(`http://127.0.0.1:${port}`);
      await own.stop();
      const again = await startGateway(CONFIG, { env: ENV, dir: own.dir });
      try {
        expect(again.data).toBe(`http://127.0.0.1:${port}`);
        const settings = (await json(await fetch(`${again.admin}/config/settings`, { headers: { "x-admin-token": ENV.GW_ADMIN } }))) as { settings: Record<string, unknown> };
        expect(settings.settings).toMatchObject({ listen: `127.0.0.1:${port}`, rate_card: { "mock-1": { input: 1, output: 2 } } });
        expect((await chat("chat", again)).status).toBe(200);
      } finally {
        await again.stop();
      }
    } finally {
      await own.stop();
    }
  });

  test("a locked config refuses every config mutation and reports config_persistence false", async () => {
    const locked = await startGateway(`${CONFIG}config: {locked: true}\n`, { env: ENV });
    try {
      const call = (path: string, method: string, body: unknown) =>
        fetch(`${locked.admin}${path}`, { method, headers: { "x-admin-token": ENV.GW_ADMIN, "content-type": "application/json" }, body: JSON.stringify(body) });
      expect(((await json(await call("/info", "GET", undefined))) as { config_persistence: boolean }).config_persistence).toBe(false);
      for (const [path, method, body] of [
        ["/config/apply", "POST", { config: WITH_EXTRA }],
        ["/config/reload", "POST", {}],
        ["/config/rollback", "POST", { version: 0 }],
        ["/config/settings", "PUT", { rate_card: {} }],
      ] as const) {
        const refused = await call(path, method, body);
        expect({ path, status: refused.status }).toEqual({ path, status: 400 });
        expect(((await json(refused)) as { error: { message: string } }).error.message).toContain("locked");
      }
      expect(((await json(await call("/info", "GET", undefined))) as { config_version: number }).config_version).toBe(0);
    } finally {
      await locked.stop();
    }
  });
});
