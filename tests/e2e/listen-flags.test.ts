// One-flag start: --listen / --admin-listen / --port and GATEWAY_LISTEN / GATEWAY_ADMIN_LISTEN move the
// listeners off the config's addresses (flag over variable over file), port 0 picks a free port the
// "gateway started" line names, bad values stop the binary with exit 2, and reloads and applies keep the
// command line's addresses without a spurious "take effect on restart".
import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { blocksUnder } from "../support/doc-blocks.ts";
import { LISTEN_ANY, ROOT, json, runGateway, startGateway, tempDir, type RunningGateway } from "../support/gateway.ts";

/** Both listeners on port 0 and the mock behind the `default` pool: the command line moves them. */
const CONFIG = `${LISTEN_ANY}providers: {local: {protocol: mock}}
models: {mock-1: {provider: local}}
pools: {default: {members: [{model: mock-1}]}}
`;

const running: RunningGateway[] = [];
afterAll(async () => {
  await Promise.all(running.map((gw) => gw.stop()));
});

async function start(...args: Parameters<typeof startGateway>): Promise<RunningGateway> {
  const gw = await startGateway(...args);
  running.push(gw);
  return gw;
}

/** A port nothing listens on right now (the OS's pick, released at once). */
function freePort(): number {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const { port } = probe;
  probe.stop(true);
  return port;
}

const chat = (data: string) =>
  fetch(`${data}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "default", messages: [{ role: "user", content: "ping" }] }) });

describe("one-flag start", () => {
  test("--listen 127.0.0.1:0 on the embedded default: the log line names the bound ports, and they answer", async () => {
    const gw = await start(undefined, { args: ["--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"] });
    expect(gw.data).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(gw.data).not.toEndWith(":0");
    expect(gw.data).not.toEndWith(":8080");
    expect((await chat(gw.data)).status).toBe(200);
    expect((await fetch(`${gw.admin}/info`)).status).toBe(200);
  });

  test("GATEWAY_LISTEN beats the file's listen; --listen beats GATEWAY_LISTEN; --port keeps the host in force", async () => {
    const [fromEnv, fromFlag, fromPort] = [freePort(), freePort(), freePort()];
    const env = await start(CONFIG, { env: { GATEWAY_LISTEN: `127.0.0.1:${fromEnv}` } });
    expect(env.data).toBe(`http://127.0.0.1:${fromEnv}`);
    expect((await chat(env.data)).status).toBe(200);

    const flag = await start(CONFIG, { env: { GATEWAY_LISTEN: `127.0.0.1:${fromEnv}` }, args: ["--listen", `127.0.0.1:${fromFlag}`] });
    expect(flag.data).toBe(`http://127.0.0.1:${fromFlag}`);

    const port = await start(CONFIG, { args: ["--port", String(fromPort)] });
    expect(port.data).toBe(`http://127.0.0.1:${fromPort}`);
    expect((await chat(port.data)).status).toBe(200);
  });

  test("bad values exit 2 naming the flag or variable; --check checks the config with the command line merged", async () => {
    const cases: [string[], Record<string, string>, string][] = [
      [["--listen", "8080"], {}, 'gateway: --listen: expected an address host:port (IPv6 as [::1]:port), got "8080"'],
      [["--admin-listen", "127.0.0.1:70000"], {}, "gateway: --admin-listen: port 70000 is above 65535"],
      [["--port", "-1"], {}, "gateway: "],
      [["--port", "eighty"], {}, 'gateway: --port: expected a port number 0-65535, got "eighty"'],
      [["--listen", "127.0.0.1:1", "--port", "2"], {}, "gateway: --listen and --port both set the data-plane address: give one"],
      [[], { GATEWAY_ADMIN_LISTEN: "admin.internal" }, "gateway: GATEWAY_ADMIN_LISTEN: expected an address host:port (IPv6 as [::1]:port), got the value of ${GATEWAY_ADMIN_LISTEN} (not shown)"],
    ];
    for (const [args, env, message] of cases) {
      const run = await runGateway(args, { env });
      expect({ args, code: run.code, stderr: run.stderr }).toMatchObject({ args, code: 2, stderr: expect.stringContaining(message) });
      expect(run.stderr).toContain("Run gateway --help for the options.");
      expect(run.stderr).not.toContain("admin.internal");
    }
    const help = await runGateway(["--help"]);
    expect(help.stdout).toContain("--listen HOST:PORT       data-plane address (default: $GATEWAY_LISTEN, else the config's listen)");
    expect(help.stdout).toContain("A flag beats its variable, which beats the\n                           config file");
    // The embedded default's open admin plane is fine on loopback only: moving it off is refused.
    const open = await runGateway(["--check", "--admin-listen", "0.0.0.0:0"]);
    expect(open.code).toBe(1);
    expect(open.stderr).toContain("admin_listen: 0.0.0.0:0 is not loopback");
    const ok = await runGateway(["--check", "--port", "0"], { env: { GATEWAY_ADMIN_LISTEN: "127.0.0.1:0" } });
    expect(ok).toMatchObject({ code: 0, stdout: "config ok: embedded default\n" });
    // A port the schema's pattern let through is refused at --check, not only when binding fails.
    const dir = tempDir();
    writeFileSync(join(dir, "gateway.yaml"), "listen: 127.0.0.1:99999\n");
    const high = await runGateway(["--check"], { cwd: dir });
    expect(high.code).toBe(1);
    expect(high.stderr).toContain("listen: port 99999 is above 65535");
  });

  test("reload and apply keep the command line's addresses; a settings PUT of an overridden member does not ask for a restart", async () => {
    const port = freePort();
    const gw = await start(CONFIG, { args: ["--port", String(port), "--admin-listen", "127.0.0.1:0"] });
    const admin = (path: string, method: string, body?: unknown) =>
      fetch(`${gw.admin}${path}`, { method, headers: { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });

    expect((await admin("/config/reload", "POST")).status).toBe(200);
    // The file's admin_listen alone would be an open admin plane off loopback; the command line keeps it on loopback.
    const applied = await admin("/config/apply", "POST", { yaml: "listen: 0.0.0.0:8080\nadmin_listen: 0.0.0.0:8081\nproviders: {local: {protocol: mock}}\nmodels: {mock-1: {provider: local}}\npools: {default: {members: [{model: mock-1}]}}\n" });
    expect({ status: applied.status, body: await json(applied) }).toMatchObject({ status: 200, body: { applied: true } });

    const put = await admin("/config/settings", "PUT", { listen: "127.0.0.1:1", limits: { shutdown_drain_secs: 5 } });
    const answer = await json(put);
    expect(put.status).toBe(200);
    expect(answer.reload_to_apply).toEqual([]);
    expect(answer.note).toContain("listen stay as this process's command line sets them");

    const moved = await admin("/config/settings", "PUT", { admin_listen: "127.0.0.1:2" });
    expect((await json(moved)).reload_to_apply).toEqual([]);
    expect(gw.data).toBe(`http://127.0.0.1:${port}`);
    expect((await chat(gw.data)).status).toBe(200);
  });

  test("operations.md's commands, as printed (9000 made a free port; the admin plane kept off the shared 8081)", async () => {
    const [block] = blocksUnder(ROOT, "docs/operations.md", "Addresses from the command line");
    const lines = block!.text.trim().split("\n").map((line) => line.replace(/\s+#.*$/, "").trim());
    expect(lines).toHaveLength(3);
    for (const line of lines) {
      const port = String(freePort());
      const words = line.replaceAll("9000", port).split(/\s+/);
      const env: Record<string, string> = { GATEWAY_ADMIN_LISTEN: "127.0.0.1:0" };
      while (words[0]!.includes("=")) {
        const [name, value] = words.shift()!.split("=") as [string, string];
        env[name] = value;
      }
      expect(words.shift()).toBe("gateway");
      const gw = await start(undefined, { env, args: words });
      if (line.includes("9000")) expect(gw.data).toBe(`http://127.0.0.1:${port}`);
      else expect(gw.data).toMatch(/^http:\/\/127\.0\.0\.1:(?!0$|8080$)\d+$/);
      expect((await chat(gw.data)).status).toBe(200);
      await gw.stop();
    }
  });
});
