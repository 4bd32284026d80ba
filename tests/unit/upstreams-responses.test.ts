// The Responses imitation (tests/support/upstreams/responses.ts, on the OpenAI imitation's server) checked
// against the official OpenAI SDK pointed straight at it: the SDK's responses.stream() accumulates the
// typed events into a final response and throws on any event out of place; plain fetch covers what the
// SDK would never send and the raw bytes it hides.
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { SCRIPTED_USAGE } from "../support/upstreams/common.ts";
import { readEvents } from "../support/upstreams/events.ts";
import { OPENAI_DEFAULT_KEY, startOpenAIUpstream } from "../support/upstreams/openai.ts";

const READ_FILE: OpenAI.Responses.FunctionTool = {
  type: "function",
  name: "read_file",
  description: "Reads a file",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"], additionalProperties: false },
  strict: true,
};

interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

describe("Responses imitation", () => {
  const up = startOpenAIUpstream();
  const client = new OpenAI({ apiKey: OPENAI_DEFAULT_KEY, baseURL: up.baseURL, maxRetries: 0 });
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${up.baseURL}/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${OPENAI_DEFAULT_KEY}`, "content-type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
  const problem = async (response: Response) => ((await response.json()) as OpenAIErrorBody).error;
  beforeEach(() => up.reset());
  afterAll(() => up.stop());

  test("non-stream: a completed response with a message item, settings echoed, usage; no output_text on the wire", async () => {
    const { data, request_id } = await client.responses
      .create({ model: "gpt-test", instructions: "be brief", input: "hello there", temperature: 0.5, text: { format: { type: "text" } } })
      .withResponse();
    expect(data).toMatchObject({ object: "response", status: "completed", model: "gpt-test", instructions: "be brief", temperature: 0.5, error: null });
    expect(data.output).toEqual([
      { id: expect.stringMatching(/^msg_/), type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text: "echo: hello there", annotations: [], logprobs: [] }] },
    ]);
    // The SDK computes output_text itself.
    expect(data.output_text).toBe("echo: hello there");
    expect(data.usage).toMatchObject({ output_tokens: 5, input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } });
    expect(data.usage!.total_tokens).toBe(data.usage!.input_tokens + data.usage!.output_tokens);
    expect(request_id).toMatch(/^req_/);
    const raw = (await (await post({ model: "gpt-test", input: "hello" })).json()) as Record<string, unknown>;
    expect("output_text" in raw).toBe(false);
    expect(up.requests.map((r) => r.path)).toEqual(["/v1/responses", "/v1/responses"]);
    expect(JSON.parse(up.requests[0]!.rawBody)).toEqual(up.requests[0]!.body as object);
    expect(up.invalid()).toEqual([]);
  });

  test("stream: the SDK accumulates the typed events; raw events are named, numbered from 0, with no [DONE]", async () => {
    const final = await client.responses.stream({ model: "gpt-test", input: [{ role: "user", content: [{ type: "input_text", text: "stream me please" }] }] }).finalResponse();
    expect(final.output_text).toBe("echo: stream me please");
    expect(final.status).toBe("completed");
    const response = await post({ model: "gpt-test", input: "stream me please", stream: true });
    expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const events = (await readEvents(response)).map((e) => Object.assign(JSON.parse(e.data) as Record<string, any>, { event: e.event }));
    expect(events.every((e) => e.event === e.type)).toBe(true);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const types = events.map((e) => e.type as string);
    expect(types.slice(0, 4)).toEqual(["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]);
    expect(types.slice(-4)).toEqual(["response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"]);
    expect(events[0]!.response).toMatchObject({ status: "in_progress", output: [], usage: null });
    const deltas = events.filter((e) => e.type === "response.output_text.delta");
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.every((d) => typeof d.obfuscation === "string" && d.item_id === events[2]!.item.id)).toBe(true);
    const quiet = (await readEvents(await post({ model: "gpt-test", input: "x", stream: true, stream_options: { include_obfuscation: false } }))).map((e) => JSON.parse(e.data));
    expect(quiet.filter((e) => e.type === "response.output_text.delta").every((e) => !("obfuscation" in e))).toBe(true);
  });

  test("tool call round trip: function_call item with argument deltas, then the answer quotes the function_call_output", async () => {
    up.script({ toolCall: true });
    const input: OpenAI.Responses.ResponseInputItem[] = [{ role: "user", content: "read the readme" }];
    const stream = client.responses.stream({ model: "gpt-test", input, tools: [READ_FILE] });
    const deltas: string[] = [];
    stream.on("response.function_call_arguments.delta", (event) => deltas.push(event.delta));
    const called = await stream.finalResponse();
    expect(deltas.length).toBeGreaterThan(1);
    const call = called.output[0]!;
    if (call.type !== "function_call") throw new Error(`expected a function_call, got ${call.type}`);
    expect([call.status, call.name]).toEqual(["completed", "read_file"]);
    expect(call.call_id).toMatch(/^call_/);
    expect(JSON.parse(deltas.join(""))).toEqual({ path: "README.md" });
    expect(JSON.parse(call.arguments)).toEqual({ path: "README.md" });
    input.push({ type: "function_call", call_id: call.call_id, name: call.name, arguments: call.arguments });
    input.push({ type: "function_call_output", call_id: call.call_id, output: "# Gateway readme" });
    const answer = await client.responses.create({ model: "gpt-test", input, tools: [READ_FILE] });
    expect(answer.output_text).toBe("tool result: # Gateway readme");
    // Chained instead: the stored response's call is answered by the output alone.
    up.script({ toolCall: true });
    const first = await client.responses.create({ model: "gpt-test", input: "read it", tools: [READ_FILE] });
    const firstCall = first.output[0] as OpenAI.Responses.ResponseFunctionToolCall;
    const chained = await client.responses.create({
      model: "gpt-test",
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: firstCall.call_id, output: "chained" }],
      tools: [READ_FILE],
    });
    expect(chained.output_text).toBe("tool result: chained");
    expect(up.invalid()).toEqual([]);
  });

  test("invalid requests get OpenAI's 400 shape and are recorded as invalid", async () => {
    const chatTool = await post({ model: "gpt-test", input: "x", tools: [{ type: "function", function: { name: "read_file", parameters: {} } }] });
    expect(chatTool.status).toBe(400);
    expect(await problem(chatTool)).toEqual({ message: "Missing required parameter: 'tools[0].name'.", type: "invalid_request_error", param: "tools[0].name", code: "missing_required_parameter" });
    const chatPart = await post({ model: "gpt-test", input: [{ role: "user", content: [{ type: "text", text: "x" }] }] });
    expect(await problem(chatPart)).toMatchObject({ param: "input[0].content[0].type", code: "invalid_value", message: expect.stringMatching(/^Invalid value: 'text'\. Supported values are: 'input_text'/) });
    const assistantInput = await post({ model: "gpt-test", input: [{ role: "user", content: "x" }, { role: "assistant", content: [{ type: "input_text", text: "y" }] }] });
    expect((await problem(assistantInput)).message).toBe("Invalid value: 'input_text'. Supported values are: 'output_text' and 'refusal'.");
    const orphan = await post({ model: "gpt-test", input: [{ role: "user", content: "x" }, { type: "function_call_output", call_id: "call_9", output: "r" }] });
    expect(await problem(orphan)).toMatchObject({ message: "No tool call found for function call output with call_id call_9.", param: "input" });
    const unanswered = await post({ model: "gpt-test", input: [{ role: "user", content: "x" }, { type: "function_call", call_id: "call_8", name: "f", arguments: "{}" }] });
    expect((await problem(unanswered)).message).toBe("No tool output found for function call call_8.");
    const moved = await post({ model: "gpt-test", input: "x", response_format: { type: "json_object" } });
    expect(await problem(moved)).toMatchObject({ param: "response_format", message: expect.stringContaining("has moved to 'text.format'") });
    const nestedFormat = await post({ model: "gpt-test", input: "x", text: { format: { type: "json_schema", json_schema: { name: "n", schema: {} } } } });
    expect((await problem(nestedFormat)).param).toBe("text.format.name");
    const small = await post({ model: "gpt-test", input: "x", max_output_tokens: 8 });
    expect((await problem(small)).code).toBe("integer_below_min_value");
    const unknownPrevious = await post({ model: "gpt-test", input: "x", previous_response_id: "resp_nope" });
    expect((await problem(unknownPrevious)).code).toBe("previous_response_not_found");
    expect((await problem(await post({ input: "x" }))).message).toBe("Missing required parameter: 'model'.");
    expect(up.invalid().map((r) => r.status)).toEqual([400, 400, 400, 400, 400, 400, 400, 400, 400, 400]);
    expect(up.invalid()[0]!.problem).toBe("Missing required parameter: 'tools[0].name'.");
  });

  test("the key is the OpenAI imitation's: a wrong one raises the SDK's AuthenticationError", async () => {
    const wrong = new OpenAI({ apiKey: "sk-wrong-key-123456", baseURL: up.baseURL, maxRetries: 0 });
    const error = await wrong.responses.create({ model: "gpt-test", input: "hi" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(up.invalid().map((r) => [r.path, r.status])).toEqual([["/v1/responses", 401]]);
  });

  test("scripted 429 raises the SDK's RateLimitError; unknown member and detailed usage when scripted", async () => {
    up.script({ error: { status: 429, retryAfter: 2 } });
    const error = await client.responses.create({ model: "gpt-test", input: "hi" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect((error as InstanceType<typeof OpenAI.RateLimitError>).headers?.get("retry-after")).toBe("2");
    up.script({ extraMember: true, detailedUsage: true, times: 2 });
    const raw = (await (await post({ model: "gpt-test", input: "x" })).json()) as OpenAI.Responses.Response & { x_imitation?: unknown };
    expect(raw.x_imitation).toEqual({ kept: true });
    expect(raw.usage!.input_tokens_details).toEqual({ cached_tokens: SCRIPTED_USAGE.cachedTokens, cache_write_tokens: SCRIPTED_USAGE.cacheCreationInputTokens });
    expect(raw.usage!.output_tokens_details.reasoning_tokens).toBe(SCRIPTED_USAGE.reasoningTokens);
    const events = await readEvents(await post({ model: "gpt-test", input: "x", stream: true }));
    expect(events.every((e) => (JSON.parse(e.data) as { x_imitation?: { kept: boolean } }).x_imitation?.kept === true)).toBe(true);
  });

  test("a stream cut after N events breaks the SDK's stream", async () => {
    up.script({ cutAfterEvents: 3 });
    const stream = await client.responses.create({ model: "gpt-test", input: "a long answer please", stream: true });
    const seen: string[] = [];
    const error = await (async () => {
      for await (const event of stream) seen.push(event.type);
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(seen).toEqual(["response.created", "response.in_progress", "response.output_item.added"]);
  });
});
