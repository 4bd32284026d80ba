// The Gemini imitation (tests/support/upstreams/gemini.ts) spoken to with plain fetch: there is no Google
// SDK here, so each test asserts the wire shape itself, as the Gemini API reference gives it.
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { SCRIPTED_USAGE } from "../support/upstreams/common.ts";
import { readEvents } from "../support/upstreams/events.ts";
import { GEMINI_DEFAULT_KEY, startGeminiUpstream } from "../support/upstreams/gemini.ts";

const READ_FILE = {
  name: "read_file",
  description: "Reads a file",
  parameters: { type: "OBJECT", properties: { path: { type: "STRING" } }, required: ["path"] },
};

interface GeminiChunk {
  candidates: { content: { parts: { text?: string; functionCall?: { name: string; args: Record<string, unknown> } }[]; role: string }; finishReason?: string; index: number }[];
  usageMetadata: Record<string, number | undefined>;
  modelVersion: string;
  responseId: string;
  x_imitation?: unknown;
}
interface GeminiError {
  error: { code: number; message: string; status: string; details?: Record<string, unknown>[] };
}

describe("Gemini imitation", () => {
  const up = startGeminiUpstream();
  const post = (method: string, body: unknown, init: { headers?: Record<string, string>; query?: string; model?: string } = {}) =>
    fetch(`${up.url}/v1beta/models/${init.model ?? "gemini-test"}:${method}${init.query ?? ""}`, {
      method: "POST",
      headers: { "x-goog-api-key": GEMINI_DEFAULT_KEY, "content-type": "application/json", ...init.headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
  const ask = (text: string, extra: Record<string, unknown> = {}) => ({ contents: [{ role: "user", parts: [{ text }] }], ...extra });
  const geminiError = async (response: Response) => ((await response.json()) as GeminiError).error;
  beforeEach(() => up.reset());
  afterAll(() => up.stop());

  test("generateContent: candidates with model content, STOP, usage, modelVersion and responseId; recorded raw", async () => {
    const response = await post("generateContent", ask("hello there", { systemInstruction: { parts: [{ text: "be brief" }] }, generationConfig: { temperature: 0.2, maxOutputTokens: 64 } }));
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json; charset=UTF-8");
    const text = await response.text();
    expect(text).toStartWith('{\n  "candidates"');
    const answer = JSON.parse(text) as GeminiChunk;
    expect(answer.candidates).toEqual([{ content: { parts: [{ text: "echo: hello there" }], role: "model" }, finishReason: "STOP", index: 0 }]);
    const usage = answer.usageMetadata;
    expect(usage.candidatesTokenCount).toBe(5);
    expect(usage.totalTokenCount).toBe(usage.promptTokenCount! + usage.candidatesTokenCount!);
    expect(answer.modelVersion).toBe("gemini-test");
    expect(answer.responseId).toMatch(/^imit/);
    const [recorded] = up.requests;
    expect(recorded).toMatchObject({ method: "POST", path: "/v1beta/models/gemini-test:generateContent", valid: true, status: 200 });
    expect(recorded!.headers["x-goog-api-key"]).toBe(GEMINI_DEFAULT_KEY);
    expect(JSON.parse(recorded!.rawBody)).toEqual(recorded!.body as object);
  });

  test("the key may come as ?key=, and snake_case field names parse like camelCase ones", async () => {
    const response = await post("generateContent", { contents: [{ parts: [{ text: "hi" }] }], system_instruction: { parts: [{ text: "s" }] }, generation_config: { max_output_tokens: 8 } }, {
      headers: { "x-goog-api-key": "" },
      query: `?key=${GEMINI_DEFAULT_KEY}`,
    });
    expect(response.status).toBe(200);
    expect(up.invalid()).toEqual([]);
  });

  test("streamGenerateContent?alt=sse: CRLF-framed chunks parse one by one, the last with STOP and the full usage", async () => {
    const response = await post("streamGenerateContent", ask("stream me please"), { query: "?alt=sse" });
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const raw = response.clone();
    const events = await readEvents(response);
    expect((await raw.text()).includes("\r\n\r\n")).toBe(true);
    const chunks = events.map((e) => JSON.parse(e.data) as GeminiChunk);
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.map((c) => c.candidates[0]!.content.parts[0]!.text).join("")).toBe("echo: stream me please");
    expect(chunks.slice(0, -1).every((c) => c.candidates[0]!.finishReason === undefined && c.usageMetadata.candidatesTokenCount === undefined)).toBe(true);
    const last = chunks.at(-1)!;
    expect(last.candidates[0]!.finishReason).toBe("STOP");
    expect(last.usageMetadata.totalTokenCount).toBe(last.usageMetadata.promptTokenCount! + last.usageMetadata.candidatesTokenCount!);
    expect(new Set(chunks.map((c) => c.responseId)).size).toBe(1);
  });

  test("streamGenerateContent without alt: one JSON array whose elements are the chunks", async () => {
    const response = await post("streamGenerateContent", ask("stream me please"));
    expect(response.headers.get("content-type")).toBe("application/json; charset=UTF-8");
    const text = await response.text();
    expect(text).toStartWith("[{");
    expect(text).toEndWith("}]");
    const chunks = JSON.parse(text) as GeminiChunk[];
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.map((c) => c.candidates[0]!.content.parts[0]!.text).join("")).toBe("echo: stream me please");
    expect(chunks.at(-1)!.candidates[0]!.finishReason).toBe("STOP");
  });

  test("tool call round trip: a functionCall part with STOP, then the answer quotes the functionResponse output", async () => {
    up.script({ toolCall: true, toolArguments: { path: "docs/x.md" } });
    const tools = [{ functionDeclarations: [READ_FILE] }];
    const contents: Record<string, unknown>[] = [{ role: "user", parts: [{ text: "read the docs" }] }];
    const events = await readEvents(await post("streamGenerateContent", { contents, tools, toolConfig: { functionCallingConfig: { mode: "AUTO" } } }, { query: "?alt=sse" }));
    expect(events).toHaveLength(1);
    const call = JSON.parse(events[0]!.data) as GeminiChunk;
    expect(call.candidates[0]!.finishReason).toBe("STOP");
    const part = call.candidates[0]!.content.parts[0]!;
    expect(part).toEqual({ functionCall: { name: "read_file", args: { path: "docs/x.md" } } });
    contents.push(call.candidates[0]!.content, { role: "user", parts: [{ functionResponse: { name: "read_file", response: { output: "# Gateway readme" } } }] });
    const answer = (await (await post("generateContent", { contents, tools })).json()) as GeminiChunk;
    expect(answer.candidates[0]!.content.parts).toEqual([{ text: "tool result: # Gateway readme" }]);
    expect(up.invalid()).toEqual([]);
  });

  test("invalid requests get Google's 400 INVALID_ARGUMENT and are recorded as invalid", async () => {
    const jsonSchema = { ...READ_FILE, parameters: { type: "object", properties: { path: { type: "string" } }, additionalProperties: false } };
    const unknown = await post("generateContent", ask("x", { tools: [{ functionDeclarations: [jsonSchema] }] }));
    expect(unknown.status).toBe(400);
    const unknownError = await geminiError(unknown);
    expect(unknownError).toMatchObject({ code: 400, status: "INVALID_ARGUMENT" });
    expect(unknownError.message).toBe(`Invalid JSON payload received. Unknown name "additionalProperties" at 'tools[0].function_declarations[0].parameters': Cannot find field.`);
    expect(unknownError.details![0]).toMatchObject({ "@type": "type.googleapis.com/google.rpc.BadRequest", fieldViolations: [{ field: "tools[0].function_declarations[0].parameters" }] });
    const role = await post("generateContent", { contents: [{ role: "assistant", parts: [{ text: "x" }] }] });
    expect((await geminiError(role)).message).toBe("Please use a valid role: user, model.");
    const empty = await post("generateContent", { contents: [] });
    expect((await geminiError(empty)).message).toBe("* GenerateContentRequest.contents: contents is not specified\n");
    const noParts = await post("generateContent", { contents: [{ role: "user", parts: [] }] });
    expect((await geminiError(noParts)).message).toBe("* GenerateContentRequest.contents[0].parts: contents.parts must not be empty.\n");
    const wrongType = await post("generateContent", { contents: [{ role: "user", parts: [{ text: 5 }] }] });
    expect((await geminiError(wrongType)).message).toBe("Invalid value at 'contents[0].parts[0].text' (TYPE_STRING), 5");
    const notRepeating = await post("generateContent", ask("x", { systemInstruction: [{ parts: [{ text: "s" }] }] }));
    expect((await geminiError(notRepeating)).message).toBe(`Invalid JSON payload received. Unknown name "systemInstruction": Proto field is not repeating, cannot start list.`);
    const badName = await post("generateContent", ask("x", { tools: [{ functionDeclarations: [{ ...READ_FILE, name: "read file" }] }] }));
    expect((await geminiError(badName)).message).toStartWith("* GenerateContentRequest.tools[0].function_declarations[0].name: Invalid function name.");
    const unanswered = await post("generateContent", {
      contents: [
        { role: "user", parts: [{ text: "x" }] },
        { role: "model", parts: [{ functionCall: { name: "read_file", args: {} } }, { functionCall: { name: "read_file", args: {} } }] },
        { role: "user", parts: [{ functionResponse: { name: "read_file", response: { output: "a" } } }] },
      ],
    });
    expect((await geminiError(unanswered)).message).toBe(
      "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.",
    );
    const notJson = await post("generateContent", "{nope");
    expect((await geminiError(notJson)).message).toStartWith("Invalid JSON payload received.");
    expect(up.invalid().map((r) => r.status)).toEqual([400, 400, 400, 400, 400, 400, 400, 400, 400]);
    expect(up.invalid()[0]!.problem).toContain("additionalProperties");
    // Lowercase JSON Schema type names are accepted, as Google matches enum names without case.
    const lowercase = await post("generateContent", ask("x", { tools: [{ functionDeclarations: [{ ...READ_FILE, parameters: { type: "object", properties: { path: { type: "string" } } } }] }] }));
    expect(lowercase.status).toBe(200);
  });

  test("no key is 403 PERMISSION_DENIED; a wrong key is 400 with reason API_KEY_INVALID; both recorded as invalid", async () => {
    const none = await post("generateContent", ask("x"), { headers: { "x-goog-api-key": "" } });
    expect(none.status).toBe(403);
    expect(await geminiError(none)).toMatchObject({ status: "PERMISSION_DENIED", message: expect.stringMatching(/^Method doesn't allow unregistered callers/) });
    const wrong = await post("generateContent", ask("x"), { headers: { "x-goog-api-key": "AIza-wrong" } });
    expect(wrong.status).toBe(400);
    const error = await geminiError(wrong);
    expect(error).toMatchObject({ status: "INVALID_ARGUMENT", message: "API key not valid. Please pass a valid API key." });
    expect(error.details).toContainEqual(expect.objectContaining({ reason: "API_KEY_INVALID" }));
    expect(up.invalid().map((r) => r.status)).toEqual([403, 400]);
  });

  test("scripted 429 is RESOURCE_EXHAUSTED with a RetryInfo delay and no Retry-After header", async () => {
    up.script({ error: { status: 429, retryAfter: 7 } });
    const response = await post("generateContent", ask("x"));
    expect(response.status).toBe(429);
    expect(response.headers.get("retry-after")).toBeNull();
    const error = await geminiError(response);
    expect(error).toMatchObject({ code: 429, status: "RESOURCE_EXHAUSTED" });
    expect(error.details).toEqual([{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "7s" }]);
    expect(up.requests[0]).toMatchObject({ valid: true, status: 429 });
    expect((await post("generateContent", ask("again"))).status).toBe(200);
  });

  test("unknown member and cache/thought usage when scripted; thoughts count in the total, not the candidates", async () => {
    up.script({ extraMember: true, detailedUsage: true, times: 2 });
    const answer = (await (await post("generateContent", ask("hello"))).json()) as GeminiChunk;
    expect(answer.x_imitation).toEqual({ kept: true });
    const usage = answer.usageMetadata;
    expect(usage.cachedContentTokenCount).toBe(SCRIPTED_USAGE.cachedTokens);
    expect(usage.thoughtsTokenCount).toBe(SCRIPTED_USAGE.reasoningTokens);
    expect(usage.totalTokenCount).toBe(usage.promptTokenCount! + usage.candidatesTokenCount! + SCRIPTED_USAGE.reasoningTokens);
    const chunks = (await readEvents(await post("streamGenerateContent", ask("hello"), { query: "?alt=sse" }))).map((e) => JSON.parse(e.data) as GeminiChunk);
    expect(chunks.every((c) => (c.x_imitation as { kept?: boolean } | undefined)?.kept === true)).toBe(true);
  });

  test("a stream cut after N chunks breaks the body, not ends it", async () => {
    up.script({ cutAfterEvents: 2 });
    const response = await post("streamGenerateContent", ask("a long answer please"), { query: "?alt=sse" });
    const error = await response.text().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(up.requests[0]).toMatchObject({ valid: true, status: 200 });
  });
});
