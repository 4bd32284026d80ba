// The cold-start fixture of issue 15 (six providers, twenty models, governance) boots and serves, and the
// routers built on first use or shortly after the listeners are up answer in full from the very first
// request: the admin router (its route table decides a bodyless mutation's refusal) and the data plane's
// app (everything Bun's native routes do not take: /healthz, /v1/models, 405 with Allow). The log lines
// go out whole and in order, to the last one before the process exits. The binary starts with the JIT's
// tier-up thresholds raised and sets them back with the warm-up: it must serve on past that.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { json, ROOT, startGateway, tempDir, type RunningGateway } from "../support/gateway.ts";
import type { Upstream } from "../support/upstreams/common.ts";
import { startOpenAIUpstream } from "../support/upstreams/openai.ts";

const ADMIN_TOKEN = "admin-token-0123456789";
let upstream: Upstream;
let gw: RunningGateway;
beforeAll(async () => {
  upstream = startOpenAIUpstream();
  const dir = tempDir();
  const env = { DATA_PORT: "0", ADMIN_PORT: "0", STORE: join(dir, "gw.db"), UPSTREAM: upstream.url, UPSTREAM_KEY: upstream.apiKey, SIGNING_KEY: "s".repeat(48), ADMIN_TOKEN };
  gw = await startGateway(readFileSync(join(ROOT, "tests/fixtures/cold-start.yaml"), "utf8"), { env, dir });
});
afterAll(async () => {
  await gw?.stop();
  upstream?.stop();
});

const admin = (path: string, init: RequestInit = {}) => fetch(`${gw.admin}${path}`, { ...init, headers: { "x-admin-token": ADMIN_TOKEN, "content-type": "application/json", ...init.headers } });

describe("cold start", () => {
  test("the first data-plane requests the native routes do not take are answered by the whole app", async () => {
    const [health, wrongMethod, models] = await Promise.all([
      fetch(`${gw.data}/healthz`),
      fetch(`${gw.data}/v1/chat/completions`),
      fetch(`${gw.data}/v1/models`),
    ]);
    expect([health.status, await health.text()]).toEqual([200, "ok"]);
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get("allow")).toContain("POST");
    expect(((await json(wrongMethod)) as { error: { type: string } }).error.type).toBe("invalid_request_error");
    // The fixture's chain is [keys]: the model list, like a model call, needs one (listed past the warm-up).
    expect(models.status).toBe(401);
    expect(((await json(models)) as { error: { message: string } }).error.message).toBe("Invalid or missing API key.");
  });

  test("the first admin request, sent as soon as the listeners are up, is answered from the whole route table", async () => {
    const refused = await admin("/keys/key_0123/revoke", { method: "POST", body: '{"force": true}' });
    expect(refused.status).toBe(400);
    expect(((await json(refused)) as { error: { message: string } }).error.message).toContain("takes no request body");
    const document = (await json(await admin("/openapi.json"))) as { paths: Record<string, unknown> };
    expect(Object.keys(document.paths)).toContain("/api/v1/admin/keys/{id}/revoke");
  });

  test("the six-provider governance fixture serves a keyed chat request and refuses an unkeyed one", async () => {
    const minted = await admin("/keys", { method: "POST", body: JSON.stringify({ name: "cold", group: "eng-bench" }) });
    expect(minted.status).toBe(201);
    const { token } = (await json(minted)) as { token: string };
    const chat = (authorization?: string) =>
      fetch(`${gw.data}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json", ...(authorization && { authorization }) }, body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }) });
    const answered = await chat(`Bearer ${token}`);
    expect(answered.status).toBe(200);
    expect(((await json(answered)) as { object: string }).object).toBe("chat.completion");
    expect((await chat()).status).toBe(401);
  });

  test("past the warm-up (routers built, the JIT's normal tier-up policy back: build.ts starts it raised) it serves on", async () => {
    await Bun.sleep(150);
    expect(gw.proc.exitCode).toBeNull();
    expect((await admin("/openapi.json")).status).toBe(200);
    // Run-once code stays interpreted at start only: the same answer through code that has tiered up since.
    const minted = (await json(await admin("/keys", { method: "POST", body: JSON.stringify({ name: "warm", group: "eng-bench" }) }))) as { token: string };
    const models = await fetch(`${gw.data}/v1/models`, { headers: { authorization: `Bearer ${minted.token}` } });
    expect(models.status).toBe(200);
    const listed = ((await json(models)) as { data: { id: string }[] }).data.map((m) => m.id);
    expect(listed).toHaveLength(21); // twenty models and the pool `chat`
    expect(listed).toContain("chat");
    for (let i = 0; i < 300; i++) {
      const answered = await fetch(`${gw.data}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${minted.token}` }, body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }) });
      expect(answered.status).toBe(200);
      await answered.arrayBuffer();
    }
  });

  test("the log lines reach stderr whole and in order, the last ones written before the process exits", async () => {
    expect(await gw.stop()).toBe(0);
    const messages = gw.logs.map((line) => (JSON.parse(line) as { msg: string }).msg);
    expect(messages.indexOf("gateway started")).toBeGreaterThan(-1);
    expect(messages.slice(-2)).toEqual(["shutting down: draining in-flight requests", "stopped"]);
  });
});
