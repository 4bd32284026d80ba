// A Cohere upstream's `tool_plan` before a forced tool call (issue 22, class 17), through the built binary to
// every other protocol's client, streamed and not: it arrives as that protocol's reasoning (Anthropic
// thinking, Gemini thought parts, Bedrock reasoningContent, a Responses reasoning item) or, where the
// protocol has no reasoning output (Chat Completions), is dropped and counted as a translation warning;
// never as answer text before the tool call, which clients that glue text onto the tool input would break on.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { EventStreamCodec } from "@smithy/core/event-streams";
import { fromUtf8, toUtf8 } from "@smithy/core/serde";
import { LISTEN_ANY, startGateway, type RunningGateway } from "../support/gateway.ts";
import { COHERE_DEFAULT_KEY, startCohereUpstream } from "../support/upstreams/cohere.ts";

const cohere = startCohereUpstream({ autoToolCall: true });
let gw: RunningGateway;
beforeAll(async () => {
  gw = await startGateway(`${LISTEN_ANY}
providers: {co: {protocol: cohere, base_url: "${cohere.baseURL}", api_key: ${COHERE_DEFAULT_KEY}}}
models: {m: {provider: co, model: command-r}}
`);
});
afterAll(async () => {
  await gw?.stop();
  await cohere.stop();
});

const PLAN = "I will use read_file to answer.";
const schema = { type: "object", properties: { path: { type: "string" } }, required: ["path"] };
type Client = "anthropic" | "openai" | "gemini" | "bedrock" | "responses";

/** Each client's request forcing the one tool, and where it goes. */
function call(client: Client, stream: boolean): [string, unknown] {
  switch (client) {
    case "anthropic":
      return ["/v1/messages", { model: "m", stream, max_tokens: 64, messages: [{ role: "user", content: "hi" }], tools: [{ name: "read_file", input_schema: schema }], tool_choice: { type: "any" } }];
    case "openai":
      return ["/v1/chat/completions", { model: "m", stream, messages: [{ role: "user", content: "hi" }], tools: [{ type: "function", function: { name: "read_file", parameters: schema } }], tool_choice: "required" }];
    case "gemini":
      return [
        `/v1beta/models/m:${stream ? "streamGenerateContent?alt=sse" : "generateContent"}`,
        { contents: [{ role: "user", parts: [{ text: "hi" }] }], tools: [{ functionDeclarations: [{ name: "read_file", parameters: schema }] }], toolConfig: { functionCallingConfig: { mode: "ANY" } } },
      ];
    case "bedrock":
      return [`/model/m/${stream ? "converse-stream" : "converse"}`, { messages: [{ role: "user", content: [{ text: "hi" }] }], toolConfig: { tools: [{ toolSpec: { name: "read_file", inputSchema: { json: schema } } }], toolChoice: { any: {} } } }];
    case "responses":
      return ["/v1/responses", { model: "m", stream, input: "hi", tools: [{ type: "function", name: "read_file", parameters: schema }], tool_choice: "required" }];
  }
}

/** What the client saw, in order: `reasoning:<text>`, `text:<text>`, `tool:<name>` (stream deltas joined). */
type Item = string;

const sseData = (text: string): any[] =>
  text
    .split(/\r?\n/)
    .filter((line) => line.startsWith("data: ") && line !== "data: [DONE]")
    .map((line) => JSON.parse(line.slice(6)));

/** Joins consecutive deltas of the same kind into one item. */
function push(items: Item[], kind: string, value: string): void {
  const last = items.at(-1);
  if (last !== undefined && last.startsWith(`${kind}:`) && kind !== "tool") items[items.length - 1] = last + value;
  else items.push(`${kind}:${value}`);
}

/** The JSON payloads of an AWS event stream, read by the AWS SDK's own codec. */
const codec = new EventStreamCodec(toUtf8, fromUtf8);
function bedrockEvents(bytes: Uint8Array): { body: any }[] {
  const out: { body: any }[] = [];
  for (let at = 0; at < bytes.length; ) {
    const total = new DataView(bytes.buffer, bytes.byteOffset + at).getUint32(0);
    out.push({ body: JSON.parse(toUtf8(codec.decode(bytes.subarray(at, at + total)).body)) });
    at += total;
  }
  return out;
}

async function seen(client: Client, stream: boolean): Promise<Item[]> {
  const [path, body] = call(client, stream);
  const response = await fetch(`${gw.data}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  expect(response.status).toBe(200);
  const items: Item[] = [];
  if (client === "bedrock" && stream) {
    for (const { body: event } of bedrockEvents(new Uint8Array(await response.arrayBuffer()))) {
      if (event.start?.toolUse) push(items, "tool", event.start.toolUse.name);
      if (event.delta?.reasoningContent?.text) push(items, "reasoning", event.delta.reasoningContent.text);
      if (event.delta?.text) push(items, "text", event.delta.text);
    }
    return items;
  }
  const text = await response.text();
  switch (`${client}${stream ? "-stream" : ""}`) {
    case "anthropic":
      for (const block of JSON.parse(text).content) push(items, block.type === "tool_use" ? "tool" : block.type === "thinking" ? "reasoning" : "text", block.name ?? block.thinking ?? block.text);
      break;
    case "anthropic-stream":
      for (const event of sseData(text)) {
        if (event.type === "content_block_start" && event.content_block.type === "tool_use") push(items, "tool", event.content_block.name);
        if (event.delta?.type === "thinking_delta") push(items, "reasoning", event.delta.thinking);
        if (event.delta?.type === "text_delta") push(items, "text", event.delta.text);
      }
      break;
    case "openai": {
      const message = JSON.parse(text).choices[0].message;
      if (message.content) push(items, "text", message.content);
      for (const tool of message.tool_calls ?? []) push(items, "tool", tool.function.name);
      break;
    }
    case "openai-stream":
      for (const chunk of sseData(text)) {
        const delta = chunk.choices[0]?.delta ?? {};
        if (delta.content) push(items, "text", delta.content);
        for (const tool of delta.tool_calls ?? []) if (tool.function?.name) push(items, "tool", tool.function.name);
      }
      break;
    case "gemini":
    case "gemini-stream":
      for (const chunk of stream ? sseData(text) : [JSON.parse(text)])
        for (const part of chunk.candidates?.[0]?.content?.parts ?? []) {
          if (part.functionCall) push(items, "tool", part.functionCall.name);
          else if (part.text) push(items, part.thought ? "reasoning" : "text", part.text);
        }
      break;
    case "bedrock":
      for (const block of JSON.parse(text).output.message.content) {
        if (block.toolUse) push(items, "tool", block.toolUse.name);
        else if (block.reasoningContent) push(items, "reasoning", block.reasoningContent.reasoningText.text);
        else if (block.text) push(items, "text", block.text);
      }
      break;
    case "responses":
      for (const item of JSON.parse(text).output) {
        if (item.type === "function_call") push(items, "tool", item.name);
        if (item.type === "reasoning") push(items, "reasoning", item.summary.map((s: { text: string }) => s.text).join(""));
        if (item.type === "message") push(items, "text", item.content.map((c: { text: string }) => c.text).join(""));
      }
      break;
    case "responses-stream":
      for (const event of sseData(text)) {
        if (event.type === "response.output_item.added" && event.item.type === "function_call") push(items, "tool", event.item.name);
        if (event.type === "response.reasoning_summary_text.delta") push(items, "reasoning", event.delta);
        if (event.type === "response.output_text.delta") push(items, "text", event.delta);
      }
      break;
  }
  return items;
}

const warnings = async (): Promise<number> => {
  const text = await (await fetch(`${gw.data}/metrics`)).text();
  return Number(/gateway_translation_warnings_total\{from="openai",to="cohere"\} (\d+)/.exec(text)?.[1] ?? 0);
};

describe("a Cohere tool_plan before a forced tool call", () => {
  for (const stream of [false, true]) {
    test.each(["anthropic", "gemini", "bedrock", "responses"] as const)(`reaches a %s client as reasoning, then the call${stream ? " (streamed)" : ""}`, async (client) => {
      expect(await seen(client, stream)).toEqual([`reasoning:${PLAN}`, "tool:read_file"]);
    });

    test(`is dropped for a Chat Completions client, counted as a translation warning${stream ? " (streamed)" : ""}`, async () => {
      const before = await warnings();
      expect(await seen("openai", stream)).toEqual(["tool:read_file"]);
      expect(await warnings()).toBeGreaterThan(before);
    });
  }
});
