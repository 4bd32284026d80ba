// One process per store and per address: a second gateway on a taken address, or on a store a live
// gateway holds, refuses to start with one clear line, and the first keeps serving with its store intact.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { LISTEN_ANY, runGateway, startGateway, tempDir, type RunningGateway } from "../support/gateway.ts";

const POOL = `providers: {local: {protocol: mock}}
models: {mock-1: {provider: local}}
pools: {default: {members: [{model: mock-1}]}}
`;
const storeAt = (path: string) => `store: {module: sqlite, settings: {path: ${path}}}\n`;
const hostPort = (url: string) => new URL(url).host;
const records = (stderr: string) => stderr.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as Record<string, unknown>);
const chat = (base: string) =>
  fetch(`${base}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "default", messages: [{ role: "user", content: "still me" }] }) });

/** Boots a second gateway from its own folder; it must exit 1 without serving. */
async function secondRefused(yaml: string) {
  const dir = tempDir();
  await Bun.write(join(dir, "gateway.yaml"), yaml);
  const result = await runGateway(["--config", join(dir, "gateway.yaml")], { cwd: dir });
  expect(result.code).toBe(1);
  expect(result.stderr).not.toContain('"gateway started"');
  return records(result.stderr);
}

describe("a second gateway beside a running one", () => {
  let first: RunningGateway;
  let store: string;
  beforeAll(async () => {
    const dir = tempDir();
    store = join(dir, "state/gateway.db");
    first = await startGateway(`${LISTEN_ANY}${storeAt(store)}${POOL}`, { dir });
  });
  afterAll(() => first.stop());

  test("on the data plane's address: refused, naming the listener and the address", async () => {
    const logs = await secondRefused(`listen: ${hostPort(first.data)}\nadmin_listen: 127.0.0.1:0\n${storeAt("./own.db")}${POOL}`);
    expect(logs.some((r) => r.msg === "cannot start the data listener; not starting" && r.address === hostPort(first.data))).toBe(true);
  });

  test("on the admin plane's address: refused, naming the listener and the address", async () => {
    const logs = await secondRefused(`listen: 127.0.0.1:0\nadmin_listen: ${hostPort(first.admin)}\n${storeAt("./own.db")}${POOL}`);
    expect(logs.some((r) => r.msg === "cannot start the admin listener; not starting" && r.address === hostPort(first.admin))).toBe(true);
  });

  test("on the same sqlite store, other ports: refused before it reads or writes the store", async () => {
    const logs = await secondRefused(`${LISTEN_ANY}${storeAt(store)}${POOL}`);
    const refusal = logs.find((r) => r.msg === "store unavailable; not starting");
    expect(String(refusal?.error)).toBe(`store ${store} is in use by another running gateway (it holds ${store}.lock); stop it, or give this one its own store.settings.path`);
  });

  test("the first still answers every request, and reading its store (--verify-audit) is not held up", async () => {
    const reply = await chat(first.data);
    expect(((await reply.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toBe("mock: still me");
    const dir = tempDir();
    await Bun.write(join(dir, "gateway.yaml"), `${LISTEN_ANY}${storeAt(store)}`);
    const verified = await runGateway(["--verify-audit", "--config", join(dir, "gateway.yaml")], { cwd: dir });
    expect(verified.stdout).toStartWith("audit log intact");
    expect(verified.code).toBe(0);
  });
});

describe("the store's lock goes with its process", () => {
  test("after a clean stop, and after kill -9, the next gateway starts on the same store", async () => {
    const dir = tempDir();
    const config = `${LISTEN_ANY}${storeAt("./gateway.db")}${POOL}`;
    const first = await startGateway(config, { dir });
    expect(await first.stop("SIGTERM")).toBe(0);
    const second = await startGateway(config, { dir });
    expect((await chat(second.data)).status).toBe(200);
    second.proc.kill("SIGKILL");
    await second.proc.exited;
    // No stale lock to clear by hand: the kill released it; the next run says the last one was unclean.
    const third = await startGateway(config, { dir });
    try {
      expect((await chat(third.data)).status).toBe(200);
      expect(third.logs.some((l) => l.includes("previous run did not stop cleanly"))).toBe(true);
    } finally {
      expect(await third.stop()).toBe(0);
    }
  });
});
