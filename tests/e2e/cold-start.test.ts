// The cold-start fixture of issue 15 (six providers, twenty models, governance) boots and serves, and the
// admin router, built on first use or shortly after the listeners are up, answers in full from the very
// first admin request (its route table decides a bodyless mutation's refusal).
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
});
