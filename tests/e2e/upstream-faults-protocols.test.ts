// Bad 2xx answers on the same-protocol routes of Gemini, Bedrock, Cohere and Responses (issue 22, class 15;
// upstream-faults.test.ts covers OpenAI and Anthropic): HTML, truncated JSON, a body cut short, a stream of
// the wrong content type (a Bedrock event stream answered as JSON) are each a 502 in the caller's own
// shape naming the cause, never quoting the body or Bun; the lane's breaker counts it and a pool fails
// over to a good lane.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { json, LISTEN_ANY, startGateway, type RunningGateway } from "../support/gateway.ts";
import { HOSTILE_MARK, startHostileUpstream, type HostileUpstream } from "../support/upstreams/hostile.ts";

const PROTOCOLS = ["gemini", "bedrock", "cohere", "responses"] as const;
type Protocol = (typeof PROTOCOLS)[number];
const FAULTS = { html: /content of type text\/html, not JSON/, truncated: /not a whole JSON object|not JSON/, short: /cut short: connection reset/ } as const;
const SCENARIOS = [...Object.keys(FAULTS), "stream-json"];

let hostile: HostileUpstream;
let gw: RunningGateway;

beforeAll(async () => {
  hostile = await startHostileUpstream();
  const base = (p: Protocol, s: string) => (p === "responses" ? `${hostile.baseOf(s)}/v1` : hostile.baseOf(s));
  const providers = PROTOCOLS.flatMap((p) => SCENARIOS.map((s) => `  ${p}-${s}: {protocol: ${p}, base_url: "${base(p, s)}", api_key: k${p === "bedrock" ? ", region: us-east-1" : ""}}`));
  const models = PROTOCOLS.flatMap((p) => SCENARIOS.flatMap((s) => [`  ${p}-${s}: {provider: ${p}-${s}, model: m}`, `  ${p}-${s}-primary: {provider: ${p}-${s}, model: m}`]));
  const pools = PROTOCOLS.flatMap((p) => SCENARIOS.map((s) => `  fo-${p}-${s}: {members: [{model: ${p}-${s}-primary, weight: 1e9}, {model: good, weight: 1}]}`));
  gw = await startGateway(`${LISTEN_ANY}
providers:
  local: {protocol: mock}
${providers.join("\n")}
models:
  good: {provider: local}
${models.join("\n")}
pools:
${pools.join("\n")}
`);
});
afterAll(async () => {
  await gw?.stop();
  await hostile?.stop();
});

/** A request in the protocol's own shape to `model`. */
function call(protocol: Protocol, model: string, stream: boolean): Promise<Response> {
  const [path, body] =
    protocol === "gemini"
      ? [`/v1beta/models/${model}:${stream ? "streamGenerateContent?alt=sse" : "generateContent"}`, { contents: [{ role: "user", parts: [{ text: "hello" }] }] }]
      : protocol === "bedrock"
        ? [`/model/${model}/${stream ? "converse-stream" : "converse"}`, { messages: [{ role: "user", content: [{ text: "hello" }] }] }]
        : protocol === "cohere"
          ? ["/v2/chat", { model, stream, messages: [{ role: "user", content: "hello" }] }]
          : ["/v1/responses", { model, stream, input: "hello" }];
  return fetch(`${gw.data}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
}

/** A 502 whose message, read from the protocol's own error shape, matches; neither the body nor Bun is quoted. */
async function expectNativeFault(protocol: Protocol, response: Response, message: RegExp): Promise<void> {
  const text = await response.text();
  expect({ status: response.status, text }).toMatchObject({ status: 502 });
  expect(text).not.toContain(HOSTILE_MARK);
  expect(text).not.toMatch(/verbose|fetch\(\)|<html|could not complete/i);
  const body = JSON.parse(text);
  const said =
    protocol === "gemini" ? (expect(body.error.code).toBe(502), body.error.message) : protocol === "bedrock" ? (expect(response.headers.get("x-amzn-errortype")).toBeString(), body.message) : protocol === "cohere" ? body.message : body.error.message;
  expect(said).toMatch(message);
}

const laneStats = async (name: string) => ((await json(await fetch(`${gw.data}/stats`))) as any).lanes.find((l: { lane: string }) => l.lane === name);

describe.each(PROTOCOLS)("%s, same protocol", (protocol) => {
  test.each(Object.keys(FAULTS) as (keyof typeof FAULTS)[])("a 2xx with %s is a 502 in the protocol's shape", async (fault) => {
    await expectNativeFault(protocol, await call(protocol, `${protocol}-${fault}`, false), FAULTS[fault]);
  });

  test("a stream answered as application/json is a 502 before its first byte", async () => {
    const want = protocol === "bedrock" ? "application/vnd.amazon.eventstream" : "text/event-stream";
    await expectNativeFault(protocol, await call(protocol, `${protocol}-stream-json`, true), new RegExp(`content of type application/json, not ${want.replace(/[./]/g, "\\$&")}`));
  });

  test("a pool fails over from each, and the bad lane's breaker counts it", async () => {
    for (const scenario of SCENARIOS) {
      const response = await call(protocol, `fo-${protocol}-${scenario}`, scenario === "stream-json");
      expect({ scenario, status: response.status }).toEqual({ scenario, status: 200 });
      await response.arrayBuffer();
      expect(await laneStats(`${protocol}-${scenario}-primary`)).toMatchObject({ ok: 0, err: 1 });
    }
  });
});
