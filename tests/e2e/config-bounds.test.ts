// Numbers no operator means are refused with their path (issue 22 class 11: client input never answers
// 500, nor is it stored to misbehave later): 1e300 seconds of drain made setTimeout fire at once, and
// such values were stored through PUT /config/settings and POST /config/apply. On the built binary.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { json, LISTEN_ANY, runGateway, startGateway, tempDir, type RunningGateway } from "../support/gateway.ts";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const CONFIG = `${LISTEN_ANY}
store: {module: sqlite, settings: {path: ":memory:"}}
providers:
  local: {protocol: mock}
models:
  mock-1: {provider: local}
pools:
  chat: {members: [{model: mock-1}]}
`;

let gw: RunningGateway;
beforeAll(async () => {
  gw = await startGateway(CONFIG);
});
afterAll(async () => {
  await gw?.stop();
});

const put = (body: unknown) => fetch(`${gw.admin}/config/settings`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

const HUGE: readonly [string, unknown][] = [
  ["limits.shutdown_drain_secs", { limits: { shutdown_drain_secs: 1e300 } }],
  ["limits.upstream_request_timeout_secs", { limits: { upstream_request_timeout_secs: 1e300 } }],
  ["limits.max_inbound_concurrent", { limits: { max_inbound_concurrent: 1e300 } }],
  ["limits.max_upstream_response_bytes", { limits: { max_upstream_response_bytes: 1e300 } }],
  ["security.max_body_bytes", { security: { max_body_bytes: 1e300 } }],
  ["security.admin_rate_limit.burst", { security: { admin_rate_limit: { burst: 1e300 } } }],
  ["routing.breaker.base_cooldown_secs", { routing: { breaker: { base_cooldown_secs: 1e300 } } }],
  ["routing.failover.timeout_secs", { routing: { failover: { timeout_secs: 1e300 } } }],
  ["routing.failover.max_hops", { routing: { failover: { max_hops: 1e300 } } }],
];

test.each(HUGE)("PUT /config/settings refuses %s = 1e300 with its path, and stores nothing", async (path, body) => {
  const before = await json(await fetch(`${gw.admin}/config/settings`));
  const answer = await put(body);
  expect(answer.status).toBe(400);
  const error = ((await json(answer)) as { error: { code: string; message: string } }).error;
  expect(error.code).toBe("invalid_request");
  expect(error.message).toContain(path);
  expect(await json(await fetch(`${gw.admin}/config/settings`))).toEqual(before);
});

test("a sensible value at the edge is still taken", async () => {
  const answer = await put({ limits: { shutdown_drain_secs: 86400 } });
  expect(answer.status).toBe(200);
});

test("gateway --check refuses the same numbers in a file, naming the path", async () => {
  const dir = tempDir();
  const file = join(dir, "gateway.yaml");
  writeFileSync(file, `${CONFIG}limits:\n  shutdown_drain_secs: 1e300\nrate_card:\n  mock-1: {input: 1e300, output: 1}\n`);
  const run = await runGateway(["--check", "--config", file]);
  expect(run.code).not.toBe(0);
  const out = run.stdout + run.stderr;
  expect(out).toContain("limits.shutdown_drain_secs");
  expect(out).toContain("rate_card.mock-1.input");
});

test("a referenced secret file that is a device, a pipe or too large is refused at once, naming the path", async () => {
  const dir = tempDir();
  const big = join(dir, "big.key");
  writeFileSync(big, "k".repeat(1024 * 1024 + 1));
  for (const file of ["/dev/zero", "/dev/stdin", big]) {
    const config = { providers: { local: { protocol: "mock" }, up: { protocol: "openai", base_url: "http://127.0.0.1:9/v1", api_key: { file } } }, models: { "mock-1": { provider: "local" } }, pools: { chat: { members: [{ model: "mock-1" }] } } };
    const started = performance.now();
    const answer = await fetch(`${gw.admin}/config/apply`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ config }) });
    expect(performance.now() - started).toBeLessThan(2000);
    expect(answer.status).toBe(400);
    const message = ((await json(answer)) as { error: { message: string } }).error.message;
    expect(message).toContain("providers.up.api_key");
    expect(message).toMatch(file === big ? /larger than 1048576 bytes/ : /not a regular file/);
  }
  // Nothing was applied: the pool still serves from the mock.
  const served = await fetch(`${gw.data}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "chat", messages: [{ role: "user", content: "hi" }] }) });
  expect(served.status).toBe(200);
});
