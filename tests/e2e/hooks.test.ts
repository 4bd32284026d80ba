// Gate and tap hooks on the built binary, through the OpenAI and Anthropic SDKs: every verb decided by a
// policy server written here (the compiled-in http-gate), transforms by the compiled-in regex-redact
// reaching the upstream on the same-protocol and the translated path, a reject in each caller's own
// envelope with nothing dispatched, route order, a slow or broken gate taking its on_error, a hanging tap
// that does not delay the answer, the route-policy metrics and the x-gateway-route-policy header.
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { LISTEN_ANY, startGateway, type RunningGateway } from "../support/gateway.ts";
import { CLIENT_KEY } from "../support/sdk-clients.ts";
import { ANTHROPIC_DEFAULT_KEY, startAnthropicUpstream } from "../support/upstreams/anthropic.ts";
import { OPENAI_DEFAULT_KEY, startOpenAIUpstream } from "../support/upstreams/openai.ts";
import type { Upstream } from "../support/upstreams/common.ts";

const upA = startOpenAIUpstream();
const upB = startOpenAIUpstream();
const upC = startAnthropicUpstream();
const ups = [upA, upB, upC];

/** The policy: what it was asked, and a verb chosen from the last user text. */
const calls: any[] = [];
const taps: any[] = [];
const policy = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    const path = new URL(request.url).pathname;
    const body = (await request.json()) as any;
    if (path === "/tap") {
      taps.push(body);
      return new Promise<Response>(() => undefined); // a tap endpoint that never answers
    }
    if (path === "/broken") return new Response("no", { status: 500 });
    calls.push({ ...body, authorization: request.headers.get("authorization") });
    const text: string = body.prompt?.messages?.at(-1)?.text ?? "";
    if (text.includes("REJECT")) return Response.json({ verb: "reject", status: 403, message: "blocked by the acme policy" });
    if (text.includes("ROUTE-B")) return Response.json({ verb: "route", order: ["lane-b"] });
    if (text.includes("ROUTE-NOWHERE")) return Response.json({ verb: "route", order: ["no-such-lane"] });
    if (text.includes("SLOW")) await Bun.sleep(600);
    if (text.includes("GARBAGE")) return new Response("not json");
    if (text.includes("ABSTAIN")) return Response.json({ verb: "abstain" });
    return Response.json({ verb: "continue" });
  },
});
const POLICY = `http://127.0.0.1:${policy.port}`;

const CONFIG = `${LISTEN_ANY}
providers:
  pa: {protocol: openai, base_url: "${upA.baseURL}", api_key: ${OPENAI_DEFAULT_KEY}}
  pb: {protocol: openai, base_url: "${upB.baseURL}", api_key: ${OPENAI_DEFAULT_KEY}}
  pc: {protocol: anthropic, base_url: "${upC.baseURL}", api_key: ${ANTHROPIC_DEFAULT_KEY}}
models:
  lane-a: {provider: pa, model: gpt-a}
  lane-b: {provider: pb, model: gpt-b}
  lane-c: {provider: pc, model: claude-c}
pools:
  gated: {members: [{model: lane-a, weight: 1000}, {model: lane-b, weight: 1}], hooks: [acme]}
  gated-claude: {members: [{model: lane-c}], hooks: [acme]}
  slow-first: {members: [{model: lane-b, weight: 1}, {model: lane-a, weight: 1000}], hooks: [acme-first]}
  broken: {members: [{model: lane-a}], hooks: [broken]}
  broken-chain: {members: [{model: lane-a}], hooks: [broken-fallback]}
  redact-openai: {members: [{model: lane-a}], hooks: [redact, watch, watch-end]}
  redact-claude: {members: [{model: lane-c}], hooks: [redact]}
  redact-cross: {members: [{model: lane-c}], hooks: [redact]}
hooks:
  acme: {kind: gate, builtin: http-gate, prompt: ro, user: ro, timeout_ms: 150, settings: {url: "${POLICY}/gate", headers: {authorization: {env: POLICY_TOKEN}}}}
  acme-first: {kind: gate, builtin: http-gate, prompt: ro, timeout_ms: 150, on_error: first, settings: {url: "${POLICY}/gate"}}
  broken: {kind: gate, builtin: http-gate, on_error: reject, settings: {url: "${POLICY}/broken"}}
  broken-fallback: {kind: gate, builtin: http-gate, on_error: acme, settings: {url: "${POLICY}/broken"}}
  redact: {kind: gate, builtin: regex-redact, prompt: rw, priority: 5, settings: {patterns: ["secret-[0-9]+"], replacement: "[gone]"}}
  watch: {kind: tap, builtin: http-gate, at: request, timeout_ms: 5000, settings: {url: "${POLICY}/tap"}}
  watch-end: {kind: tap, builtin: http-gate, at: response, timeout_ms: 100, settings: {url: "${POLICY}/tap"}}
`;

let gw: RunningGateway;
let openai: OpenAI;
let anthropic: Anthropic;
beforeAll(async () => {
  gw = await startGateway(CONFIG, { env: { POLICY_TOKEN: "Bearer policy-secret-77" } });
  openai = new OpenAI({ apiKey: CLIENT_KEY, baseURL: `${gw.data}/v1`, maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: CLIENT_KEY, baseURL: gw.data, maxRetries: 0 });
});
afterAll(async () => {
  await gw?.stop();
  policy.stop(true);
  await Promise.all(ups.map((u) => u.stop()));
});

const reset = () => {
  ups.forEach((u) => u.reset());
  calls.length = 0;
};
const ask = (model: string, text: string) => openai.chat.completions.create({ model, messages: [{ role: "system", content: "be brief" }, { role: "user", content: text }] });
const askRaw = (model: string, text: string) => openai.chat.completions.create({ model, messages: [{ role: "user", content: text }] }).withResponse();
const askClaude = (model: string, text: string) => anthropic.messages.create({ model, max_tokens: 64, system: "be brief", messages: [{ role: "user", content: text }] });
const userTexts = (up: Upstream) => up.requests.map((r) => JSON.stringify((r.body as any)?.messages));
const metrics = async () => (await fetch(`${gw.data}/metrics`)).text();

describe("gate verbs through the SDKs", () => {
  test("continue: the request is served, and the gate saw candidates, the prompt and the user (never a secret)", async () => {
    reset();
    const answer = await ask("gated", "hello there");
    expect(answer.choices[0]!.message.content).toBeTruthy();
    const call = calls[0];
    expect(call).toMatchObject({ stage: "request", hook: "acme", pool: "gated", model: "gated", ingress_protocol: "openai", stream: false });
    expect(call.candidates).toEqual([
      { lane: "lane-a", provider: "pa", model: "gpt-a", weight: 1000, state: "closed" },
      { lane: "lane-b", provider: "pb", model: "gpt-b", weight: 1, state: "closed" },
    ]);
    expect(call.prompt).toEqual({ system: "be brief", messages: [{ role: "user", text: "hello there" }] });
    expect(call.user).toMatchObject({ principal: expect.any(String) });
    expect(typeof call.request_id).toBe("string");
    expect(call.authorization).toBe("Bearer policy-secret-77"); // settings.headers' secret reference, resolved
    expect(gw.logs.join("\n")).not.toContain("policy-secret-77");
  });

  test("reject: 403 in the OpenAI envelope and in the Anthropic one, nothing dispatched, counted", async () => {
    reset();
    const failed = await ask("gated", "please REJECT me").catch((e) => e);
    expect(failed).toBeInstanceOf(OpenAI.APIError);
    expect(failed.status).toBe(403);
    expect(failed.error.message).toBe("blocked by the acme policy");
    const failedClaude = await askClaude("gated-claude", "REJECT this too").catch((e) => e);
    expect(failedClaude).toBeInstanceOf(Anthropic.APIError);
    expect(failedClaude.status).toBe(403);
    expect(failedClaude.error).toMatchObject({ type: "error", error: { message: "blocked by the acme policy" } });
    expect(ups.flatMap((u) => u.requests)).toEqual([]);
    const text = await metrics();
    expect(text).toContain('gateway_route_policy_rejections_total{pool="gated",policy="acme",status="403"} 1');
    expect(text).toContain('gateway_route_policy_rejections_total{pool="gated-claude",policy="acme",status="403"} 1');
  });

  test("route: the walk follows the order (lane-b despite its weight), counted, with the header", async () => {
    reset();
    const { response } = await askRaw("gated", "ROUTE-B please");
    expect(upB.requests.length).toBe(1);
    expect(upA.requests.length).toBe(0);
    expect(response.headers.get("x-gateway-route-policy")).toBe("acme");
    expect(await metrics()).toContain('gateway_route_policy_selections_total{pool="gated",policy="acme"} 1');
  });

  test("route to unknown lanes and abstain: normal routing, no header, not counted", async () => {
    reset();
    for (const text of ["ROUTE-NOWHERE", "ABSTAIN"]) {
      const { response } = await askRaw("gated", text);
      expect(response.status).toBe(200);
      expect(response.headers.get("x-gateway-route-policy")).toBeNull();
    }
    expect(upA.requests.length + upB.requests.length).toBe(2);
    expect(await metrics()).not.toContain('policy="acme"} 2');
  });
});

describe("transforms reach the upstream", () => {
  test("OpenAI to an OpenAI lane (same protocol): the redacted text is what the upstream got", async () => {
    reset();
    await ask("redact-openai", "my key is secret-1234, keep it");
    expect(userTexts(upA).join()).toContain("my key is [gone], keep it");
    expect(userTexts(upA).join()).not.toContain("secret-1234");
  });

  test("a streamed request is transformed too, and a streamed routed answer carries the header", async () => {
    reset();
    const stream = await openai.chat.completions.create({ model: "redact-openai", stream: true, messages: [{ role: "user", content: "stream secret-99 now" }] });
    for await (const _ of stream);
    expect(userTexts(upA).join()).toContain("stream [gone] now");
    const { response, data } = await openai.chat.completions.create({ model: "gated", stream: true, messages: [{ role: "user", content: "ROUTE-B streamed" }] }).withResponse();
    for await (const _ of data);
    expect(response.headers.get("x-gateway-route-policy")).toBe("acme");
    expect(upB.requests.length).toBe(1);
  });

  test("Anthropic to an Anthropic lane (same protocol), and OpenAI to an Anthropic lane (translated)", async () => {
    reset();
    await askClaude("redact-claude", "code secret-42 here");
    await ask("redact-cross", "and secret-7 there");
    const sent = upC.requests.map((r) => r.rawBody).join("\n");
    expect(sent).toContain("code [gone] here");
    expect(sent).toContain("and [gone] there");
    expect(sent).not.toMatch(/secret-[0-9]/);
    expect(upC.invalid()).toEqual([]);
  });
});

describe("on_error", () => {
  test("a gate past its timeout_ms takes on_error first: the config-order first lane, promptly", async () => {
    reset();
    const started = performance.now();
    await ask("slow-first", "SLOW answer");
    expect(performance.now() - started).toBeLessThan(550);
    expect(upB.requests.length).toBe(1); // lane-b is first in config order, though lane-a weighs 1000
    expect(calls[0].user).toBeUndefined(); // acme-first has user: no
    expect(gw.logs.some((l) => l.includes("hook gate fell back") && l.includes("acme-first") && !l.includes("SLOW"))).toBe(true);
  });

  test("a gate answering 500 with on_error reject: 503 in the caller's envelope, nothing dispatched", async () => {
    reset();
    const failed = await ask("broken", "hi").catch((e) => e);
    expect(failed.status).toBe(503);
    const failedClaude = await fetch(`${gw.data}/v1/messages`, { method: "POST", headers: { "x-api-key": CLIENT_KEY, "content-type": "application/json", "anthropic-version": "2023-06-01" }, body: JSON.stringify({ model: "broken", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }) });
    expect(failedClaude.status).toBe(503);
    expect(((await failedClaude.json()) as any).type).toBe("error");
    expect(ups.flatMap((u) => u.requests)).toEqual([]);
  });

  test("a failing gate falls back to another hook, whose verb then applies", async () => {
    reset();
    const failed = await ask("broken-chain", "REJECT via the fallback").catch((e) => e);
    expect(failed.status).toBe(403);
    expect(calls.length).toBe(1);
    expect(calls[0].hook).toBe("acme");
  });
});

describe("taps", () => {
  test("a tap whose endpoint never answers does not delay the answer, and gets the event", async () => {
    reset();
    const started = performance.now();
    await ask("redact-openai", "tap me");
    expect(performance.now() - started).toBeLessThan(1000);
    for (let i = 0; i < 50 && taps.length === 0; i++) await Bun.sleep(20);
    expect(taps[0]).toMatchObject({ stage: "request", hook: "watch", pool: "redact-openai", ingress_protocol: "openai" });
    expect(JSON.stringify(taps[0])).not.toContain("tap me");
  });

  test("a response tap is told when a stream ends: lane, status and duration", async () => {
    taps.length = 0;
    const stream = await openai.chat.completions.create({ model: "redact-openai", stream: true, messages: [{ role: "user", content: "a streamed tap" }] });
    for await (const _ of stream);
    for (let i = 0; i < 50 && !taps.some((t) => t.stage === "response"); i++) await Bun.sleep(20);
    expect(taps.find((t) => t.stage === "response")).toMatchObject({ hook: "watch-end", pool: "redact-openai", lane: "lane-a", status: 200, duration_ms: expect.any(Number) });
  });
});

describe("config changes", () => {
  test("a hook added by /config/apply gates the very next request; removed, it no longer does", async () => {
    const late = `${CONFIG}  late: {kind: gate, builtin: http-gate, prompt: ro, settings: {url: "${POLICY}/gate"}}\n`.replace("  broken: {members", "  late-pool: {members: [{model: lane-a}], hooks: [late]}\n  broken: {members");
    const apply = (yaml: string) => fetch(`${gw.admin}/config/apply`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ yaml }) });
    expect((await apply(late)).status).toBe(200);
    reset();
    const failed = await ask("late-pool", "REJECT at once").catch((e) => e);
    expect(failed.status).toBe(403);
    expect(upA.requests).toEqual([]);
    expect((await apply(late.replace("hooks: [late]", "hooks: []"))).status).toBe(200);
    await ask("late-pool", "REJECT no more");
    expect(upA.requests.length).toBe(1);
  });
});
