// limits.max_inbound_concurrent on the built binary: past the cap a model request is refused at once
// (503 + Retry-After: 1, in the caller's protocol), and every slot comes back when its request ends,
// streamed answers included. (A client leaving mid-stream releases through the same stream ticket as the
// group concurrency caps, whose e2e test in groups.test.ts covers it.)
import { afterAll, beforeAll, expect, test } from "bun:test";
import { json, LISTEN_ANY, startGateway, type RunningGateway } from "../support/gateway.ts";

let gw: RunningGateway;
beforeAll(async () => {
  gw = await startGateway(`${LISTEN_ANY}store: {module: sqlite, settings: {path: ":memory:"}}
limits: {max_inbound_concurrent: 2}
providers:
  slow: {protocol: mock, latency_ms: 400}
models:
  slow-1: {provider: slow}
auth: {chain: []}
`);
});
afterAll(async () => {
  await gw?.stop();
});

const chat = (stream = false) =>
  fetch(`${gw.data}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "slow-1", stream, messages: [{ role: "user", content: "hi" }] }) });

test("a third request while two are in flight is refused at once with 503 and Retry-After: 1; the slots come back", async () => {
  const first = chat();
  const second = chat();
  await Bun.sleep(100);
  const startedAt = performance.now();
  const third = await chat();
  expect(performance.now() - startedAt).toBeLessThan(300);
  expect(third.status).toBe(503);
  expect(third.headers.get("retry-after")).toBe("1");
  expect(((await json(third)) as { error: { message: string } }).error.message).toContain("max_inbound_concurrent");
  expect((await first).status).toBe(200);
  expect((await second).status).toBe(200);
  expect((await chat()).status).toBe(200);
});

test("streamed answers hold their slots while in flight and give them back when they end", async () => {
  const streams = [chat(true), chat(true)];
  await Bun.sleep(100);
  expect((await chat()).status).toBe(503);
  for (const stream of await Promise.all(streams)) {
    expect(stream.status).toBe(200);
    expect(await stream.text()).toContain("data: [DONE]");
  }
  await Bun.sleep(50);
  const after = await Promise.all([chat(), chat()]);
  expect(after.map((r) => r.status)).toEqual([200, 200]);
});
