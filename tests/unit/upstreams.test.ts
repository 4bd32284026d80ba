// The upstream imitations (tests/support/upstreams) checked against the vendors' official SDKs pointed
// straight at them: if an SDK parses what an imitation says, the imitation speaks the vendor's wire format;
// plain fetch covers what an SDK would never send (invalid requests) and the raw bytes an SDK hides.
import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { ANTHROPIC_DEFAULT_KEY, startAnthropicUpstream } from "../support/upstreams/anthropic.ts";
import { SCRIPTED_USAGE } from "../support/upstreams/common.ts";
import { OPENAI_DEFAULT_KEY, startOpenAIUpstream } from "../support/upstreams/openai.ts";

const TOOL: OpenAI.ChatCompletionTool = {
  type: "function",
  function: { name: "read_file", description: "Reads a file", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } },
};
const ANTHROPIC_TOOL: Anthropic.Tool = { name: "read_file", description: "Reads a file", input_schema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } };

interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}
interface AnthropicErrorBody {
  type: "error";
  error: { type: string; message: string };
  request_id: string;
}
const openaiError = async (response: Response) => ((await response.json()) as OpenAIErrorBody).error;
const anthropicError = async (response: Response) => ((await response.json()) as AnthropicErrorBody).error;

/** Splits an SSE body into its events' names and data, to check the bytes SDKs hide (ping, [DONE]). */
function sseEvents(text: string): { event: string | undefined; data: string }[] {
  return text
    .split("\n\n")
    .filter((frame) => frame.trim() !== "")
    .map((frame) => {
      const lines = frame.split("\n");
      return { event: lines.find((l) => l.startsWith("event: "))?.slice(7), data: lines.find((l) => l.startsWith("data: "))?.slice(6) ?? "" };
    });
}

describe("OpenAI imitation", () => {
  const up = startOpenAIUpstream();
  const client = new OpenAI({ apiKey: OPENAI_DEFAULT_KEY, baseURL: up.baseURL, maxRetries: 0 });
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${up.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${OPENAI_DEFAULT_KEY}`, "content-type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
  beforeEach(() => up.reset());
  afterAll(() => up.stop());

  test("non-stream answer parses in the SDK, with x-request-id, and the request is recorded raw", async () => {
    const { data, response, request_id } = await client.chat.completions
      .create({ model: "gpt-test", messages: [{ role: "system", content: "be brief" }, { role: "user", content: "hello there" }] })
      .withResponse();
    expect(data.object).toBe("chat.completion");
    expect(data.choices[0]!.message.content).toBe("echo: hello there");
    expect(data.choices[0]!.finish_reason).toBe("stop");
    expect(data.usage).toMatchObject({ completion_tokens: 5, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } });
    expect(data.usage!.total_tokens).toBe(data.usage!.prompt_tokens + data.usage!.completion_tokens);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(request_id).toMatch(/^req_/);
    const [recorded] = up.requests;
    expect(recorded).toMatchObject({ method: "POST", path: "/v1/chat/completions", valid: true, status: 200 });
    expect(recorded!.headers.authorization).toBe(`Bearer ${OPENAI_DEFAULT_KEY}`);
    expect(JSON.parse(recorded!.rawBody)).toEqual(recorded!.body as object);
    expect(up.invalid()).toEqual([]);
  });

  test("stream: chunks parse in the SDK, no usage member unless stream_options.include_usage", async () => {
    const stream = await client.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "stream me" }], stream: true });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("echo: stream me");
    expect(chunks.length).toBeGreaterThan(3);
    expect(chunks[0]!.choices[0]!.delta.role).toBe("assistant");
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe("stop");
    expect(chunks.every((c) => c.object === "chat.completion.chunk" && !("usage" in c))).toBe(true);
  });

  test("stream with include_usage: usage null on every chunk, then a usage chunk with choices [], then [DONE]", async () => {
    const response = await post({ model: "gpt-test", messages: [{ role: "user", content: "count" }], stream: true, stream_options: { include_usage: true } });
    expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const events = sseEvents(await response.text());
    expect(events.at(-1)!.data).toBe("[DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.data) as OpenAI.ChatCompletionChunk);
    const usageChunk = chunks.at(-1)!;
    expect(usageChunk.choices).toEqual([]);
    expect(usageChunk.usage).toMatchObject({ prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 });
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
  });

  test("tool call round trip: streamed argument deltas, then the answer quotes the tool result", async () => {
    up.script({ toolCall: true });
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "read the readme" }];
    const stream = await client.chat.completions.create({ model: "gpt-test", messages, tools: [TOOL], stream: true });
    const argumentPieces: string[] = [];
    let id = "";
    let finish: string | null = null;
    for await (const chunk of stream) {
      const call = chunk.choices[0]?.delta.tool_calls?.[0];
      if (call?.id) id = call.id;
      if (call?.function?.arguments) argumentPieces.push(call.function.arguments);
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(argumentPieces.length).toBeGreaterThan(1);
    expect(JSON.parse(argumentPieces.join(""))).toEqual({ path: "README.md" });
    expect(finish).toBe("tool_calls");
    messages.push({ role: "assistant", content: null, tool_calls: [{ id, type: "function", function: { name: "read_file", arguments: argumentPieces.join("") } }] });
    messages.push({ role: "tool", tool_call_id: id, content: "# Gateway readme" });
    const answer = await client.chat.completions.create({ model: "gpt-test", messages, tools: [TOOL] });
    expect(answer.choices[0]!.message.content).toBe("tool result: # Gateway readme");
    expect(up.invalid()).toEqual([]);
  });

  test("non-stream tool call answer is a tool_calls message", async () => {
    up.script({ toolCall: true, toolArguments: { path: "docs/x.md" } });
    const answer = await client.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "go" }], tools: [TOOL], tool_choice: "auto" });
    const choice = answer.choices[0]!;
    expect(choice.finish_reason).toBe("tool_calls");
    expect(choice.message.content).toBeNull();
    const call = choice.message.tool_calls![0]!;
    expect(call.type === "function" && call.function.name).toBe("read_file");
    expect(call.type === "function" && JSON.parse(call.function.arguments)).toEqual({ path: "docs/x.md" });
  });

  test("scripted 429 raises the SDK's RateLimitError with Retry-After and OpenAI's error body", async () => {
    up.script({ error: { status: 429, retryAfter: 7 } });
    const error = await client.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    const rate = error as InstanceType<typeof OpenAI.RateLimitError>;
    expect(rate.headers?.get("retry-after")).toBe("7");
    expect(rate.code).toBe("rate_limit_exceeded");
    expect(rate.requestID).toMatch(/^req_/);
    expect(up.requests[0]).toMatchObject({ valid: true, status: 429 });
    // The script was consumed: the next request is answered normally.
    const ok = await client.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "again" }] });
    expect(ok.choices[0]!.message.content).toBe("echo: again");
  });

  test("invalid requests get OpenAI's 400 shape and are recorded as invalid", async () => {
    const orphanTool = await post({ model: "gpt-test", messages: [{ role: "user", content: "x" }, { role: "tool", tool_call_id: "call_1", content: "r" }] });
    expect(orphanTool.status).toBe(400);
    expect(orphanTool.headers.get("x-request-id")).toMatch(/^req_/);
    expect(await orphanTool.json()).toEqual({
      error: {
        message: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
        type: "invalid_request_error",
        param: "messages.[1].role",
        code: null,
      },
    });
    const noMessages = await post({ model: "gpt-test" });
    expect((await openaiError(noMessages))).toEqual({ message: "Missing required parameter: 'messages'.", type: "invalid_request_error", param: "messages", code: "missing_required_parameter" });
    const unanswered = await post({
      model: "gpt-test",
      messages: [{ role: "user", content: "x" }, { role: "assistant", tool_calls: [{ id: "call_9", type: "function", function: { name: "f", arguments: "{}" } }] }, { role: "user", content: "y" }],
    });
    expect((await openaiError(unanswered)).message).toContain("The following tool_call_ids did not have response messages: call_9");
    const badRole = await post({ model: "gpt-test", messages: [{ role: "robot", content: "x" }] });
    expect((await openaiError(badRole))).toMatchObject({ param: "messages[0].role", code: "invalid_value" });
    const options = await post({ model: "gpt-test", messages: [{ role: "user", content: "x" }], stream_options: { include_usage: true } });
    expect((await openaiError(options)).message).toBe("The 'stream_options' parameter is only allowed when 'stream' is enabled.");
    const notJson = await post("{nope");
    expect((await openaiError(notJson)).message).toStartWith("We could not parse the JSON body of your request.");
    const textPlain = await post({ model: "gpt-test", messages: [{ role: "user", content: "x" }] }, { "content-type": "text/plain" });
    expect(textPlain.status).toBe(400);
    expect(up.invalid().map((r) => r.status)).toEqual([400, 400, 400, 400, 400, 400, 400]);
    expect(up.invalid()[0]!.problem).toContain("role 'tool'");
  });

  test("a wrong or missing credential gets 401 (the SDK's AuthenticationError) and is recorded as invalid", async () => {
    const wrong = new OpenAI({ apiKey: "sk-wrong-key-123456", baseURL: up.baseURL, maxRetries: 0 });
    const error = await wrong.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((error as InstanceType<typeof OpenAI.AuthenticationError>).code).toBe("invalid_api_key");
    const missing = await post({ model: "gpt-test", messages: [{ role: "user", content: "x" }] }, { authorization: "" });
    expect(missing.status).toBe(401);
    expect((await openaiError(missing)).message).toStartWith("You didn't provide an API key.");
    expect(up.invalid().map((r) => r.status)).toEqual([401, 401]);
  });

  test("unknown member and detailed usage are served when scripted; a trigger word narrows a script", async () => {
    up.script({ match: "SPECIAL", extraMember: true, detailedUsage: true, times: Infinity });
    const plain = await client.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "ordinary" }] });
    expect((plain as unknown as Record<string, unknown>).x_imitation).toBeUndefined();
    const raw = (await (await post({ model: "gpt-test", messages: [{ role: "user", content: "a SPECIAL one" }] })).json()) as OpenAI.ChatCompletion & { x_imitation?: unknown };
    expect(raw.x_imitation).toEqual({ kept: true });
    expect(raw.usage!.prompt_tokens_details!.cached_tokens).toBe(SCRIPTED_USAGE.cachedTokens);
    expect(raw.usage!.completion_tokens_details!.reasoning_tokens).toBe(SCRIPTED_USAGE.reasoningTokens);
    const streamed = sseEvents(await (await post({ model: "gpt-test", messages: [{ role: "user", content: "SPECIAL" }], stream: true })).text());
    expect(streamed.slice(0, -1).every((e) => JSON.parse(e.data).x_imitation?.kept === true)).toBe(true);
  });

  test("delay before the first byte, and a stream cut after N events breaks the SDK's iteration", async () => {
    up.script({ delayMs: 300, cutAfterEvents: 2 });
    const started = Date.now();
    const stream = await client.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "a long answer please" }], stream: true });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    const received: OpenAI.ChatCompletionChunk[] = [];
    const error = await (async () => {
      for await (const chunk of stream) received.push(chunk);
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(received).toHaveLength(2);
  });
});

describe("Anthropic imitation", () => {
  const up = startAnthropicUpstream();
  const client = new Anthropic({ apiKey: ANTHROPIC_DEFAULT_KEY, baseURL: up.baseURL, maxRetries: 0 });
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${up.url}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": ANTHROPIC_DEFAULT_KEY, "anthropic-version": "2023-06-01", "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
  beforeEach(() => up.reset());
  afterAll(() => up.stop());

  test("non-stream answer parses in the SDK, with request-id, and the request is recorded raw", async () => {
    const { data, request_id } = await client.messages
      .create({ model: "claude-test", max_tokens: 64, system: "be brief", messages: [{ role: "user", content: "hello there" }] })
      .withResponse();
    expect(data.type).toBe("message");
    expect(data.content).toEqual([{ type: "text", text: "echo: hello there", citations: null }]);
    expect(data.stop_reason).toBe("end_turn");
    expect(data.usage).toMatchObject({ output_tokens: 5, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 });
    expect(request_id).toMatch(/^req_/);
    const [recorded] = up.requests;
    expect(recorded).toMatchObject({ path: "/v1/messages", valid: true, status: 200 });
    // SDK 1.x sends the key as a bearer token and API version 2026-10-21.
    expect(recorded!.headers.authorization).toBe(`Bearer ${ANTHROPIC_DEFAULT_KEY}`);
    expect(recorded!.headers["anthropic-version"]).toBe("2026-10-21");
    expect(JSON.parse(recorded!.rawBody)).toEqual(recorded!.body as object);
  });

  test("stream: the SDK accumulates the final message; raw events follow Anthropic's order, with a ping", async () => {
    const final = await client.messages.stream({ model: "claude-test", max_tokens: 64, messages: [{ role: "user", content: "stream me" }] }).finalMessage();
    expect(final.content[0]).toMatchObject({ type: "text", text: "echo: stream me" });
    expect(final.usage.output_tokens).toBe(4);
    const response = await post({ model: "claude-test", max_tokens: 64, messages: [{ role: "user", content: "stream me" }], stream: true });
    expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const events = sseEvents(await response.text());
    expect(events.every((e) => JSON.parse(e.data).type === e.event)).toBe(true);
    const names = events.map((e) => e.event);
    expect(names.slice(0, 3)).toEqual(["message_start", "content_block_start", "ping"]);
    expect(names.slice(-3)).toEqual(["content_block_stop", "message_delta", "message_stop"]);
    expect(names.filter((n) => n === "content_block_delta").length).toBeGreaterThan(1);
    expect(JSON.parse(events[0]!.data).message.content).toEqual([]);
  });

  test("tool call round trip: input_json_delta pieces, then the answer quotes the tool result", async () => {
    up.script({ toolCall: true });
    const messages: Anthropic.MessageParam[] = [{ role: "user", content: "read the readme" }];
    const stream = await client.messages.create({ model: "claude-test", max_tokens: 64, messages, tools: [ANTHROPIC_TOOL], stream: true });
    const partials: string[] = [];
    for await (const event of stream) {
      if (event.type === "content_block_delta" && event.delta.type === "input_json_delta") partials.push(event.delta.partial_json);
    }
    expect(partials.length).toBeGreaterThan(1);
    expect(JSON.parse(partials.join(""))).toEqual({ path: "README.md" });
    up.script({ toolCall: true });
    const toolTurn = await client.messages.create({ model: "claude-test", max_tokens: 64, messages, tools: [ANTHROPIC_TOOL] });
    expect(toolTurn.stop_reason).toBe("tool_use");
    const use = toolTurn.content[0]!;
    if (use.type !== "tool_use") throw new Error(`expected tool_use, got ${use.type}`);
    expect(use).toMatchObject({ name: "read_file", input: { path: "README.md" } });
    messages.push({ role: "assistant", content: toolTurn.content as Anthropic.ContentBlockParam[] });
    messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "# Gateway readme" }] });
    const answer = await client.messages.stream({ model: "claude-test", max_tokens: 64, messages, tools: [ANTHROPIC_TOOL] }).finalMessage();
    expect(answer.content[0]).toMatchObject({ type: "text", text: "tool result: # Gateway readme" });
    expect(up.invalid()).toEqual([]);
  });

  test("scripted 429 raises the SDK's RateLimitError with Retry-After and Anthropic's error body", async () => {
    up.script({ error: { status: 429, retryAfter: 3 } });
    const error = await client.messages.create({ model: "claude-test", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.RateLimitError);
    const rate = error as InstanceType<typeof Anthropic.RateLimitError>;
    expect(rate.headers?.get("retry-after")).toBe("3");
    expect(rate.error).toMatchObject({ type: "error", error: { type: "rate_limit_error" } });
    expect(up.requests[0]).toMatchObject({ valid: true, status: 429 });
  });

  test("invalid requests get Anthropic's 400 shape and are recorded as invalid", async () => {
    const orphan = await post({
      model: "claude-test",
      max_tokens: 8,
      messages: [{ role: "user", content: "x" }, { role: "assistant", content: "ok" }, { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_x", content: "r" }] }],
    });
    expect(orphan.status).toBe(400);
    expect(orphan.headers.get("request-id")).toMatch(/^req_/);
    expect(await orphan.json()).toEqual({
      type: "error",
      error: {
        type: "invalid_request_error",
        message:
          "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_x. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
      },
      request_id: orphan.headers.get("request-id"),
    });
    const unanswered = await post({
      model: "claude-test",
      max_tokens: 8,
      messages: [{ role: "user", content: "x" }, { role: "assistant", content: [{ type: "tool_use", id: "toolu_a", name: "f", input: {} }] }, { role: "user", content: "next" }],
    });
    expect((await anthropicError(unanswered)).message).toStartWith("messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_a.");
    const noMax = await post({ model: "claude-test", messages: [{ role: "user", content: "x" }] });
    expect((await anthropicError(noMax)).message).toBe("max_tokens: Field required");
    const noVersion = await post({ model: "claude-test", max_tokens: 8, messages: [{ role: "user", content: "x" }] }, { "anthropic-version": "" });
    expect(noVersion.status).toBe(400);
    const badTool = await post({ model: "claude-test", max_tokens: 8, messages: [{ role: "user", content: "x" }], tools: [{ name: "f" }] });
    expect((await anthropicError(badTool)).message).toBe("tools.0.custom.input_schema: Field required");
    const badSystem = await post({ model: "claude-test", max_tokens: 8, system: 5, messages: [{ role: "user", content: "x" }] });
    expect((await anthropicError(badSystem)).message).toBe("system: Input should be a valid string");
    const systemFirst = await post({ model: "claude-test", max_tokens: 8, messages: [{ role: "system", content: "s" }, { role: "user", content: "x" }] });
    expect((await anthropicError(systemFirst)).message).toStartWith('messages: Unexpected role "system".');
    // API version 2026-10-21 removed temperature; 2023-06-01 still takes it.
    const sampled = { model: "claude-test", max_tokens: 8, temperature: 0.5, messages: [{ role: "user", content: "x" }] };
    expect((await post(sampled, { "anthropic-version": "2026-10-21" })).status).toBe(400);
    expect((await post(sampled)).status).toBe(200);
    // Consecutive user turns are combined by Anthropic, not refused; a system message may follow a user turn.
    const midSystem = await post({ model: "claude-test", max_tokens: 8, messages: [{ role: "user", content: "a" }, { role: "system", content: "s" }, { role: "user", content: "b" }] });
    expect(midSystem.status).toBe(200);
    const consecutive = await post({ model: "claude-test", max_tokens: 8, messages: [{ role: "user", content: "a" }, { role: "user", content: "b" }] });
    expect(consecutive.status).toBe(200);
    expect(up.invalid().map((r) => r.status)).toEqual([400, 400, 400, 400, 400, 400, 400, 400]);
  });

  test("a wrong or missing credential gets 401 (the SDK's AuthenticationError) and is recorded as invalid", async () => {
    const wrong = new Anthropic({ apiKey: "sk-ant-wrong", baseURL: up.baseURL, maxRetries: 0 });
    const error = await wrong.messages.create({ model: "claude-test", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.AuthenticationError);
    expect((error as InstanceType<typeof Anthropic.AuthenticationError>).error).toMatchObject({ error: { type: "authentication_error", message: "invalid x-api-key" } });
    const missing = await post({ model: "claude-test", max_tokens: 8, messages: [{ role: "user", content: "x" }] }, { "x-api-key": "" });
    expect(missing.status).toBe(401);
    expect(up.invalid().map((r) => r.status)).toEqual([401, 401]);
  });

  test("unknown member and cache usage are served when scripted", async () => {
    up.script({ extraMember: true, detailedUsage: true, times: 2 });
    const raw = (await (await post({ model: "claude-test", max_tokens: 8, messages: [{ role: "user", content: "x" }] })).json()) as Anthropic.Message & { x_imitation?: unknown };
    expect(raw.x_imitation).toEqual({ kept: true });
    expect(raw.usage).toMatchObject({ cache_read_input_tokens: SCRIPTED_USAGE.cacheReadInputTokens, cache_creation_input_tokens: SCRIPTED_USAGE.cacheCreationInputTokens });
    const final = await client.messages.stream({ model: "claude-test", max_tokens: 8, messages: [{ role: "user", content: "x" }] }).finalMessage();
    expect(final.usage.cache_read_input_tokens).toBe(SCRIPTED_USAGE.cacheReadInputTokens);
    expect((final as unknown as Record<string, unknown>).x_imitation).toEqual({ kept: true });
  });

  test("a stream cut after N events breaks the SDK's stream", async () => {
    up.script({ cutAfterEvents: 3 });
    const stream = await client.messages.create({ model: "claude-test", max_tokens: 64, messages: [{ role: "user", content: "long" }], stream: true });
    const seen: string[] = [];
    const error = await (async () => {
      for await (const event of stream) seen.push(event.type);
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    // The ping (third event) is dropped by the SDK.
    expect(seen).toEqual(["message_start", "content_block_start"]);
  });
});
