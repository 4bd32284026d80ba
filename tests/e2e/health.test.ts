// Active health probes on the built binary: a lane whose breaker tripped is probed with a one-token
// request and, once it answers, serves again before its cooldown would have ended.
import { afterAll, expect, test } from "bun:test";
import OpenAI from "openai";
import { json, LISTEN_ANY, startGateway } from "../support/gateway.ts";
import { OPENAI_DEFAULT_KEY, startOpenAIUpstream } from "../support/upstreams/openai.ts";

const up = startOpenAIUpstream();
afterAll(() => up.stop());

test("dead mode: a tripped lane is probed, closes on success, and serves again", async () => {
  const gw = await startGateway(`${LISTEN_ANY}
providers:
  oai: {protocol: openai, base_url: "${up.baseURL}", api_key: ${OPENAI_DEFAULT_KEY}, health: {mode: dead, interval_secs: 1, timeout_secs: 1}}
models:
  gpt: {provider: oai, model: gpt-4o-mini}
pools:
  chat: {members: [{model: gpt}], breaker: {consecutive_n: 2, base_cooldown_secs: 600, max_cooldown_secs: 600}}
`);
  try {
    const client = new OpenAI({ apiKey: "k", baseURL: `${gw.data}/v1`, maxRetries: 0 });
    const ask = () => client.chat.completions.create({ model: "chat", messages: [{ role: "user", content: "hi" }] }).then(() => 200, (e: { status?: number }) => e.status);
    const member = async () => (await json(await fetch(`${gw.data}/stats`))).pools.chat.members[0];

    up.script({ error: { status: 500 }, times: 2 });
    expect(await ask()).toBe(500);
    // The first failure armed a short cooldown (about 1 s); the second, once it passed, trips the cell.
    await Bun.sleep(1200);
    expect(await ask()).toBe(500);
    expect(await member()).toMatchObject({ state: "open", usable: false });
    expect(await ask()).toBe(503);

    // Probes tick each second after the first (skipped) tick: the lane closes within a few seconds,
    // long before its 600 s cooldown.
    const deadline = Date.now() + 6000;
    while ((await member()).state !== "closed" && Date.now() < deadline) await Bun.sleep(200);
    expect(await member()).toMatchObject({ state: "closed", usable: true, streak: 0 });
    const probes = up.requests.filter((r) => (r.body as { max_completion_tokens?: number; max_tokens?: number }).max_completion_tokens === 1 || (r.body as { max_tokens?: number }).max_tokens === 1);
    expect(probes.length).toBeGreaterThanOrEqual(1);
    expect(probes[0]!.headers.authorization).toBe(`Bearer ${OPENAI_DEFAULT_KEY}`);
    expect(await ask()).toBe(200);
    const lane = (await json(await fetch(`${gw.data}/stats`))).lanes.find((l: { lane: string }) => l.lane === "gpt");
    expect(lane.ok).toBeGreaterThanOrEqual(2); // the probe and the request after it
  } finally {
    await gw.stop();
  }
}, 20_000);
