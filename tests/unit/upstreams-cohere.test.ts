// The Cohere imitation (tests/support/upstreams/cohere.ts) spoken to with plain fetch: there is no Cohere
// SDK here, so each test asserts the wire shape itself, as Cohere's API reference gives it.
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { COHERE_DEFAULT_KEY, startCohereUpstream } from "../support/upstreams/cohere.ts";
import { SCRIPTED_USAGE } from "../support/upstreams/common.ts";
import { readEvents } from "../support/upstreams/events.ts";

const READ_FILE = {
  type: "function",
  function: { name: "read_file", description: "Reads a file", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } },
};

interface CohereUsage {
  billed_units: { input_tokens: number; output_tokens: number };
  tokens: { input_tokens: number; output_tokens: number };
  cached_tokens?: number;
}
interface CohereChat {
  id: string;
  message: { role: string; content?: { type: string; text: string }[]; tool_plan?: string; tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[] };
  finish_reason: string;
  usage: CohereUsage;
  x_imitation?: unknown;
}

describe("Cohere imitation", () => {
  const up = startCohereUpstream();
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${up.url}/v2/chat`, {
      method: "POST",
      headers: { authorization: `Bearer ${COHERE_DEFAULT_KEY}`, "content-type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
  const ask = (text: string, extra: Record<string, unknown> = {}) => ({ model: "command-test", messages: [{ role: "user", content: text }], ...extra });
  const message = async (response: Response) => ((await response.json()) as { id: string; message: string }).message;
  beforeEach(() => up.reset());
  afterAll(() => up.stop());

  test("non-stream: an assistant message with text content, COMPLETE, billed and counted usage; recorded raw", async () => {
    const response = await post({ ...ask("hello there"), messages: [{ role: "system", content: "be brief" }, { role: "user", content: [{ type: "text", text: "hello there" }] }] });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json");
    const chat = (await response.json()) as CohereChat;
    expect(chat.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(chat.message).toEqual({ role: "assistant", content: [{ type: "text", text: "echo: hello there" }] });
    expect(chat.finish_reason).toBe("COMPLETE");
    expect(chat.usage.billed_units.output_tokens).toBe(5);
    // The prompt template is counted in tokens, not billed.
    expect(chat.usage.tokens.input_tokens).toBeGreaterThan(chat.usage.billed_units.input_tokens);
    expect(chat.usage.cached_tokens).toBeUndefined();
    const [recorded] = up.requests;
    expect(recorded).toMatchObject({ method: "POST", path: "/v2/chat", valid: true, status: 200 });
    expect(recorded!.headers.authorization).toBe(`Bearer ${COHERE_DEFAULT_KEY}`);
    expect(JSON.parse(recorded!.rawBody)).toEqual(recorded!.body as object);
  });

  test("stream: typed events parse one by one, from message-start to message-end, then [DONE]", async () => {
    const response = await post(ask("stream me please", { stream: true }));
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const events = await readEvents(response);
    expect(events.at(-1)!.data).toBe("[DONE]");
    const data = events.slice(0, -1).map((e) => Object.assign(JSON.parse(e.data) as Record<string, any>, { event: e.event }));
    expect(data.every((d) => d.event === d.type)).toBe(true);
    const types = data.map((d) => d.type);
    expect(types.slice(0, 2)).toEqual(["message-start", "content-start"]);
    expect(types.slice(-2)).toEqual(["content-end", "message-end"]);
    const deltas = data.filter((d) => d.type === "content-delta");
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.map((d) => d.delta.message.content.text as string).join("")).toBe("echo: stream me please");
    expect(data[0]).toMatchObject({ delta: { message: { role: "assistant" } } });
    expect(data[1]).toMatchObject({ index: 0, delta: { message: { content: { type: "text", text: "" } } } });
    const end = data.at(-1)!;
    expect(end.delta.finish_reason).toBe("COMPLETE");
    expect(end.delta.usage.billed_units.output_tokens).toBe(6);
  });

  test("tool call round trip: tool plan and argument deltas, TOOL_CALL, then the answer quotes the tool message", async () => {
    up.script({ toolCall: true });
    const messages: Record<string, unknown>[] = [{ role: "user", content: "read the readme" }];
    const events = await readEvents(await post({ model: "command-test", messages, tools: [READ_FILE], stream: true }));
    const data = events.slice(0, -1).map((e) => JSON.parse(e.data) as Record<string, any>);
    expect(data.map((d) => d.type as string).filter((t, i, all) => all.indexOf(t) === i)).toEqual([
      "message-start",
      "tool-plan-delta",
      "tool-call-start",
      "tool-call-delta",
      "tool-call-end",
      "message-end",
    ]);
    const start = data.find((d) => d.type === "tool-call-start")!.delta.message.tool_calls;
    expect(start).toMatchObject({ type: "function", function: { name: "read_file", arguments: "" } });
    expect(start.id).toStartWith("read_file_");
    const args = data.filter((d) => d.type === "tool-call-delta").map((d) => d.delta.message.tool_calls.function.arguments as string);
    expect(args.length).toBeGreaterThan(1);
    expect(JSON.parse(args.join(""))).toEqual({ path: "README.md" });
    const plan = data.filter((d) => d.type === "tool-plan-delta").map((d) => d.delta.message.tool_plan as string).join("");
    expect(data.at(-1)!.delta.finish_reason).toBe("TOOL_CALL");
    messages.push({ role: "assistant", tool_plan: plan, tool_calls: [{ id: start.id, type: "function", function: { name: "read_file", arguments: args.join("") } }] });
    messages.push({ role: "tool", tool_call_id: start.id, content: [{ type: "text", text: "# Gateway readme" }] });
    const answer = (await (await post({ model: "command-test", messages, tools: [READ_FILE] })).json()) as CohereChat;
    expect(answer.message.content).toEqual([{ type: "text", text: "tool result: # Gateway readme" }]);
    expect(up.invalid()).toEqual([]);
  });

  test("non-stream tool call: tool_plan and tool_calls, finish_reason TOOL_CALL", async () => {
    up.script({ toolCall: true, toolArguments: { path: "docs/x.md" } });
    const chat = (await (await post(ask("go", { tools: [READ_FILE], tool_choice: "REQUIRED" }))).json()) as CohereChat;
    expect(chat.finish_reason).toBe("TOOL_CALL");
    expect(chat.message.content).toBeUndefined();
    expect(chat.message.tool_plan).toBe("I will use read_file to answer.");
    expect(chat.message.tool_calls).toEqual([{ id: expect.stringMatching(/^read_file_/), type: "function", function: { name: "read_file", arguments: '{"path":"docs/x.md"}' } }]);
  });

  test("invalid requests get Cohere's 400 {id, message} and are recorded as invalid", async () => {
    const orphan = await post({ model: "command-test", messages: [{ role: "user", content: "x" }, { role: "tool", tool_call_id: "call_1", content: "r" }] });
    expect(orphan.status).toBe(400);
    const body = (await orphan.json()) as { id: string; message: string };
    expect(body).toEqual({ id: expect.any(String), message: "tool call id not found in previous tool calls" });
    expect(await message(await post({ messages: [{ role: "user", content: "x" }] }))).toBe("a model parameter is required for this endpoint.");
    expect(await message(await post(ask("")))).toBe("message must not be empty in a turn");
    expect(await message(await post({ model: "command-test", messages: [{ role: "user", content: "x" }, { role: "system", content: "late" }] }))).toBe(
      "system turn must be the first in the list",
    );
    const badName = { ...READ_FILE, function: { ...READ_FILE.function, name: "1read" } };
    expect(await message(await post(ask("x", { tools: [badName] })))).toBe(
      "invalid request: tool names can only contain certain characters (A-Za-z0-9_) and can't begin with a digit (provided name: '1read').",
    );
    const required = { ...READ_FILE, function: { ...READ_FILE.function, parameters: { type: "object", properties: {}, required: ["path"] } } };
    expect(await message(await post(ask("x", { tools: [required] })))).toBe("required field name not found in properties");
    expect(await message(await post(ask("x", { presence_penalty: 1.5 })))).toBe("invalid request: presence_penalty must be between 0 and 1 inclusive.");
    expect(await message(await post(ask("x", { tool_choice: "REQUIRED" })))).toBe("invalid request: tool_choice REQUIRED requires tools to be specified.");
    // OpenAI's lowercase tool_choice is not Cohere's.
    expect((await post(ask("x", { tools: [READ_FILE], tool_choice: "required" }))).status).toBe(400);
    expect(await message(await post("{nope"))).toStartWith("invalid json syntax: ");
    expect(up.invalid().map((r) => r.status)).toEqual([400, 400, 400, 400, 400, 400, 400, 400, 400, 400]);
    expect(up.invalid()[0]!.problem).toBe("tool call id not found in previous tool calls");
  });

  test("a missing or wrong key is 401 with Cohere's texts, recorded as invalid", async () => {
    const missing = await post(ask("x"), { authorization: "" });
    expect(missing.status).toBe(401);
    expect(await message(missing)).toBe("no api key supplied");
    const wrong = await post(ask("x"), { authorization: "bearer co-wrong" });
    expect(wrong.status).toBe(401);
    expect(await message(wrong)).toBe("invalid api token");
    expect(up.invalid().map((r) => r.status)).toEqual([401, 401]);
  });

  test("scripted 429 with Retry-After; unknown member and cached tokens when scripted", async () => {
    up.script({ error: { status: 429, retryAfter: 3 } });
    const limited = await post(ask("x"));
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("3");
    expect(await message(limited)).toBe("You are past the per minute request limit, please wait and try again later.");
    up.script({ extraMember: true, detailedUsage: true, times: 2 });
    const chat = (await (await post(ask("x"))).json()) as CohereChat;
    expect(chat.x_imitation).toEqual({ kept: true });
    expect(chat.usage.cached_tokens).toBe(SCRIPTED_USAGE.cachedTokens);
    const events = await readEvents(await post(ask("x", { stream: true })));
    expect(events.slice(0, -1).every((e) => (JSON.parse(e.data) as { x_imitation?: { kept: boolean } }).x_imitation?.kept === true)).toBe(true);
    expect(up.requests.map((r) => r.status)).toEqual([429, 200, 200]);
  });

  test("a stream cut after N events breaks the body, not ends it", async () => {
    up.script({ cutAfterEvents: 2 });
    const response = await post(ask("a long answer please", { stream: true }));
    expect(await response.text().catch((e: unknown) => e)).toBeInstanceOf(Error);
  });
});
