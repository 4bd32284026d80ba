// Hooks over the admin API on the built binary: PUT/DELETE /hooks/{name} commit config versions and one
// audit entry each, bad names and bodies are 400 naming every error with nothing stored, a hook another
// still needs is 409, read-only scope is refused and audited, versions and diff show hooks, health,
// status and schema answer from the runtime view, and no settings value shows anywhere. The plugins the
// hooks name are signed and installed before the boot (a hook naming one that is not is refused).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { blocksUnder } from "../support/doc-blocks.ts";
import { json, LISTEN_ANY, ROOT, startGateway, tempDir, type RunningGateway } from "../support/gateway.ts";
import { newPublisher, trustingPosture, writeInstalled } from "../support/plugins.ts";

const SETTING_SECRET = "hook-setting-value-4f9e2a";
const ENV = { GATEWAY_ADMIN_TOKEN: "hooks-admin-token-31c7", GW_RO: "hooks-readonly-token-88ad" };
const CONFIG = `${LISTEN_ANY}store: {module: sqlite, settings: {path: ./state/gateway.db}}
security: {admin_rate_limit: {per_second: 1000, burst: 10000}}
providers: {local: {protocol: mock}}
models: {mock-1: {provider: local}}
pools:
  chat: {members: [{model: mock-1}]}
auth:
  chain: []
  admin_auth: [admin-tokens]
  admin_tokens:
    - {token: {env: GATEWAY_ADMIN_TOKEN}}
    - {token: {env: GW_RO}, scope: read-only}
`;
const GATE = { kind: "gate", transport: { kind: "plugin", target: "acme/pii-gate" }, prompt: "ro", on_error: "reject", settings: { api_token: SETTING_SECRET, url: { env: "PII_URL" } } };

/** A gate module with a settings schema and no status() member. */
const SCHEMA = { type: "object", properties: { api_token: { type: "string" }, patterns: { type: "array" } } };
const MODULE = `export default { kind: "hook", settingsSchema: ${JSON.stringify(SCHEMA)}, create() { return { gate: () => ({ verb: "continue" }) }; } };\n`;

let gw: RunningGateway;
/** Every admin answer's text, searched for the settings value at the end. */
const seen: string[] = [];
beforeAll(async () => {
  const acme = await newPublisher("acme");
  const dir = tempDir();
  for (const name of ["pii-gate", "other", "pii-redact"]) await writeInstalled(join(dir, "plugins"), { publisher: acme, name, files: { "index.js": MODULE } });
  gw = await startGateway(CONFIG + trustingPosture(acme), { dir, env: { ...ENV, PII_URL: "http://127.0.0.1:9/pii", PII_TOKEN: "pii-token-value" } });
});
afterAll(async () => {
  await gw?.stop();
});

async function call(path: string, method = "GET", body?: unknown, token = ENV.GATEWAY_ADMIN_TOKEN, headers: Record<string, string> = {}) {
  const response = await fetch(`${gw.admin}${path}`, { method, headers: { "x-admin-token": token, "content-type": "application/json", ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  seen.push(text);
  return { status: response.status, body: JSON.parse(text) };
}
const version = async () => (await call("/info")).body.config_version as number;
const auditSince = async (seq: number) => ((await call("/audit?limit=500")).body.items as { seq: number; action: string; resource: string; outcome: string }[]).filter((e) => e.seq > seq).reverse();
const lastSeq = async () => ((await call("/audit?limit=1")).body.items[0]?.seq ?? 0) as number;

describe("register, replace, delete", () => {
  test("PUT registers a hook: a new config version, one audit entry, the HookView with key names only", async () => {
    const [v, seq] = [await version(), await lastSeq()];
    const put = await call("/hooks/pii-gate", "PUT", GATE);
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ applied: true, config_version: v + 1 });
    const view = { name: "pii-gate", kind: "gate", transport: { kind: "plugin", target: "acme/pii-gate" }, prompt: "ro", user: "no", priority: 0, at: null, on_error: "reject", timeout_ms: 200, settings_keys: ["api_token", "url"], global: false };
    expect(put.body.hook).toEqual(view);
    expect((await call("/hooks")).body).toEqual([view]);
    expect((await call("/hooks/pii-gate")).body).toEqual(view);
    expect((await call("/config")).body.hooks).toEqual([view]);
    const newest = (await call("/config/versions?limit=1")).body.items[0];
    expect(newest).toMatchObject({ version: v + 1, principal: "admin", summary: "hook.register hook:pii-gate" });
    const detail = (await call(`/config/versions/${v + 1}`)).body;
    expect(detail.hooks).toEqual({ "pii-gate": view });
    expect(detail.global_hooks).toEqual([]);
    expect((await call(`/config/diff?from=${v}&to=${v + 1}`)).body.hooks).toEqual({ added: ["pii-gate"], removed: [], changed: [] });
    expect(await auditSince(seq)).toMatchObject([{ action: "hook.register", resource: "hook:pii-gate", outcome: "applied" }]);
  });

  test("a PUT of the same hook replaces it: settings_version +1, diff names it changed even for a value alone", async () => {
    const v = await version();
    expect((await call("/hooks/pii-gate/status")).body.desired).toEqual({ settings_keys: ["api_token", "url"], settings_version: 1 });
    const put = await call("/hooks/pii-gate", "PUT", { ...GATE, settings: { ...GATE.settings, api_token: `${SETTING_SECRET}-2` }, expected_version: v });
    expect(put.status).toBe(200);
    expect((await call("/hooks/pii-gate/status")).body.desired).toEqual({ settings_keys: ["api_token", "url"], settings_version: 2 });
    const { lines, ...diff } = (await call(`/config/diff?from=${v}&to=${v + 1}`)).body;
    expect(diff).toEqual({ from: v, to: v + 1, hooks: { added: [], removed: [], changed: ["pii-gate"] }, truncated: false });
    // The sources show a settings value as <redacted-by-gateway> on both sides: the line diff names no change, and no value.
    expect(lines.filter((l: { op: string }) => l.op !== "=")).toEqual([]);
    expect(JSON.stringify(lines)).not.toContain(SETTING_SECRET);
    // global: true puts it on every request: global_hooks at that version, and the diff says so.
    expect((await call("/hooks/pii-gate", "PUT", { ...GATE, global: true }, undefined, { "if-match": String(v + 1) })).status).toBe(200);
    expect((await call(`/config/versions/${v + 2}`)).body.global_hooks).toEqual(["pii-gate"]);
    expect((await call(`/config/diff?from=${v + 1}&to=${v + 2}`)).body.global_hooks).toEqual({ from: [], to: ["pii-gate"] });
    expect((await call("/hooks/pii-gate/status")).body.desired.settings_version).toBe(3);
  });

  test("a stale expected_version is 409 version_conflict and changes nothing", async () => {
    const v = await version();
    const stale = await call("/hooks/pii-gate", "PUT", { ...GATE, expected_version: v - 1 });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe("version_conflict");
    expect((await call("/hooks/pii-gate", "DELETE", undefined, undefined, { "if-match": String(v - 1) })).status).toBe(409);
    expect(await version()).toBe(v);
  });

  test("DELETE is 409 while another hook falls back to it, 404 when absent; each audited once", async () => {
    const seq = await lastSeq();
    expect((await call("/hooks/pii-fallback-user", "PUT", { kind: "gate", transport: { kind: "plugin", target: "acme/other" }, on_error: "pii-gate" })).status).toBe(200);
    const v = await version();
    const held = await call("/hooks/pii-gate", "DELETE");
    expect(held.status).toBe(409);
    expect(held.body.error).toEqual({ code: "conflict", message: 'hook "pii-gate" is still used by hook pii-fallback-user (on_error); change those first' });
    expect(await version()).toBe(v);
    expect((await call("/hooks/pii-fallback-user", "DELETE")).status).toBe(200);
    const deleted = await call("/hooks/pii-gate", "DELETE");
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ applied: true, config_version: v + 2 });
    expect((await call("/config/versions?limit=1")).body.items[0].summary).toBe("hook.delete hook:pii-gate");
    expect((await call(`/config/diff?from=${v}&to=${v + 2}`)).body.hooks).toEqual({ added: [], removed: ["pii-fallback-user", "pii-gate"], changed: [] });
    const absent = await call("/hooks/pii-gate", "DELETE");
    expect(absent.status).toBe(404);
    expect(absent.body.error.code).toBe("not_found");
    expect((await call("/hooks")).body).toEqual([]);
    expect((await auditSince(seq)).map((e) => `${e.action} ${e.resource} ${e.outcome}`)).toEqual([
      "hook.register hook:pii-fallback-user applied",
      "hook.delete hook:pii-gate rejected",
      "hook.delete hook:pii-fallback-user applied",
      "hook.delete hook:pii-gate applied",
      "hook.delete hook:pii-gate rejected",
    ]);
    // A deleted and re-registered hook counts its settings_version on: a reader never sees a number reused.
    expect((await call("/hooks/pii-gate", "PUT", GATE)).status).toBe(200);
    expect((await call("/hooks/pii-gate/status")).body.desired.settings_version).toBe(4);
  });
});

describe("bad input: 400 naming every error, nothing stored, audited as rejected", () => {
  test("a malformed HookCfg names each member; reserved and malformed names; on_error to itself or to nothing", async () => {
    const [v, seq] = [await version(), await lastSeq()];
    const bad = await call("/hooks/bad-one", "PUT", { kind: "bogus", priority: 70000, timeout_ms: "soon", extra: 1, settings: { token: SETTING_SECRET } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe("invalid_request");
    for (const path of ["/kind", "/priority", "/timeout_ms", "/extra"]) expect(bad.body.error.message).toContain(`${path}:`);
    expect((await call("/hooks/bad-one", "PUT", [1])).status).toBe(400);
    const reserved = await call("/hooks/reject", "PUT", GATE);
    expect(reserved.status).toBe(400);
    expect(reserved.body.error.message).toContain("reserved on_error word");
    expect((await call("/hooks/Upper", "PUT", GATE)).status).toBe(400);
    expect((await call(`/hooks/${"x".repeat(65)}`, "PUT", GATE)).status).toBe(400);
    const self = await call("/hooks/loop", "PUT", { ...GATE, on_error: "loop" });
    expect(self.status).toBe(400);
    expect(self.body.error.message).toContain("hooks.loop.on_error: a hook cannot fall back to itself");
    const unknown = await call("/hooks/lost", "PUT", { ...GATE, on_error: "nowhere" });
    expect(unknown.body.error.message).toContain('hooks.lost.on_error: unknown fallback hook "nowhere"');
    const tap = await call("/hooks/tap-no-stage", "PUT", { kind: "tap", transport: { kind: "plugin", target: "acme/t" } });
    expect(tap.body.error.message).toContain("hooks.tap-no-stage.at: a tap needs its stage");
    const notJson = await fetch(`${gw.admin}/hooks/not-json`, { method: "PUT", headers: { "x-admin-token": ENV.GATEWAY_ADMIN_TOKEN, "content-type": "application/json" }, body: "{kind: gate" });
    expect(notJson.status).toBe(400);
    expect(await version()).toBe(v);
    expect((await call("/hooks")).body.map((h: { name: string }) => h.name)).toEqual(["pii-gate"]);
    const entries = await auditSince(seq);
    expect(entries.map((e) => `${e.action} ${e.resource} ${e.outcome}`)).toEqual([
      "hook.register hook:bad-one rejected",
      "hook.register hook:bad-one rejected",
      "hook.register hook:reject rejected",
      "hook.register hook:Upper rejected",
      `hook.register hook:${"x".repeat(65)} rejected`,
      "hook.register hook:loop rejected",
      "hook.register hook:lost rejected",
      "hook.register hook:tap-no-stage rejected",
      "hook.register hook:not-json rejected",
    ]);
  });

  test("a read-only token reads hooks and is refused (403) on PUT and DELETE, each audited as rejected", async () => {
    const seq = await lastSeq();
    expect((await call("/hooks", "GET", undefined, ENV.GW_RO)).status).toBe(200);
    expect((await call("/hooks/pii-gate/status", "GET", undefined, ENV.GW_RO)).status).toBe(200);
    expect((await call("/hooks/ro-try", "PUT", GATE, ENV.GW_RO)).status).toBe(403);
    expect((await call("/hooks/pii-gate", "DELETE", undefined, ENV.GW_RO)).status).toBe(403);
    expect((await auditSince(seq)).map((e) => `${e.action} ${e.resource} ${e.outcome}`)).toEqual(["hook.register hook:ro-try rejected", "hook.delete hook:pii-gate rejected"]);
  });
});

describe("health, status and schema from the hook runtime", () => {
  test("health: a plugin-load check; the installed plugin is loaded", async () => {
    const health = (await call("/hooks/pii-gate/health")).body;
    expect(health).toEqual({ name: "pii-gate", transport: { kind: "plugin", target: "acme/pii-gate" }, reachable: true, detail: null });
  });

  test("status: desired from the config, no report (note, nulls), metrics an array, source live", async () => {
    const before = Math.floor(Date.now() / 1000);
    const status = (await call("/hooks/pii-gate/status")).body;
    expect(status).toMatchObject({ name: "pii-gate", desired: { settings_keys: ["api_token", "url"] }, reported: null, drift: null, drift_keys: [], metrics: [], source: "live" });
    expect(status.note).toContain("did not answer within 1000 ms");
    expect(status.as_of).toBeGreaterThanOrEqual(before - 1);
  });

  test("schema: the loaded module's settingsSchema; unknown hooks are 404 on every read", async () => {
    expect((await call("/hooks/pii-gate/schema")).body).toEqual({ name: "pii-gate", schema: SCHEMA });
    for (const tail of ["", "/health", "/status", "/schema"]) {
      const missing = await call(`/hooks/nope${tail}`);
      expect(missing.status).toBe(404);
      expect(missing.body.error.code).toBe("not_found");
    }
  });
});

describe("docs/operations.md", () => {
  test("the curl commands of 'Hooks over the admin API' run as printed", async () => {
    const [block] = blocksUnder(ROOT, "docs/operations.md", "Hooks over the admin API");
    const proc = Bun.spawn(["bash", "-e", "-c", block!.text.replaceAll("127.0.0.1:8081/api/v1/admin", gw.admin.replace(/^http:\/\//, ""))], {
      env: { PATH: process.env.PATH ?? "", GATEWAY_ADMIN_TOKEN: ENV.GATEWAY_ADMIN_TOKEN },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, code] = [await new Response(proc.stdout).text(), await proc.exited];
    seen.push(out);
    expect(code).toBe(0);
    expect(out).not.toContain('"error"');
    expect(out).toContain('"summary":"hook.register hook:pii-redact"');
    expect(out).toContain('"settings_keys":["patterns","token"]');
    expect(out).toContain('"applied":true');
  });
});

describe("no settings value anywhere", () => {
  test("not in any admin answer, the audit log or the gateway's log", async () => {
    seen.push(JSON.stringify((await call("/audit?limit=500")).body));
    for (const text of [...seen, ...gw.logs]) expect(text).not.toContain(SETTING_SECRET);
  });
});
