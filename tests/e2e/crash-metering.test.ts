// What a crash may lose, on the built binary (issue 22 class 6), beyond limits-hardening.test.ts's
// request cap: kill -9 200 ms after a burst of completed streams (OpenAI and Anthropic) loses none of
// their requests or tokens, and token and budget windows filled before the crash are still full after
// it; the boot line after an unclean stop is there, and none follows a clean stop or POST /restart.
import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { json, startGateway, type RunningGateway } from "../support/gateway.ts";
import { ANTHROPIC_DEFAULT_KEY, startAnthropicUpstream } from "../support/upstreams/anthropic.ts";
import { OPENAI_DEFAULT_KEY, startOpenAIUpstream } from "../support/upstreams/openai.ts";

const ENV = { GW_SIGNING_KEY: "e2e-crash-metering-signing-6d2a", GW_ADMIN: "e2e-crash-metering-admin-c40e" };
const openai = startOpenAIUpstream();
const anthropic = startAnthropicUpstream();
afterAll(async () => {
  await openai.stop();
  await anthropic.stop();
});

const config = (listen = "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0") => `${listen}
store: {module: sqlite, settings: {path: ./state/gateway.db}}
security: {admin_rate_limit: {per_second: 1000, burst: 10000}}
providers:
  oai: {protocol: openai, base_url: "${openai.baseURL}", api_key: ${OPENAI_DEFAULT_KEY}}
  ant: {protocol: anthropic, base_url: "${anthropic.baseURL}", api_key: ${ANTHROPIC_DEFAULT_KEY}}
models:
  gpt: {provider: oai, model: gpt-test}
  claude: {provider: ant, model: claude-test}
rate_card:
  gpt: {input: 1000000, output: 1000000}
auth:
  chain: [keys]
  signing_key: {env: GW_SIGNING_KEY}
  admin_auth: [admin-tokens]
  admin_tokens: [{token: {env: GW_ADMIN}}]
groups:
  streams: {limits: [{window: day, requests: 100000}]}
  tok: {limits: [{window: day, tokens: 300}]}
  budget: {limits: [{window: day, budget_cents: 300}]}
`;

const admin = (g: RunningGateway, path: string, init: RequestInit = {}) =>
  fetch(`${g.admin}${path}`, { ...init, headers: { "x-admin-token": ENV.GW_ADMIN, "content-type": "application/json", ...init.headers } });
async function mint(g: RunningGateway, group: string): Promise<{ id: string; token: string }> {
  const response = await admin(g, "/keys", { method: "POST", body: JSON.stringify({ name: `k-${group}`, group }) });
  expect(response.status).toBe(201);
  return json(response);
}

const TEXT = "a sentence long enough to count some tokens in the usage of a stream";
const chat = (g: RunningGateway, token: string, stream: boolean) =>
  fetch(`${g.data}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt", stream, ...(stream ? { stream_options: { include_usage: true } } : {}), messages: [{ role: "user", content: TEXT }] }),
  });

/** One OpenAI stream that shows its usage to the client: the tokens it was charged. */
async function openaiStream(g: RunningGateway, token: string): Promise<number> {
  const text = await (await chat(g, token, true)).text();
  return Number(text.match(/"total_tokens":(\d+)/)![1]);
}

/** One Anthropic stream: input from message_start, output from the last message_delta. */
async function anthropicStream(g: RunningGateway, token: string): Promise<number> {
  const response = await fetch(`${g.data}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": token, "anthropic-version": "2023-06-01", "content-type": "application/json" },
    body: JSON.stringify({ model: "claude", stream: true, max_tokens: 256, messages: [{ role: "user", content: TEXT }] }),
  });
  const text = await response.text();
  const last = (pattern: RegExp) => Number([...text.matchAll(pattern)].at(-1)![1]);
  return last(/"input_tokens":(\d+)/g) + last(/"output_tokens":(\d+)/g);
}

/** Requests until one is refused: the refusal. */
async function fill(g: RunningGateway, token: string): Promise<Response> {
  for (let i = 0; i < 100; i++) {
    const response = await chat(g, token, false);
    if (response.status !== 200) return response;
    await response.arrayBuffer();
  }
  throw new Error("never refused");
}

const unclean = (g: RunningGateway) => g.logs.filter((line) => line.includes("previous run did not stop cleanly"));

describe("kill -9 200 ms after the last answer", () => {
  test("a burst of completed streams is all in the ledger after the restart, and filled token and budget windows stay full", async () => {
    const g = await startGateway(config(), { env: ENV });
    let restarted: RunningGateway | undefined;
    try {
      const streams = await mint(g, "streams");
      const tok = await mint(g, "tok");
      const budget = await mint(g, "budget");
      expect((await fill(g, tok.token)).status).toBe(429);
      expect((await json(await fill(g, budget.token))).error.code).toBe("insufficient_quota");
      const charged = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? openaiStream(g, streams.token) : anthropicStream(g, streams.token))));
      const tokens = charged.reduce((a, b) => a + b, 0);
      expect(tokens).toBeGreaterThan(40 * 10);
      await Bun.sleep(200);
      expect(await g.stop("SIGKILL")).not.toBe(0);

      restarted = await startGateway(config(), { env: ENV, dir: g.dir });
      expect(unclean(restarted)).toHaveLength(1);
      const usage = await json(await admin(restarted, `/keys/${streams.id}/usage`));
      expect({ requests: usage.requests, tokens: usage.tokens }).toEqual({ requests: 40, tokens });
      const tokRefusal = await chat(restarted, tok.token, false);
      expect(tokRefusal.status).toBe(429);
      expect((await json(tokRefusal)).error.message).toContain("300 tokens per day");
      const budgetRefusal = await chat(restarted, budget.token, false);
      expect(budgetRefusal.status).toBe(429);
      expect((await json(budgetRefusal)).error.code).toBe("insufficient_quota");
    } finally {
      await restarted?.stop();
      await g.stop();
    }
  }, 20_000);
});

describe("kill -9 under load", () => {
  test("every request that ended more than 200 ms before the kill is in the ledger, with its tokens", async () => {
    const g = await startGateway(config(), { env: ENV });
    let restarted: RunningGateway | undefined;
    try {
      const streams = await mint(g, "streams");
      const ended: { at: number; tokens: number }[] = [];
      let killing = false;
      const clients = Array.from({ length: 32 }, async (_, i) => {
        while (!killing) {
          try {
            const tokens = i % 2 ? await openaiStream(g, streams.token) : await anthropicStream(g, streams.token);
            ended.push({ at: Date.now(), tokens });
          } catch {
            return; // the kill cut it
          }
        }
      });
      await Bun.sleep(1_500);
      killing = true;
      const killedAt = Date.now();
      g.proc.kill("SIGKILL");
      await g.proc.exited;
      await Promise.all(clients);
      const safe = ended.filter((e) => e.at < killedAt - 200);
      expect(safe.length).toBeGreaterThan(50);

      restarted = await startGateway(config(), { env: ENV, dir: g.dir });
      const usage = await json(await admin(restarted, `/keys/${streams.id}/usage`));
      expect(usage.requests).toBeGreaterThanOrEqual(safe.length);
      expect(usage.tokens).toBeGreaterThanOrEqual(safe.reduce((sum, e) => sum + e.tokens, 0));
    } finally {
      await restarted?.stop();
      await g.stop();
    }
  }, 20_000);
});

describe("no boot line after a clean stop", () => {
  test("after SIGTERM, and after POST /restart", async () => {
    const ports: number[] = [];
    for (let i = 0; i < 2; i++) {
      const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
      ports.push(probe.port!);
      void probe.stop(true);
    }
    const listen = `listen: 127.0.0.1:${ports[0]}\nadmin_listen: 127.0.0.1:${ports[1]}`;
    const g = await startGateway(config(listen), { env: ENV });
    let again: RunningGateway | undefined;
    try {
      const { token } = await mint(g, "streams");
      await openaiStream(g, token);
      expect(await g.stop()).toBe(0);
      again = await startGateway(config(listen), { env: ENV, dir: g.dir });
      expect(unclean(again)).toEqual([]);
      await openaiStream(again, token);

      expect((await admin(again, "/restart", { method: "POST" })).status).toBe(202);
      expect(await again.proc.exited).toBe(0);
      // The successor shares stderr: its boot lines land in the same log.
      const before = again.logs.length;
      const deadline = Date.now() + 10_000;
      let up = false;
      while (!up && Date.now() < deadline) {
        up = await fetch(`${again.data}/v1/models`).then((r) => r.status < 500, () => false);
        if (!up) await Bun.sleep(100);
      }
      expect(up).toBe(true);
      expect(again.logs.length).toBeGreaterThan(before);
      expect(unclean(again)).toEqual([]);
      // The stream before the restart is metered once.
      expect((await json(await admin(again, "/usage/keys"))).items[0].requests).toBe(2);
    } finally {
      // The successor is not our child: found by its config path, stopped by its pid.
      const pids = Bun.spawnSync(["sh", "-c", `ps -eo pid,args | grep '${join(g.dir, "gateway.test.yaml")}' | grep -v grep | awk '{print $1}'`]).stdout.toString().trim().split("\n").filter(Boolean);
      for (const pid of pids) process.kill(Number(pid), "SIGTERM");
      await again?.stop();
      await g.stop();
    }
  }, 20_000);
});
