// What the systemd unit (packaging/gateway.service) relies on, on the built binary: SIGHUP (`systemctl
// reload`) re-reads the config file like POST /config/reload, audited with the signal as its principal; a
// broken file keeps the running config, logs each error with its path and the process keeps serving;
// with the embedded default there is no file and the log says so; and POST /restart under systemd
// (INVOCATION_ID set) exits with the status the unit's RestartForceExitStatus= names, starting nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { baseEnv, ensureBinary, json, LISTEN_ANY, startGateway, tempDir, type RunningGateway } from "../support/gateway.ts";
import { until } from "../support/until.ts";

const ENV = { GW_ADMIN: "service-signals-admin-token-9f8e" };
const BODY = `store: {module: sqlite, settings: {path: ./gateway.db}}
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
const CONFIG = `${LISTEN_ANY}${BODY}`;
const WITH_POOL = `${CONFIG.replace("pools:\n", "pools:\n  reloaded: {members: [{model: mock-1}]}\n")}`;

type Record_ = { msg: string; level: string; [field: string]: unknown };
const records = (gw: RunningGateway): Record_[] =>
  gw.logs.flatMap((line) => {
    try {
      return [JSON.parse(line) as Record_];
    } catch {
      return [];
    }
  });
const logged = (gw: RunningGateway, msg: string) => records(gw).filter((r) => r.msg === msg);

const admin = (gw: RunningGateway, path: string, init: RequestInit = {}) => fetch(`${gw.admin}${path}`, { ...init, headers: { "x-admin-token": ENV.GW_ADMIN, ...init.headers } });
const chat = (gw: RunningGateway, model: string) =>
  fetch(`${gw.data}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }) });
const version = async (gw: RunningGateway) => ((await json(await admin(gw, "/info"))) as { config_version: number }).config_version;

describe("SIGHUP reloads the config file", () => {
  let gw: RunningGateway;
  beforeAll(async () => {
    gw = await startGateway(CONFIG, { env: ENV });
  });
  afterAll(async () => {
    await gw?.stop();
  });

  test("a changed file is live after SIGHUP, as a new version audited under signal:SIGHUP", async () => {
    expect((await chat(gw, "reloaded")).status).toBe(404);
    const before = await version(gw);
    writeFileSync(join(gw.dir, "gateway.test.yaml"), WITH_POOL);
    gw.proc.kill("SIGHUP");
    await until(() => logged(gw, "config reloaded").length === 1);
    expect(logged(gw, "config reloaded")[0]).toMatchObject({ level: "info", signal: "SIGHUP", config: join(gw.dir, "gateway.test.yaml"), config_version: before + 1 });
    expect(await version(gw)).toBe(before + 1);
    expect((await chat(gw, "reloaded")).status).toBe(200);
    const audit = (await json(await admin(gw, "/audit?limit=1"))) as { items: { action: string; outcome: string; principal: string; resource: string }[] };
    expect(audit.items[0]).toMatchObject({ action: "config.reload", resource: "config", outcome: "applied", principal: "signal:SIGHUP" });
    const versions = (await json(await admin(gw, "/config/versions"))) as { items: { version: number; principal: string; summary: string }[] };
    expect(versions.items[0]).toMatchObject({ version: before + 1, principal: "signal:SIGHUP", summary: "config.reload" });
  });

  test("a broken file keeps the running config, logs each error with its path, and the process keeps serving", async () => {
    const before = await version(gw);
    writeFileSync(join(gw.dir, "gateway.test.yaml"), `${CONFIG}unknown_section: 1\nper_request_fee: -1\n`);
    gw.proc.kill("SIGHUP");
    await until(() => logged(gw, "config reload refused; still serving the running config").length === 1);
    const errors = logged(gw, "config reload error").map((r) => r.error as string);
    expect(errors.some((e) => e.startsWith("unknown_section:"))).toBe(true);
    expect(errors.some((e) => e.startsWith("per_request_fee:"))).toBe(true);
    // Both paths, and the pool the broken file drops, which is still served.
    expect(logged(gw, "config reload refused; still serving the running config")[0]).toMatchObject({ level: "error", signal: "SIGHUP", config_version: before, errors: errors.length });
    expect(gw.proc.exitCode).toBeNull();
    expect(await version(gw)).toBe(before);
    expect((await chat(gw, "reloaded")).status).toBe(200);
    const audit = (await json(await admin(gw, "/audit?limit=1"))) as { items: { action: string; outcome: string; principal: string }[] };
    expect(audit.items[0]).toMatchObject({ action: "config.reload", outcome: "rejected", principal: "signal:SIGHUP" });
  });

  test("a file that cannot be read is named, and changes nothing", async () => {
    const before = await version(gw);
    const path = join(gw.dir, "gateway.test.yaml");
    Bun.spawnSync(["rm", path]);
    gw.proc.kill("SIGHUP");
    await until(() => logged(gw, "config reload refused; still serving the running config").length === 2);
    expect(logged(gw, "config reload error").at(-1)).toMatchObject({ error: `cannot read config file ${path} (ENOENT)` });
    expect(await version(gw)).toBe(before);
    expect((await chat(gw, "reloaded")).status).toBe(200);
    // SIGTERM still drains and exits 0: the SIGHUP handler took nothing from it.
    expect(await gw.stop()).toBe(0);
  });
});

test("with the embedded default, SIGHUP logs that there is no file to reload and changes nothing", async () => {
  // The embedded default binds 127.0.0.1:8080 and :8081; another process on them makes this test moot.
  for (const port of [8080, 8081]) {
    const free = await fetch(`http://127.0.0.1:${port}/`).then(
      () => false,
      () => true,
    );
    if (!free) return console.warn(`SKIPPED: 127.0.0.1:${port} is in use, so the embedded default cannot start here`);
  }
  const dir = tempDir();
  const proc = Bun.spawn([ensureBinary()], { cwd: dir, env: baseEnv(), stdout: "ignore", stderr: "pipe", stdin: "ignore" });
  const lines: string[] = [];
  const reader = (async () => {
    for await (const chunk of proc.stderr) lines.push(...new TextDecoder().decode(chunk).split("\n").filter(Boolean));
  })();
  try {
    await until(() => lines.some((l) => l.includes('"gateway started"')), 10_000);
    proc.kill("SIGHUP");
    await until(() => lines.some((l) => l.includes("no config file to reload")));
    const record = JSON.parse(lines.find((l) => l.includes("no config file to reload"))!);
    expect(record).toMatchObject({ level: "warn", signal: "SIGHUP", config: "embedded default" });
    expect(proc.exitCode).toBeNull();
    expect((await fetch("http://127.0.0.1:8081/api/v1/admin/info").then((r) => r.json())) as object).toMatchObject({ config_version: 0 });
  } finally {
    proc.kill("SIGTERM");
    expect(await proc.exited).toBe(0);
    await reader;
  }
});

test("POST /restart under systemd exits 75 once drained and starts no successor itself", async () => {
  const gw = await startGateway(CONFIG, { env: { ...ENV, INVOCATION_ID: "0123456789abcdef0123456789abcdef" } });
  try {
    const restarting = await admin(gw, "/restart", { method: "POST" });
    expect(restarting.status).toBe(202);
    expect(await gw.proc.exited).toBe(75);
    // Nothing answers on the old ports: systemd, not the process, starts the next one.
    await Bun.sleep(300);
    expect(await fetch(`${gw.admin}/info`).then(() => "answered", () => "refused")).toBe("refused");
  } finally {
    await gw.stop();
  }
});

test("a stop by SIGTERM under systemd still exits 0, so Restart=on-failure leaves it stopped", async () => {
  const gw = await startGateway(CONFIG, { env: { ...ENV, INVOCATION_ID: "0123456789abcdef0123456789abcdef" } });
  expect(await gw.stop("SIGTERM")).toBe(0);
});
