// A hook that cannot be loaded is refused, on the built binary: PUT /hooks/{name}, POST /config/apply and
// POST /config/reload naming a plugin that is not installed, one whose entry throws at import, a gate
// plugin without gate(), settings its settingsSchema refuses: 400 naming hooks.<name> and the loader's reason, nothing stored,
// the attempt audited rejected. A boot with such a hook exits 1 naming it. A good signed plugin registers
// and gates the next request.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { LISTEN_ANY, runGateway, startGateway, tempDir, type RunningGateway } from "../support/gateway.ts";
import { newPublisher, trustingPosture, writeInstalled, type Publisher } from "../support/plugins.ts";

const TOKEN = "hooks-strict-admin-6b1e";
const BASE = `${LISTEN_ANY}providers: {local: {protocol: mock}}
models: {mock-1: {provider: local}}
auth: {chain: [], admin_auth: [admin-tokens], admin_tokens: [{token: {env: GW_ADMIN}}]}
`;
const MODULES: Record<string, string> = {
  blocker: `export default { kind: "hook", settingsSchema: { type: "object", properties: { word: { type: "string" } }, additionalProperties: false },
  create(settings) { return { gate: (call) => (call.prompt.messages.some((m) => m.text.includes(settings.word)) ? { verb: "reject", status: 403, message: "blocked by blocker" } : { verb: "continue" }) }; } };\n`,
  boom: `throw new Error("boom at import");\nexport default {};\n`,
  "tap-only": `export default { kind: "hook", create() { return { tap() {} }; } };\n`,
};

let acme: Publisher;
let gw: RunningGateway;
let config: string;
beforeAll(async () => {
  acme = await newPublisher("acme");
  const dir = tempDir();
  for (const [name, source] of Object.entries(MODULES)) await writeInstalled(join(dir, "plugins"), { publisher: acme, name, files: { "index.js": source } });
  config = BASE + trustingPosture(acme);
  gw = await startGateway(config, { dir, env: { GW_ADMIN: TOKEN } });
});
afterAll(async () => {
  await gw?.stop();
});

async function call(path: string, method = "GET", body?: unknown) {
  const response = await fetch(`${gw.admin}${path}`, { method, headers: { "x-admin-token": TOKEN, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as any };
}
const version = async () => (await call("/info")).body.config_version as number;
const lastAudit = async () => (await call("/audit?limit=1")).body.items[0] as { action: string; resource: string; outcome: string };
const gate = (target: string, settings: Record<string, unknown> = {}) => ({ kind: "gate", transport: { kind: "plugin", target }, prompt: "ro", settings });

describe("PUT /hooks/{name} refuses a hook that cannot be loaded", () => {
  const cases: [string, Record<string, unknown>, string[]][] = [
    ["not installed", gate("acme/missing"), ["hooks.h-missing: plugin acme/missing: not installed under"]],
    ["entry throws at import", gate("acme/boom"), ["hooks.h-boom: plugin acme/boom@1.0.0: importing index.js failed: boom at import"]],
    ["gate plugin without gate()", gate("acme/tap-only"), ["hooks.h-tap-only: the gate instance has no gate() member"]],
    ["settings its schema refuses", gate("acme/blocker", { word: 7, extra: true }), ["hooks.h-blocker: settings do not match the hook's settingsSchema", "/settings/word: expected string", "/settings/extra: unknown member"]],
  ];
  for (const [what, cfg, messages] of cases) {
    test(`${what}: 400 naming the hook and the reason, nothing stored, audited rejected`, async () => {
      const name = `h-${(cfg.transport as { target: string }).target.split("/")[1]}`;
      const v = await version();
      const put = await call(`/hooks/${name}`, "PUT", cfg);
      expect(put.status).toBe(400);
      expect(put.body.error.code).toBe("invalid_request");
      for (const message of messages) expect(put.body.error.message).toContain(message);
      expect(await version()).toBe(v);
      expect((await call(`/hooks/${name}`)).status).toBe(404);
      expect(await lastAudit()).toMatchObject({ action: "hook.register", resource: `hook:${name}`, outcome: "rejected" });
    });
  }
});

describe("config changes and the boot", () => {
  test("POST /config/apply with two unloadable hooks: 400 naming each, nothing applied", async () => {
    const v = await version();
    const yaml = `${config}hooks: {a-missing: {kind: gate, transport: {kind: plugin, target: acme/missing}}, b-boom: {kind: gate, transport: {kind: plugin, target: acme/boom}}}\n`;
    const applied = await call("/config/apply", "POST", { yaml });
    expect(applied.status).toBe(400);
    expect(applied.body.error.message).toContain("hooks.a-missing: plugin acme/missing: not installed");
    expect(applied.body.error.message).toContain("hooks.b-boom: plugin acme/boom@1.0.0: importing index.js failed: boom at import");
    expect(await version()).toBe(v);
    expect((await call("/hooks")).body.map((h: { name: string }) => h.name)).not.toContain("a-missing");
    expect(await lastAudit()).toMatchObject({ action: "config.apply", outcome: "rejected" });
  });

  test("POST /config/reload of a file that adds an unloadable hook: 400 naming it, the running config stays", async () => {
    const v = await version();
    const file = join(gw.dir, "gateway.test.yaml");
    await Bun.write(file, `${config}hooks: {tapper: {kind: gate, transport: {kind: plugin, target: acme/tap-only}}}\n`);
    try {
      const reloaded = await call("/config/reload", "POST");
      expect(reloaded.status).toBe(400);
      expect(reloaded.body.error.message).toContain("hooks.tapper: the gate instance has no gate() member");
      expect(await version()).toBe(v);
      expect(await lastAudit()).toMatchObject({ action: "config.reload", outcome: "rejected" });
    } finally {
      await Bun.write(file, config);
    }
  });

  test("a boot whose hook cannot be loaded exits 1 with one error line naming it", async () => {
    const dir = tempDir();
    await writeInstalled(join(dir, "plugins"), { publisher: acme, name: "boom", files: { "index.js": MODULES.boom! } });
    const path = join(dir, "gateway.yaml");
    await Bun.write(path, `${config}hooks: {guard: {kind: gate, transport: {kind: plugin, target: acme/boom}}}\n`);
    const run = await runGateway(["--config", path], { cwd: dir, env: { GW_ADMIN: TOKEN } });
    expect(run.code).toBe(1);
    const errors = run.stderr.split("\n").filter((line) => line.includes('"level":"error"') || line.includes("ERROR"));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain("hooks.guard: plugin acme/boom@1.0.0: importing index.js failed: boom at import");
    expect(run.stderr).not.toContain("gateway started");
  });
});

describe("a good signed plugin", () => {
  test("registers (schema, health) and gates the next request", async () => {
    const put = await call("/hooks/blocker", "PUT", { ...gate("acme/blocker", { word: "forbidden" }), global: true });
    expect(put.status).toBe(200);
    expect((await call("/hooks/blocker/health")).body).toMatchObject({ reachable: true, detail: null });
    const chat = (text: string) =>
      fetch(`${gw.data}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "mock-1", messages: [{ role: "user", content: text }] }) });
    expect((await chat("hello")).status).toBe(200);
    const blocked = await chat("a forbidden word");
    expect(blocked.status).toBe(403);
    expect(JSON.stringify(await blocked.json())).toContain("blocked by blocker");
  });
});
