// Exporters are edited in the config file and made live by POST /plugins/reload (design/telemetry.md,
// "Reload"), on the built binary: the new instances run and the old ones are flushed and closed; an
// invalid file is a 400 naming every error with its path and the running exporters are kept; the config
// check refuses unknown settings, foreign streams and `fields`; PUT /config/settings refuses `export`.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { json, LISTEN_ANY, runGateway, startGateway, tempDir, type RunningGateway } from "../support/gateway.ts";
import { until } from "../support/until.ts";

const ENV = { GW_ADMIN: "e2e-exporters-reload-admin-31" };
const dir = tempDir("gw-exporters-");
const first = join(dir, "first.jsonl");
const second = join(dir, "second.jsonl");
const base = `${LISTEN_ANY}providers: {local: {protocol: mock}}\nmodels: {mock: {provider: local}}\nauth: {admin_auth: [admin-tokens], admin_tokens: [{token: {env: GW_ADMIN}}]}\n`;
const withExport = (yaml: string) => `${base}export:\n${yaml}`;
let gw: RunningGateway;

beforeAll(async () => {
  gw = await startGateway(withExport(`  requests: {module: file, settings: {path: "${first}"}}\n`), { env: ENV, dir });
});
afterAll(async () => {
  await gw?.stop();
});

const admin = (path: string, init: RequestInit = {}) => fetch(`${gw.admin}${path}`, { ...init, headers: { "x-admin-token": ENV.GW_ADMIN, "content-type": "application/json", ...init.headers } });
const ask = (id: string) => fetch(`${gw.data}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json", "x-request-id": id }, body: JSON.stringify({ model: "mock", messages: [{ role: "user", content: "hi" }] }) }).then((r) => r.text());
const ids = (path: string) => (existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l).request_id) : []);
const configFile = () => join(dir, "gateway.test.yaml");

describe("POST /plugins/reload", () => {
  test("swaps the exporters the file names: the old one flushed and closed, the new one running; audited", async () => {
    await ask("before-reload");
    writeFileSync(configFile(), withExport(`  moved: {module: file, settings: {path: "${second}"}}\n`));
    const reloaded = await admin("/plugins/reload", { method: "POST" });
    expect(reloaded.status).toBe(200);
    expect(await json(reloaded)).toEqual({ reloaded: true, exporters: [{ name: "moved", module: "file", streams: ["logs"] }] });
    // The old exporter was flushed when it was closed.
    expect(ids(first)).toContain("before-reload");
    await ask("after-reload");
    await until(() => ids(second).includes("after-reload"));
    expect(ids(first)).not.toContain("after-reload");
    const audit = (await json(await admin("/audit?limit=50"))).items as { action: string; resource: string; outcome: string }[];
    expect(audit.some((e) => e.action === "plugin.reload" && e.resource === "plugins" && e.outcome === "applied")).toBe(true);
  });

  test("an invalid file is a 400 naming every error with its path; the running exporters are kept", async () => {
    writeFileSync(configFile(), withExport(`  bad: {module: file, settings: {path: "${first}", colour: blue}}\n  worse: {module: webhook, streams: [traces], settings: {url: "http://127.0.0.1:9/x"}, fields: [model]}\n`));
    const refused = await admin("/plugins/reload", { method: "POST" });
    expect(refused.status).toBe(400);
    const message = (await json(refused)).error.message as string;
    for (const path of ["export.bad.settings.colour", "export.worse.streams[0]", "export.worse.fields"]) expect(message).toContain(path);
    await ask("still-second");
    await until(() => ids(second).includes("still-second"));
  });

  test("an exporter that cannot start (its listener's address taken) is a 400 naming it; nothing swapped", async () => {
    const taken = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("mine") });
    try {
      writeFileSync(configFile(), withExport(`  moved: {module: file, settings: {path: "${second}"}}\n  scrape: {module: prometheus, settings: {listen: "127.0.0.1:${taken.port}"}}\n`));
      const refused = await admin("/plugins/reload", { method: "POST" });
      expect(refused.status).toBe(400);
      expect((await json(refused)).error.message).toContain("export.scrape");
      await ask("after-failed-start");
      await until(() => ids(second).includes("after-failed-start"));
    } finally {
      taken.stop(true);
    }
  });

  test("no admin credential: 401", async () => {
    expect((await fetch(`${gw.admin}/plugins/reload`, { method: "POST" })).status).toBe(401);
  });
});

describe("export: is edited in the file only", () => {
  test("PUT /config/settings naming export is 400, saying what to do instead", async () => {
    const refused = await admin("/config/settings", { method: "PUT", body: JSON.stringify({ export: { x: { module: "file", settings: { path: "/tmp/x" } } } }) });
    expect(refused.status).toBe(400);
    expect((await json(refused)).error.message).toContain("POST /plugins/reload");
  });

  test("--check refuses unknown settings and missing required ones with their paths, and never shows a header's secret", async () => {
    const path = join(dir, "check.yaml");
    writeFileSync(path, withExport(`  t: {module: otlp, settings: {protocol: grpc, headers: {authorization: "Bearer literal-secret-value"}}}\n  w: {module: webhook, settings: {url: "http://h/x", batch_max: 0}}\n`));
    const checked = await runGateway(["--check", "--config", path], { env: ENV });
    expect(checked.code).not.toBe(0);
    const out = checked.stdout + checked.stderr;
    for (const expected of ["export.t.settings.endpoint", "export.t.settings.protocol", "export.w.settings.batch_max"]) expect(out).toContain(expected);
    expect(out).not.toContain("literal-secret-value");
  });
});
