// The routing engine end to end (gateway-spec.md: "Circuit breaker", "Upstream error handling",
// "Metrics", "Limits", /stats and /healthz): the built binary between the official SDKs (raw fetch where
// headers and bytes matter) and upstream imitations scripted to fail on command. Each scenario has its
// own pool and lanes, so one scenario's breaker cells and lane counters never colour another's.
//
// Which member a pool tries first is a weighted random draw; a scenario that needs a fixed order gives
// its primary weight 1e9 and its backup weight 1 (the backup is drawn first once in a billion).
// Cooldowns are real time here: the scenarios that wait for one configure it in fractions of a second.
import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { json, LISTEN_ANY, startGateway, type RunningGateway } from "../support/gateway.ts";
import { ANTHROPIC_DEFAULT_KEY, startAnthropicUpstream } from "../support/upstreams/anthropic.ts";
import type { Behaviour, Upstream } from "../support/upstreams/common.ts";
import { OPENAI_DEFAULT_KEY, startOpenAIUpstream } from "../support/upstreams/openai.ts";
import { until } from "../support/until.ts";

const oaiA = startOpenAIUpstream();
const oaiB = startOpenAIUpstream();
const antA = startAnthropicUpstream();
/** The hang scenario's own pair: its requests outlive the other tests' resets. */
const hangUp = startOpenAIUpstream();
const hangSpare = startOpenAIUpstream();
/** The healthz gateway's upstream. */
const soloUp = startOpenAIUpstream();

/** A port nothing listens on (a server bound and stopped). */
const closedPort = (() => {
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = server.port;
  void server.stop(true);
  return port;
})();

const PRIMARY = 1e9;
const BACKUP = 1;
const BILLING_MESSAGE = "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.";
const QUOTA_MESSAGE = "You exceeded your current quota, please check your plan and billing details.";

interface FailoverCase {
  readonly name: string;
  /** Provider of the primary lane; its imitation (none for the unreachable one) and the failure scripted there. */
  readonly provider: "oa" | "an" | "gone";
  readonly up?: Upstream;
  readonly script?: Behaviour;
  readonly reason: "transient_upstream" | "connect" | "hard_down";
  /** Where the primary's cooldown should stand right after the failure, in seconds. */
  readonly cooldown: readonly [number, number];
}

/** Each failure the primary can answer with, and what it must do to the request and the lane. */
const FAILOVER_CASES: readonly FailoverCase[] = [
  { name: "500", provider: "oa", up: oaiA, script: { error: { status: 500 } }, reason: "transient_upstream", cooldown: [0.6, 1.1] },
  { name: "503", provider: "oa", up: oaiA, script: { error: { status: 503 } }, reason: "transient_upstream", cooldown: [0.6, 1.1] },
  { name: "Anthropic 529 overloaded (translated)", provider: "an", up: antA, script: { error: { status: 529 } }, reason: "transient_upstream", cooldown: [0.6, 1.1] },
  // The Retry-After is a floor over the 1 s short cooldown.
  { name: "429 with Retry-After: 7", provider: "oa", up: oaiA, script: { error: { status: 429, retryAfter: 7 } }, reason: "transient_upstream", cooldown: [6.5, 7] },
  { name: "an unreachable upstream", provider: "gone", reason: "connect", cooldown: [0.6, 1.1] },
  // Anthropic's billing refusal is a 400 that only its wording tells from a caller fault.
  { name: "Anthropic billing: credit balance too low", provider: "an", up: antA, script: { error: { status: 400, message: BILLING_MESSAGE } }, reason: "hard_down", cooldown: [1790, 1800] },
  { name: "Anthropic billing_error", provider: "an", up: antA, script: { error: { status: 402, type: "billing_error", message: "There's an issue with your billing." } }, reason: "hard_down", cooldown: [1790, 1800] },
  // OpenAI says an exhausted quota with a 429 that only its code tells from a rate limit.
  { name: "OpenAI insufficient_quota", provider: "oa", up: oaiA, script: { error: { status: 429, type: "insufficient_quota", code: "insufficient_quota", message: QUOTA_MESSAGE } }, reason: "hard_down", cooldown: [1790, 1800] },
];
const foPool = (i: number) => `fo-${i}`;
const foPrimary = (i: number) => `fo-${i}-primary`;
const foBackup = (i: number) => `fo-${i}-backup`;

/** A lane line under `models:`; the upstream model is the lane's own name, so an imitation's record tells which lane it served. */
const lane = (name: string, provider: string, extra = "") => `  ${name}: {provider: ${provider}, model: ${name}${extra ? `, ${extra}` : ""}}`;
const pool = (name: string, members: readonly (readonly [string, number])[], extra = "") =>
  `  ${name}: {members: [${members.map(([model, weight]) => `{model: ${model}, weight: ${weight}}`).join(", ")}]${extra ? `, ${extra}` : ""}}`;

const config = `${LISTEN_ANY}
providers:
  oa: {protocol: openai, base_url: "${oaiA.baseURL}", api_key: ${OPENAI_DEFAULT_KEY}}
  ob: {protocol: openai, base_url: "${oaiB.baseURL}", api_key: ${OPENAI_DEFAULT_KEY}}
  an: {protocol: anthropic, base_url: "${antA.baseURL}", api_key: ${ANTHROPIC_DEFAULT_KEY}}
  badkey: {protocol: openai, base_url: "${oaiA.baseURL}", api_key: sk-not-the-right-key}
  gone: {protocol: openai, base_url: "http://127.0.0.1:${closedPort}/v1", api_key: ${OPENAI_DEFAULT_KEY}}
models:
${FAILOVER_CASES.flatMap((c, i) => [lane(foPrimary(i), c.provider), lane(foBackup(i), "ob")]).join("\n")}
${lane("caller-primary", "oa")}
${lane("caller-backup", "ob")}
${lane("auth-primary", "badkey")}
${lane("auth-backup", "ob")}
${lane("ctx-small", "an", "context_window: 8000")}
${lane("ctx-peer", "oa", "context_window: 8000")}
${lane("ctx-large", "ob", "context_window: 200000")}
${lane("ctx-alone", "an", "context_window: 8000")}
${lane("streak-primary", "oa")}
${lane("streak-backup", "ob")}
${lane("trip-primary", "oa")}
${lane("trip-backup", "ob")}
${lane("ratio-primary", "oa")}
${lane("ratio-backup", "ob")}
${lane("ex-a", "oa")}
${lane("ex-b", "ob")}
${lane("lb-a", "oa")}
${lane("lb-b", "ob")}
${lane("fb-main", "oa")}
${lane("fb-spare", "ob")}
${lane("chain-a-lane", "oa")}
${lane("chain-b-lane", "ob")}
${lane("chain2-a-lane", "oa")}
${lane("chain2-b-lane", "ob")}
${lane("cap-slow", "oa", "max_concurrent: 1")}
${lane("cap-backup", "ob")}
${lane("budget-2", "oa", "max_requests: 2")}
${lane("budget-backup", "ob")}
${lane("direct-lane", "oa")}
${[0, 1].flatMap((i) => [lane(`st-${i}-primary`, "oa"), lane(`st-${i}-backup`, "an")]).join("\n")}
${[0, 1, 2, 3].flatMap((i) => [lane(`cut-${i}-primary`, i % 2 === 0 ? "oa" : "an"), lane(`cut-${i}-backup`, "ob")]).join("\n")}
${lane("split-1", "oa")}
${lane("split-3", "oa")}
${lane("split-6", "oa")}
pools:
${FAILOVER_CASES.map((_, i) => pool(foPool(i), [[foPrimary(i), PRIMARY], [foBackup(i), BACKUP]])).join("\n")}
${pool("caller", [["caller-primary", PRIMARY], ["caller-backup", BACKUP]])}
${pool("auth", [["auth-primary", PRIMARY], ["auth-backup", BACKUP]])}
${pool("ctx", [["ctx-small", PRIMARY], ["ctx-peer", 1e4], ["ctx-large", BACKUP]])}
${pool("ctx-only", [["ctx-alone", 1]])}
${pool("streak", [["streak-primary", PRIMARY], ["streak-backup", BACKUP]], "breaker: {base_cooldown_secs: 0.3}")}
${pool("trip", [["trip-primary", PRIMARY], ["trip-backup", BACKUP]], "breaker: {consecutive_n: 1, base_cooldown_secs: 1.5}")}
${pool("ratio", [["ratio-primary", PRIMARY], ["ratio-backup", BACKUP]], "breaker: {consecutive_n: 100, min_requests: 4, error_rate: 0.5, window_secs: 60, base_cooldown_secs: 0.2}")}
${pool("exhaust", [["ex-a", PRIMARY], ["ex-b", BACKUP]])}
${pool("lb", [["lb-a", PRIMARY], ["lb-b", BACKUP]], "on_exhausted: least_bad")}
${pool("fb", [["fb-main", 1]], "on_exhausted: 'fallback_pool:fb-reserve'")}
${pool("fb-reserve", [["fb-spare", 1]])}
${pool("chain-a", [["chain-a-lane", 1]], "on_exhausted: 'fallback_pool:chain-b'")}
${pool("chain-b", [["chain-b-lane", 1]])}
${pool("chain2-a", [["chain2-a-lane", 1]], "on_exhausted: 'fallback_pool:chain2-b'")}
${pool("chain2-b", [["chain2-b-lane", 1]])}
${pool("cap", [["cap-slow", PRIMARY], ["cap-backup", BACKUP]])}
${pool("budget", [["budget-2", PRIMARY], ["budget-backup", BACKUP]])}
${pool("direct-pool", [["direct-lane", 1]])}
${[0, 1].map((i) => pool(`st-${i}`, [[`st-${i}-primary`, PRIMARY], [`st-${i}-backup`, BACKUP]])).join("\n")}
${[0, 1, 2, 3].map((i) => pool(`cut-${i}`, [[`cut-${i}-primary`, PRIMARY], [`cut-${i}-backup`, BACKUP]])).join("\n")}
${pool("split", [["split-1", 1], ["split-3", 3], ["split-6", 6]])}
`;

/** Bun's socket idle timer moves in 4 s steps: a 1 s bound fires within about 9 s. */
const hangConfig = `${LISTEN_ANY}
limits: {upstream_request_timeout_secs: 1}
providers:
  hang: {protocol: openai, base_url: "${hangUp.baseURL}", api_key: ${OPENAI_DEFAULT_KEY}}
  spare: {protocol: openai, base_url: "${hangSpare.baseURL}", api_key: ${OPENAI_DEFAULT_KEY}}
models:
${lane("hang-primary", "hang")}
${lane("hang-spare", "spare")}
pools:
${pool("hang", [["hang-primary", PRIMARY], ["hang-spare", BACKUP]])}
`;

let gw: RunningGateway;
let hangGw: RunningGateway;
let openai: OpenAI;
let anthropic: Anthropic;
/** The hang scenario runs while the others do (it waits on Bun's coarse idle timer); its test reads the outcome. */
let hanging: Promise<{ status: number; body: any; elapsedMs: number }>;

beforeAll(async () => {
  [gw, hangGw] = await Promise.all([startGateway(config), startGateway(hangConfig)]);
  openai = new OpenAI({ apiKey: "client-key", baseURL: `${gw.data}/v1`, maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: "client-key", baseURL: gw.data, maxRetries: 0 });
  hangUp.script({ delayMs: 60_000 });
  const began = performance.now();
  hanging = chat(hangGw, "hang", "are you there").then(async (r) => ({ status: r.status, body: await r.json(), elapsedMs: performance.now() - began }));
});
afterAll(async () => {
  await Promise.all([gw?.stop(), hangGw?.stop()]);
  await Promise.all([oaiA, oaiB, antA, hangUp, hangSpare, soloUp].map((u) => u.stop()));
});
beforeEach(() => {
  for (const up of [oaiA, oaiB, antA]) up.reset();
});

// ---- helpers ----

/** A raw OpenAI chat request (for headers and bytes the SDK hides). */
const chat = (target: RunningGateway, model: string, text: string, extra: Record<string, unknown> = {}) =>
  fetch(`${target.data}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer client-key" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: text }], ...extra }),
  });

/** A raw Anthropic Messages request. */
const messages = (model: string, text: string, extra: Record<string, unknown> = {}) =>
  fetch(`${gw.data}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": "client-key", "anthropic-version": "2023-06-01" },
    body: JSON.stringify({ model, max_tokens: 64, messages: [{ role: "user", content: text }], ...extra }),
  });

const ask = async (model: string, text: string) => (await openai.chat.completions.create({ model, messages: [{ role: "user", content: text }] })).choices[0]!.message.content;

/** The error a call fails with (the SDKs' APIPromise defeats `expect(p).rejects`; see protocols.test.ts). */
const failureOf = (call: PromiseLike<unknown>): Promise<unknown> => Promise.resolve().then(() => call).then(() => undefined, (error: unknown) => error);

/** The upstream model of every request an imitation received: which lanes it served, in order. */
const served = (up: Upstream) => up.requests.map((r) => (r.body as { model?: string } | undefined)?.model ?? "(unparsed)");

/** A response body read as far as it goes: a reset connection ends it with `broke`. */
async function readUntilEnd(response: Response): Promise<{ text: string; broke: boolean }> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text, broke: false };
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    return { text, broke: true };
  }
}

const stats = async (target = gw): Promise<any> => json(await fetch(`${target.data}/stats`));
const laneStats = async (name: string, target = gw) => (await stats(target)).lanes.find((l: { lane: string }) => l.lane === name);
const memberStats = async (poolName: string, laneName: string) => (await stats()).pools[poolName].members.find((m: { lane: string }) => m.lane === laneName);

/** Sums the samples of a metric whose labels include the given ones. */
async function metric(name: string, labels: Record<string, string>, target = gw): Promise<number> {
  const text = await (await fetch(`${target.data}/metrics`)).text();
  let sum = 0;
  for (const line of text.split("\n")) {
    const sample = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!sample || sample[1] !== name) continue;
    const have = Object.fromEntries([...(sample[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) sum += Number(sample[3]);
  }
  return sum;
}

// ---- the scenarios ----

describe("failover: the client is served by another lane, and the failing one is benched", () => {
  test.each(FAILOVER_CASES.map((c, i) => ({ ...c, i })))("$name", async (c) => {
    const [poolName, primary, backup] = [foPool(c.i), foPrimary(c.i), foBackup(c.i)];
    if (c.script) c.up!.script(c.script);
    expect(await ask(poolName, `failover on ${c.name}`)).toBe(`echo: failover on ${c.name}`);
    if (c.up) expect(served(c.up)).toEqual([primary]);
    expect(served(oaiB)).toEqual([backup]);

    const hardDown = c.reason === "hard_down";
    const member = await memberStats(poolName, primary);
    expect(member).toMatchObject({ usable: false, state: hardDown ? "open" : "closed", streak: 1 });
    expect(member.cooldown_remaining_s).toBeGreaterThanOrEqual(c.cooldown[0]);
    expect(member.cooldown_remaining_s).toBeLessThanOrEqual(c.cooldown[1]);
    expect(await laneStats(primary)).toMatchObject({ ok: 0, err: 1, dead: hardDown, dead_reason: hardDown ? expect.stringMatching(/^billing: /) : null });
    expect(await laneStats(backup)).toMatchObject({ ok: 1, err: 0, usable: true, dead: false });

    expect(await metric("gateway_failovers_total", { pool: poolName, reason: c.reason })).toBe(1);
    expect(await metric("gateway_failovers_total", { pool: poolName })).toBe(1);
    expect(await metric("gateway_upstream_failures_total", { pool: poolName, lane: primary, disposition: hardDown ? "hard_down" : "transient_upstream" })).toBe(1);
    expect(await metric("gateway_upstream_attempts_total", { pool: poolName, lane: primary })).toBe(1);
    expect(await metric("gateway_upstream_attempts_total", { pool: poolName, lane: backup })).toBe(1);
    expect(await metric("gateway_breaker_trips_total", { pool: poolName, lane: primary })).toBe(hardDown ? 1 : 0);
    expect(await metric("gateway_lane_state", { pool: poolName, lane: primary })).toBe(hardDown ? 2 : 0);
    expect(await metric("gateway_requests_total", { ingress_protocol: "openai", pool: poolName, outcome: "ok" })).toBe(1);

    // While its cooldown lasts the primary is skipped: the next request goes straight to the backup.
    expect(await ask(poolName, "again")).toBe("echo: again");
    if (c.up) expect(served(c.up)).toEqual([primary]);
    expect(served(oaiB)).toEqual([backup, backup]);
    expect(await metric("gateway_upstream_attempts_total", { pool: poolName, lane: primary })).toBe(1);
  });
});

describe("failures that are not the lane's", () => {
  test("a caller fault (400) is relayed verbatim, with no failover and no penalty", async () => {
    const problem = { message: "Invalid value for 'temperature': expected a number between 0 and 2.", type: "invalid_request_error", param: null, code: "invalid_value" };
    oaiA.script({ error: { status: 400, ...problem } });
    const response = await chat(gw, "caller", "bad temperature");
    expect(response.status).toBe(400);
    // Same protocol: the upstream's bytes, unchanged; its request id beside the gateway's own.
    expect(await response.text()).toBe(JSON.stringify({ error: problem }));
    expect(response.headers.get("x-upstream-request-id")).toMatch(/^req_/);
    expect(response.headers.get("x-request-id")).not.toMatch(/^req_/);
    expect(served(oaiB)).toEqual([]);

    // Translated for an Anthropic client: its own BadRequestError, with the upstream's words.
    oaiA.script({ error: { status: 400, ...problem } });
    const error = await failureOf(anthropic.messages.create({ model: "caller", max_tokens: 16, messages: [{ role: "user", content: "bad temperature" }] }));
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect((error as Error).message).toContain(problem.message);
    expect(served(oaiB)).toEqual([]);

    expect(await memberStats("caller", "caller-primary")).toMatchObject({ usable: true, state: "closed", streak: 0, cooldown_remaining_s: 0 });
    expect(await laneStats("caller-primary")).toMatchObject({ err: 0, usable: true });
    expect(await metric("gateway_upstream_failures_total", { pool: "caller" })).toBe(0);
    expect(await metric("gateway_failovers_total", { pool: "caller" })).toBe(0);
    expect(await metric("gateway_requests_total", { pool: "caller", outcome: "client_error" })).toBe(2);
    // The lane is as good as before: the next request goes to it.
    expect(await ask("caller", "fine now")).toBe("echo: fine now");
    expect(served(oaiA)).toEqual(["caller-primary", "caller-primary", "caller-primary"]);
  });

  test("an auth failure (401) is relayed to the caller with no failover, and benches the lane for 30 minutes", async () => {
    const error = await failureOf(openai.chat.completions.create({ model: "auth", messages: [{ role: "user", content: "who am I" }] }));
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((error as Error).message).toContain("Incorrect API key provided");
    expect(served(oaiA)).toEqual(["(unparsed)"]); // refused at the imitation's door
    expect(served(oaiB)).toEqual([]);

    const member = await memberStats("auth", "auth-primary");
    expect(member).toMatchObject({ usable: false, state: "open", streak: 1 });
    expect(member.cooldown_remaining_s).toBeGreaterThan(1790);
    expect(await laneStats("auth-primary")).toMatchObject({ dead: true, dead_reason: expect.stringMatching(/^auth: .*Incorrect API key/), err: 1 });
    expect(await metric("gateway_upstream_failures_total", { pool: "auth", lane: "auth-primary", disposition: "hard_down" })).toBe(1);
    expect(await metric("gateway_breaker_trips_total", { pool: "auth", lane: "auth-primary" })).toBe(1);
    expect(await metric("gateway_lane_state", { pool: "auth", lane: "auth-primary" })).toBe(2);
    expect(await metric("gateway_failovers_total", { pool: "auth" })).toBe(0);
    expect(await metric("gateway_requests_total", { pool: "auth", outcome: "error" })).toBe(1);

    // Benched: the pool's next request is served by the other member, and the bad key is not tried again.
    expect(await ask("auth", "again")).toBe("echo: again");
    expect(served(oaiA)).toEqual(["(unparsed)"]);
    expect(served(oaiB)).toEqual(["auth-backup"]);
  });

  test("a context-length overflow fails over to a member with a larger context_window, recording no fault", async () => {
    antA.script({ error: { status: 400, message: "prompt is too long: 210000 tokens > 200000 maximum" } });
    expect(await ask("ctx", "a very long prompt")).toBe("echo: a very long prompt");
    expect(served(antA)).toEqual(["ctx-small"]);
    // ctx-peer (drawn second) has no larger window than the lane that overflowed: not worth a try.
    expect(served(oaiA)).toEqual([]);
    expect(served(oaiB)).toEqual(["ctx-large"]);

    expect(await memberStats("ctx", "ctx-small")).toMatchObject({ usable: true, state: "closed", streak: 0, cooldown_remaining_s: 0 });
    expect(await laneStats("ctx-small")).toMatchObject({ err: 0, usable: true });
    expect(await metric("gateway_upstream_failures_total", { pool: "ctx", lane: "ctx-small", disposition: "context_length" })).toBe(1);
    expect(await metric("gateway_upstream_failures_total", { pool: "ctx", disposition: "transient_upstream" })).toBe(0);
    expect(await metric("gateway_breaker_trips_total", { pool: "ctx" })).toBe(0);
    // A shorter prompt goes to the small lane again at once: no cooldown was armed.
    expect(await ask("ctx", "short")).toBe("echo: short");
    expect(served(antA)).toEqual(["ctx-small", "ctx-small"]);
  });

  test("a context-length overflow with no larger member is the caller's 400, still no fault", async () => {
    antA.script({ error: { status: 400, message: "prompt is too long: 210000 tokens > 200000 maximum" } });
    const error = await failureOf(openai.chat.completions.create({ model: "ctx-only", messages: [{ role: "user", content: "too long" }] }));
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as Error).message).toContain("prompt is too long");
    expect(await memberStats("ctx-only", "ctx-alone")).toMatchObject({ usable: true, streak: 0, cooldown_remaining_s: 0 });
    expect(await metric("gateway_requests_total", { pool: "ctx-only", outcome: "client_error" })).toBe(1);
  });
});

describe("the breaker", () => {
  test("trips after consecutive_n failures (not before), then a failed probe escalates the cooldown", async () => {
    oaiA.script({ error: { status: 500 }, times: Infinity });
    for (let n = 1; n <= 3; n++) {
      expect(await ask("streak", `try ${n}`)).toBe(`echo: try ${n}`);
      const member = await memberStats("streak", "streak-primary");
      expect(member).toMatchObject({ streak: n, state: n < 3 ? "closed" : "open", usable: false });
      expect(await metric("gateway_breaker_trips_total", { pool: "streak", lane: "streak-primary" })).toBe(n < 3 ? 0 : 1);
      // Below the trip the short cooldown is 1 s capped at base_cooldown_secs (0.3 s), +/-10%.
      expect(member.cooldown_remaining_s).toBeLessThanOrEqual(0.4);
      await Bun.sleep(member.cooldown_remaining_s * 1000 + 60);
    }
    expect(served(oaiA)).toEqual(["streak-primary", "streak-primary", "streak-primary"]);
    expect(await metric("gateway_lane_state", { pool: "streak", lane: "streak-primary" })).toBe(2);
    // The cooldown is over: the next request is the probe; it fails, and the cell reopens for twice as long.
    expect(await ask("streak", "probe")).toBe("echo: probe");
    expect(served(oaiA)).toHaveLength(4);
    const reopened = await memberStats("streak", "streak-primary");
    expect(reopened).toMatchObject({ state: "open", streak: 4 });
    expect(reopened.cooldown_remaining_s).toBeGreaterThan(0.45);
    expect(reopened.cooldown_remaining_s).toBeLessThanOrEqual(0.7);
    expect(await metric("gateway_breaker_trips_total", { pool: "streak", lane: "streak-primary" })).toBe(2);
    expect(served(oaiB)).toEqual(["streak-backup", "streak-backup", "streak-backup", "streak-backup"]);
  });

  test("trips on error_rate over the window once min_requests outcomes are in", async () => {
    expect(await ask("ratio", "one")).toBe("echo: one");
    expect(await ask("ratio", "two")).toBe("echo: two");
    oaiA.script({ error: { status: 500 }, times: 2 });
    await ask("ratio", "three");
    // 1 failure in 3 outcomes: below min_requests (4), so only a short cooldown.
    const first = await memberStats("ratio", "ratio-primary");
    expect(first).toMatchObject({ state: "closed", streak: 1 });
    await Bun.sleep(first.cooldown_remaining_s * 1000 + 60);
    await ask("ratio", "four");
    // 2 of 4 failed: error_rate 0.5 is reached with a streak of only 2 (consecutive_n is 100).
    expect(await memberStats("ratio", "ratio-primary")).toMatchObject({ state: "open", streak: 2, usable: false });
    expect(await metric("gateway_breaker_trips_total", { pool: "ratio", lane: "ratio-primary" })).toBe(1);
    expect(served(oaiA)).toEqual(["ratio-primary", "ratio-primary", "ratio-primary", "ratio-primary"]);
  });

  test("a tripped lane gets no traffic until its cooldown ends; then exactly one probe goes, and its success closes the cell", async () => {
    oaiA.script({ error: { status: 503 } });
    expect(await ask("trip", "trip it")).toBe("echo: trip it");
    const open = await memberStats("trip", "trip-primary");
    expect(open).toMatchObject({ state: "open", usable: false });
    expect(open.cooldown_remaining_s).toBeGreaterThan(1.2);
    // /stats rounds up to a tenth: 1.5 s +10% shows as at most 1.7.
    expect(open.cooldown_remaining_s).toBeLessThanOrEqual(1.7);
    expect(await metric("gateway_lane_state", { pool: "trip", lane: "trip-primary" })).toBe(2);
    expect(await metric("gateway_breaker_trips_total", { pool: "trip", lane: "trip-primary" })).toBe(1);

    const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => ask("trip", `while open ${i}`)));
    expect(replies).toEqual(Array.from({ length: 20 }, (_, i) => `echo: while open ${i}`));
    expect(served(oaiA)).toEqual(["trip-primary"]);
    expect(served(oaiB)).toHaveLength(21);

    await Bun.sleep((await memberStats("trip", "trip-primary")).cooldown_remaining_s * 1000 + 60);
    // Cooled down but not yet probed: usable, still Open until the next selection.
    expect(await memberStats("trip", "trip-primary")).toMatchObject({ state: "open", usable: true });
    oaiA.script({ delayMs: 500 });
    const probe = ask("trip", "probe");
    await until(() => oaiA.requests.length === 2);
    expect(await memberStats("trip", "trip-primary")).toMatchObject({ state: "half_open", usable: false });
    expect(await metric("gateway_lane_state", { pool: "trip", lane: "trip-primary" })).toBe(1);
    // Single flight: while the probe is out, another request goes to the backup.
    expect(await ask("trip", "beside the probe")).toBe("echo: beside the probe");
    expect(served(oaiB)).toHaveLength(22);
    expect(await probe).toBe("echo: probe");
    expect(served(oaiA)).toEqual(["trip-primary", "trip-primary"]);
    expect(await memberStats("trip", "trip-primary")).toMatchObject({ state: "closed", usable: true, streak: 0, cooldown_remaining_s: 0 });
    expect(await metric("gateway_lane_state", { pool: "trip", lane: "trip-primary" })).toBe(0);
    expect(await ask("trip", "closed again")).toBe("echo: closed again");
    expect(served(oaiA)).toHaveLength(3);
  });

  test("breaker cells are per (pool, lane): a direct route's failure shows on the lane in /stats, not in its pool", async () => {
    oaiA.script({ error: { status: 500 } });
    const body = JSON.stringify({ messages: [{ role: "user", content: "direct" }] });
    const first = await fetch(`${gw.data}/direct-lane`, { method: "POST", body });
    // One lane, nothing to fail over to: the upstream's error is the caller's.
    expect(first.status).toBe(500);
    const laneView = await laneStats("direct-lane");
    expect(laneView).toMatchObject({ usable: false, state: "closed", streak: 1, err: 1, dead: false });
    expect(laneView.cooldown_remaining_s).toBeGreaterThan(0.6);
    expect(laneView.cooldown_remaining_s).toBeLessThanOrEqual(1.1);
    // The direct route's cell is cooling: its next request is refused without reaching the upstream.
    const second = await fetch(`${gw.data}/direct-lane`, { method: "POST", body });
    expect(second.status).toBe(503);
    // Whole seconds, rounded up, of a 0.9-1.1 s cooldown.
    expect(["1", "2"]).toContain(second.headers.get("retry-after") ?? "");
    expect(served(oaiA)).toEqual(["direct-lane"]);
    // The pool's cell of the same lane saw nothing: the pool still routes to it.
    expect(await memberStats("direct-pool", "direct-lane")).toMatchObject({ usable: true, streak: 0 });
    expect(await ask("direct-pool", "through the pool")).toBe("echo: through the pool");
    expect(served(oaiA)).toEqual(["direct-lane", "direct-lane"]);
    expect(await metric("gateway_upstream_failures_total", { pool: "(direct)", lane: "direct-lane" })).toBe(1);
  });
});

describe("exhaustion", () => {
  test("every member cooling: 503 with Retry-After of the soonest cooldown (OpenAI), 529 overloaded_error (Anthropic)", async () => {
    oaiA.script({ error: { status: 429, retryAfter: 7 } });
    oaiB.script({ error: { status: 503, retryAfter: 4 } });
    // Both members fail this one: the caller hears the last member's answer.
    const both = await failureOf(openai.chat.completions.create({ model: "exhaust", messages: [{ role: "user", content: "x" }] }));
    expect(both).toBeInstanceOf(OpenAI.InternalServerError);
    expect(served(oaiA)).toEqual(["ex-a"]);
    expect(served(oaiB)).toEqual(["ex-b"]);

    // Now nothing can be tried: refused at once, with the soonest cooldown (ex-b's 4 s) as Retry-After.
    const raw = await chat(gw, "exhaust", "x");
    expect(raw.status).toBe(503);
    expect(raw.headers.get("retry-after")).toBe("4");
    expect((await json(raw)).error).toMatchObject({ type: "server_error", message: expect.stringContaining("exhaust") });
    const typed = await failureOf(openai.chat.completions.create({ model: "exhaust", messages: [{ role: "user", content: "x" }] }));
    expect(typed).toBeInstanceOf(OpenAI.InternalServerError);
    expect((typed as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
    expect((typed as InstanceType<typeof OpenAI.APIError>).headers?.get("retry-after")).toBe("4");

    const rawAnthropic = await messages("exhaust", "x");
    expect(rawAnthropic.status).toBe(529);
    expect(rawAnthropic.headers.get("retry-after")).toBe("4");
    expect(await json(rawAnthropic)).toMatchObject({ type: "error", error: { type: "overloaded_error" } });
    const typedAnthropic = await failureOf(anthropic.messages.create({ model: "exhaust", max_tokens: 8, messages: [{ role: "user", content: "x" }] }));
    expect(typedAnthropic).toBeInstanceOf(Anthropic.APIError);
    expect((typedAnthropic as InstanceType<typeof Anthropic.APIError>).status).toBe(529);

    expect(served(oaiA)).toHaveLength(1);
    expect(served(oaiB)).toHaveLength(1);
    expect(await metric("gateway_requests_total", { ingress_protocol: "openai", pool: "exhaust", outcome: "exhausted" })).toBe(2);
    expect(await metric("gateway_requests_total", { ingress_protocol: "anthropic", pool: "exhaust", outcome: "exhausted" })).toBe(2);
    expect(await metric("gateway_request_duration_seconds_count", { ingress_protocol: "anthropic", pool: "exhaust" })).toBe(2);
    const view = (await stats()).pools.exhaust;
    expect(view.on_exhausted).toBe("reject");
    expect(view.members.map((m: { usable: boolean }) => m.usable)).toEqual([false, false]);
  });

  test("on_exhausted least_bad serves the member whose cooldown ends soonest", async () => {
    oaiA.script({ error: { status: 503, retryAfter: 6 } });
    oaiB.script({ error: { status: 503, retryAfter: 3 } });
    expect(await failureOf(ask("lb", "both fail"))).toBeInstanceOf(OpenAI.InternalServerError);
    expect(await ask("lb", "least bad")).toBe("echo: least bad");
    expect(served(oaiA)).toEqual(["lb-a"]);
    expect(served(oaiB)).toEqual(["lb-b", "lb-b"]);
    const view = (await stats()).pools.lb;
    expect(view.on_exhausted).toBe("least_bad");
    expect(view.members.find((m: { lane: string }) => m.lane === "lb-b")).toMatchObject({ usable: true, streak: 0, state: "closed" });
    expect(view.members.find((m: { lane: string }) => m.lane === "lb-a")).toMatchObject({ usable: false, streak: 1 });
  });

  test("on_exhausted fallback_pool: a failed or cooling pool hands the request to its fallback pool", async () => {
    oaiA.script({ error: { status: 500 } });
    expect(await ask("fb", "fall back")).toBe("echo: fall back");
    expect(await ask("fb", "fall back again")).toBe("echo: fall back again");
    expect(served(oaiA)).toEqual(["fb-main"]);
    expect(served(oaiB)).toEqual(["fb-spare", "fb-spare"]);
    expect(await metric("gateway_upstream_attempts_total", { pool: "fb-reserve", lane: "fb-spare" })).toBe(2);
    expect(await metric("gateway_requests_total", { pool: "fb", outcome: "ok" })).toBe(2);
  });

  test("a fallback chain whose every pool is cooling answers 503 without calling an upstream", async () => {
    oaiA.script({ error: { status: 503, retryAfter: 2 } });
    oaiB.script({ error: { status: 503, retryAfter: 5 } });
    // chain-a's lane fails, then its fallback chain-b's lane: the caller hears the last answer.
    expect(await failureOf(ask("chain-a", "down the chain"))).toBeInstanceOf(OpenAI.InternalServerError);
    expect(served(oaiA)).toEqual(["chain-a-lane"]);
    expect(served(oaiB)).toEqual(["chain-b-lane"]);
    const viaChain = await chat(gw, "chain-a", "down the chain");
    expect(viaChain.status).toBe(503);
    expect(Number(viaChain.headers.get("retry-after"))).toBeGreaterThanOrEqual(2);
    const fallbackOnly = await chat(gw, "chain-b", "down the chain");
    expect(fallbackOnly.status).toBe(503);
    expect(fallbackOnly.headers.get("retry-after")).toBe("5");
    expect(served(oaiA)).toHaveLength(1);
    expect(served(oaiB)).toHaveLength(1);
  });

  // After falling back, the 503's Retry-After is the soonest cooldown over every pool of the chain (2
  // here, in the pool the client named), not only the last pool's (5).
  test("a 503 after falling back names the soonest cooldown in any pool of the chain", async () => {
    oaiA.script({ error: { status: 503, retryAfter: 2 } });
    oaiB.script({ error: { status: 503, retryAfter: 5 } });
    await failureOf(ask("chain2-a", "down the chain"));
    const response = await chat(gw, "chain2-a", "down the chain");
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toBe("2");
  });
});

describe("lane limits", () => {
  test("max_concurrent: a slot held by a slow answer skips the lane, in every pool", async () => {
    oaiA.script({ delayMs: 800 });
    const slow = ask("cap", "slow one");
    await until(() => oaiA.requests.length === 1);
    expect(await laneStats("cap-slow")).toMatchObject({ max_concurrent: 1, inflight: 1, free_slots: 0, usable: false });
    expect(await memberStats("cap", "cap-slow")).toMatchObject({ usable: false, state: "closed", streak: 0 });
    expect(await ask("cap", "fast one")).toBe("echo: fast one");
    expect(served(oaiB)).toEqual(["cap-backup"]);
    // The lane's own one-member pool is at capacity too: 503 while the slot is held.
    const refused = await chat(gw, "cap-slow", "direct to the lane");
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(await slow).toBe("echo: slow one");
    expect(served(oaiA)).toEqual(["cap-slow"]);
    expect(await laneStats("cap-slow")).toMatchObject({ inflight: 0, free_slots: 1, usable: true, ok: 1 });
  });

  test("max_requests: a lane's lifetime budget, spent, skips it in every pool", async () => {
    expect(await laneStats("budget-2")).toMatchObject({ budget: 2, usable: true });
    for (let i = 0; i < 4; i++) expect(await ask("budget", `n${i}`)).toBe(`echo: n${i}`);
    expect(served(oaiA)).toEqual(["budget-2", "budget-2"]);
    expect(served(oaiB)).toEqual(["budget-backup", "budget-backup"]);
    expect(await laneStats("budget-2")).toMatchObject({ budget: 0, usable: false, ok: 2 });
    expect(await memberStats("budget", "budget-2")).toMatchObject({ usable: false, state: "closed" });
    const refused = await chat(gw, "budget-2", "one more");
    expect(refused.status).toBe(503);
    expect(served(oaiA)).toHaveLength(2);
  });
});

describe("streams", () => {
  const streamedText = async (model: string, text: string) => {
    const stream = await openai.chat.completions.create({ model, stream: true, messages: [{ role: "user", content: text }] });
    let out = "";
    for await (const chunk of stream) out += chunk.choices[0]?.delta?.content ?? "";
    return out;
  };

  test.each([
    { i: 0, name: "an error status", script: { error: { status: 503 } } as Behaviour },
    { i: 1, name: "a 200 whose stream breaks before its first event", script: { cutAfterEvents: 0 } as Behaviour },
  ])("before the first byte ($name), a stream fails over (here to a translated lane)", async ({ i, script }) => {
    oaiA.script(script);
    expect(await streamedText(`st-${i}`, "stream me")).toBe("echo: stream me");
    expect(served(oaiA)).toEqual([`st-${i}-primary`]);
    expect(served(antA)).toEqual([`st-${i}-backup`]);
    expect(await memberStats(`st-${i}`, `st-${i}-primary`)).toMatchObject({ usable: false, streak: 1 });
    expect(await metric("gateway_upstream_failures_total", { pool: `st-${i}`, lane: `st-${i}-primary`, disposition: "transient_upstream" })).toBe(1);
    expect(await metric("gateway_failovers_total", { pool: `st-${i}` })).toBe(1);
  });

  const openaiError = /^data: \{"error":\{"message":"[^"]+","type":"server_error"/m;
  const anthropicError = /^event: error\ndata: \{"type":"error","error":\{"type":"api_error"/m;
  const cuts = [
    { i: 2, name: "OpenAI client, OpenAI lane (same protocol)", up: oaiA, cut: 3, send: (t: string) => chat(gw, "cut-2", t, { stream: true }), error: openaiError, clean: "data: [DONE]" },
    { i: 1, name: "OpenAI client, Anthropic lane (translated)", up: antA, cut: 4, send: (t: string) => chat(gw, "cut-1", t, { stream: true }), error: openaiError, clean: "data: [DONE]" },
    { i: 3, name: "Anthropic client, Anthropic lane (same protocol)", up: antA, cut: 4, send: (t: string) => messages("cut-3", t, { stream: true }), error: anthropicError, clean: "event: message_stop" },
    { i: 0, name: "Anthropic client, OpenAI lane (translated)", up: oaiA, cut: 3, send: (t: string) => messages("cut-0", t, { stream: true }), error: anthropicError, clean: "event: message_stop" },
  ];
  test.each(cuts)("after the first byte, a cut is not failed over and counts against the lane: $name", async (c) => {
    const [poolName, primary] = [`cut-${c.i}`, `cut-${c.i}-primary`];
    c.up.script({ cutAfterEvents: c.cut });
    const response = await c.send("a longer answer that will be cut off");
    expect(response.status).toBe(200);
    const { text, broke } = await readUntilEnd(response);
    expect(text).toContain("echo: a lon");
    expect(text).not.toContain(c.clean);
    // Translated or same protocol (the cut fell between events): the stream ends with the client
    // protocol's own in-stream error, and the connection closes cleanly after it.
    expect(text).toMatch(c.error);
    expect(broke).toBe(false);
    expect(served(c.up)).toEqual([primary]);
    expect(served(oaiB)).toEqual([]);
    expect(await metric("gateway_upstream_failures_total", { pool: poolName, lane: primary, disposition: "transient_upstream" })).toBe(1);
    expect(await metric("gateway_failovers_total", { pool: poolName })).toBe(0);
    expect(await laneStats(primary)).toMatchObject({ err: 1, ok: 0, inflight: 0 });
    const member = await memberStats(poolName, primary);
    expect(member).toMatchObject({ streak: 1, usable: false });
  });
});

describe("weighted split", () => {
  test("800 requests over weights 1:3:6 follow the weights", async () => {
    const total = 800;
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < total) {
          const i = next++;
          const response = await chat(gw, "split", `n${i}`);
          expect(response.status).toBe(200);
          await response.arrayBuffer();
        }
      }),
    );
    const counts = Object.fromEntries(await Promise.all(["split-1", "split-3", "split-6"].map(async (l) => [l, await metric("gateway_upstream_attempts_total", { pool: "split", lane: l })] as const)));
    expect(counts["split-1"]! + counts["split-3"]! + counts["split-6"]!).toBe(total);
    // Shares 0.1, 0.3, 0.6; +/-0.07 is over four standard deviations of an 800-draw share.
    expect(Math.abs(counts["split-1"]! / total - 0.1)).toBeLessThan(0.07);
    expect(Math.abs(counts["split-3"]! / total - 0.3)).toBeLessThan(0.07);
    expect(Math.abs(counts["split-6"]! / total - 0.6)).toBeLessThan(0.07);
    // The upstream saw the same split.
    const seen = served(oaiA);
    expect(seen.filter((m) => m === "split-6").length).toBe(counts["split-6"]!);
  });
});

describe("a hanging upstream", () => {
  test("times out (limits.upstream_request_timeout_secs) and the request fails over", async () => {
    const { status, body, elapsedMs } = await hanging;
    expect(status).toBe(200);
    expect(body.choices[0].message.content).toBe("echo: are you there");
    expect(elapsedMs).toBeGreaterThan(900);
    expect(elapsedMs).toBeLessThan(12_000);
    expect(served(hangSpare)).toEqual(["hang-spare"]);
    expect(await metric("gateway_failovers_total", { pool: "hang", reason: "timeout" }, hangGw)).toBe(1);
    expect(await metric("gateway_upstream_failures_total", { pool: "hang", lane: "hang-primary", disposition: "transient_upstream" }, hangGw)).toBe(1);
    await until(() => hangUp.requests[0]?.aborted === true);
  }, 20_000);
});

describe("/healthz", () => {
  test("200 while any lane is usable; 503 once a spent budget and a benched key leave none", async () => {
    const solo = await startGateway(`${LISTEN_ANY}
providers:
  up: {protocol: openai, base_url: "${soloUp.baseURL}", api_key: ${OPENAI_DEFAULT_KEY}}
  badkey: {protocol: openai, base_url: "${soloUp.baseURL}", api_key: sk-not-the-right-key}
models:
${lane("solo-budget", "up", "max_requests: 1")}
${lane("solo-auth", "badkey")}
`);
    try {
      const health = () => fetch(`${solo.data}/healthz`);
      expect((await health()).status).toBe(200);
      expect((await chat(solo, "solo-budget", "spend it")).status).toBe(200);
      const stillOne = await health();
      expect(stillOne.status).toBe(200);
      expect(await stillOne.text()).toBe("ok");
      expect((await chat(solo, "solo-auth", "wrong key")).status).toBe(401);
      expect((await health()).status).toBe(503);
      const lanes = (await stats(solo)).lanes;
      expect(lanes.find((l: { lane: string }) => l.lane === "solo-budget")).toMatchObject({ usable: false, budget: 0, dead: false });
      expect(lanes.find((l: { lane: string }) => l.lane === "solo-auth")).toMatchObject({ dead: true, dead_reason: expect.stringMatching(/^auth: /) });
    } finally {
      await solo.stop();
    }
  });
});
