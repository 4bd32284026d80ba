// The IR features docs/protocols.md's pair table is evaluated on. Each is a minimal probe (an IR request
// or response fragment; `context` is the same request without the feature, whose own warnings are not the
// feature's) and a `read` that renders the feature as text, or undefined when it is absent: the text is
// both what two IRs are compared by and what a cell shows when a value came back changed. The
// adapters themselves decide every cell (scripts/protocol-table.ts), so nothing here says what a protocol
// does, except `quiet`: why a loss that raises no warning loses nothing in effect at that protocol. A
// loss without a warning and without a `quiet` reason fails the pair-table test.
import { inputTotal, type IrAssistantPart, type IrMediaSource, type IrRequest, type IrResponse, type IrResponseFormat, type IrToolResultPart, type IrUserPart } from "../src/ir/index.ts";
import type { WireProtocol } from "../src/protocols/types.ts";

type Quiet = Partial<Record<WireProtocol, string>>;
export interface RequestFeature {
  readonly label: string;
  readonly probe: Partial<IrRequest>;
  readonly context?: Partial<IrRequest>;
  readonly read: (ir: IrRequest) => string | undefined;
  readonly quiet?: Quiet;
}
export interface ResponseFeature {
  readonly label: string;
  readonly probe: Partial<IrResponse>;
  readonly read: (response: IrResponse) => string | undefined;
  readonly quiet?: Quiet;
}

export const BASE_REQUEST: IrRequest = { model: "pool", system: [], messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }], tools: [], sampling: {}, stream: false };
export const BASE_RESPONSE: IrResponse = {
  id: "resp_1",
  model: "m-1",
  created: 1_700_000_000,
  content: [{ type: "text", text: "Hello" }],
  finishReason: { unified: "stop" },
  usage: { inputNoCache: 10, inputCacheRead: 0, inputCacheWrite: 0, output: 5, outputReasoning: 0 },
};

// ---- reading a feature back ------------------------------------------------------------------------

/** Several values as one text; none is absent. */
const list = (values: readonly string[]) => (values.length === 0 ? undefined : values.join(", "));
/** JSON with sorted keys, so equal values read equal. */
function canonical(value: unknown): string {
  const sort = (v: unknown): unknown =>
    Array.isArray(v) ? v.map(sort) : typeof v === "object" && v !== null ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sort((v as Record<string, unknown>)[k])])) : v;
  return JSON.stringify(sort(value));
}
/** Arguments compare parsed, since encoders re-serialize them; text that is not JSON stays as it is. */
function parsed(text: string): string {
  try {
    return canonical(JSON.parse(text));
  } catch {
    return text;
  }
}
const source = (s: IrMediaSource) => (s.kind === "url" ? s.url : `${s.mediaType} base64 ${s.data}`);
const userParts = (ir: IrRequest): IrUserPart[] => ir.messages.flatMap((m) => (m.role === "user" ? [...m.content] : []));
const assistantParts = (ir: IrRequest): IrAssistantPart[] => ir.messages.flatMap((m) => (m.role === "assistant" ? [...m.content] : []));
const toolResults = (ir: IrRequest): IrToolResultPart[] => ir.messages.flatMap((m) => (m.role === "tool" ? [...m.content] : []));
const count = (n: number) => (n === 0 ? undefined : String(n));

// ---- request probes ---------------------------------------------------------------------------------

const WEATHER = { name: "get_weather", description: "Weather for a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } };
const withTools = (probe: Partial<IrRequest>): Partial<IrRequest> => ({ tools: [WEATHER], ...probe });
const history = (result: Partial<IrToolResultPart> = {}, args = '{"city":"Paris"}'): Partial<IrRequest> =>
  withTools({
    messages: [
      { role: "user", content: [{ type: "text", text: "Weather in Paris?" }] },
      { role: "assistant", content: [{ type: "tool_call", id: "call_1", name: "get_weather", arguments: args }] },
      { role: "tool", content: [{ type: "tool_result", toolCallId: "call_1", content: [{ type: "text", text: "18C" }], ...result }] },
    ],
  });
const PDF: IrMediaSource = { kind: "base64", mediaType: "application/pdf", data: "JVBERi0xLjQ=" };
const PNG: IrMediaSource = { kind: "base64", mediaType: "image/png", data: "iVBORw0KGgo=" };
const userSays = (...content: IrUserPart[]): Partial<IrRequest> => ({ messages: [{ role: "user", content: [{ type: "text", text: "Look:" }, ...content] }] });
const earlierTurn = (...content: IrAssistantPart[]): Partial<IrRequest> => ({
  messages: [
    { role: "user", content: [{ type: "text", text: "Hi" }] },
    { role: "assistant", content: [...content, { type: "text", text: "Hello" }] },
    { role: "user", content: [{ type: "text", text: "Again" }] },
  ],
});
const text = (value: unknown) => (value === undefined ? undefined : Array.isArray(value) ? value.join(", ") : String(value));
const sampling = (label: string, values: IrRequest["sampling"], read: (s: IrRequest["sampling"]) => unknown): RequestFeature => ({ label, probe: { sampling: values }, read: (ir) => text(read(ir.sampling)) });

type SchemaFormat = Extract<IrResponseFormat, { type: "json_schema" }>;
const JSON_SCHEMA = { type: "object", properties: { answer: { type: "string" } }, required: ["answer"] };
/** Each member of a JSON-schema format on its own, so one member's warning is not read as another's. */
const format = (label: string, extra: Partial<SchemaFormat>, read: (f: SchemaFormat) => unknown, quiet?: Quiet): RequestFeature => ({
  label,
  probe: { responseFormat: { type: "json_schema", schema: JSON_SCHEMA, ...extra } },
  ...(Object.keys(extra).length > 0 && { context: { responseFormat: { type: "json_schema", schema: JSON_SCHEMA } } }),
  read: (ir) => (ir.responseFormat?.type === "json_schema" ? text(read(ir.responseFormat)) : undefined),
  ...(quiet && { quiet }),
});
/** How the quiet reasons name each vendor's API. */
const VENDOR: Readonly<Record<WireProtocol, string>> = { openai: "Chat Completions", anthropic: "Anthropic", gemini: "Gemini", bedrock: "Converse", cohere: "Cohere", responses: "Responses" };
const quietFor = (protocols: readonly WireProtocol[], why: (vendor: string) => string): Quiet => Object.fromEntries(protocols.map((p) => [p, why(VENDOR[p])]));

const reasoning = (r: IrRequest["reasoning"]) => (r === undefined ? undefined : r.budgetTokens !== undefined ? `budget ${r.budgetTokens} tokens` : r.effort !== undefined ? `effort ${r.effort}` : "on (the model sizes it)");
/** Without a tool_choice a request with tools lets the model choose (every vendor's default), and one without tools calls none. */
const chosen = (ir: IrRequest) => (ir.toolChoice === undefined ? (ir.tools.length > 0 ? "auto" : "none (no tools)") : ir.toolChoice.type === "tool" ? `tool ${ir.toolChoice.name}` : ir.toolChoice.type);
const choice = (label: string, toolChoice: NonNullable<IrRequest["toolChoice"]>): RequestFeature => ({ label, probe: withTools({ toolChoice }), context: withTools({}), read: chosen });

export const REQUEST_FEATURES: readonly RequestFeature[] = [
  { label: "system instructions", probe: { system: [{ type: "text", text: "Be brief." }] }, read: (ir) => list(ir.system.map((p) => p.text)) },
  ...(
    [
      ["image by URL", "image", { kind: "url", url: "https://example.com/cat.png" }],
      ["base64 image", "image", PNG],
      ["base64 PDF document", "document", PDF],
      ["document by URL", "document", { kind: "url", url: "https://example.com/report.pdf" }],
    ] as const
  ).map(([label, type, media]) => ({
    label,
    probe: userSays({ type, source: media }),
    read: (ir: IrRequest) => list(userParts(ir).flatMap((p) => (p.type === type ? [source(p.source)] : []))),
  })),
  {
    label: "document title",
    probe: userSays({ type: "document", source: PDF, title: "Q3 report" }),
    context: userSays({ type: "document", source: PDF }),
    read: (ir) => list(userParts(ir).flatMap((p) => (p.type === "document" && p.title !== undefined ? [p.title] : []))),
  },
  { label: "tool definitions", probe: withTools({}), read: (ir) => list(ir.tools.map((t) => canonical({ name: t.name, description: t.description, parameters: t.parameters }))) },
  { label: "strict tool schema", probe: { tools: [{ ...WEATHER, strict: true }] }, context: withTools({}), read: (ir) => list(ir.tools.flatMap((t) => (t.strict === true ? [`${t.name} strict`] : []))) },
  choice("tool_choice auto", { type: "auto" }),
  choice("tool_choice none", { type: "none" }),
  choice("tool_choice required", { type: "required" }),
  choice("tool_choice of one named tool", { type: "tool", name: "get_weather" }),
  { label: "parallel tool calls off", probe: withTools({ parallelToolCalls: false }), context: withTools({}), read: (ir) => (ir.parallelToolCalls === false ? "off" : undefined) },
  {
    label: "tool call and its result matched by id",
    probe: history(),
    read: (ir) =>
      list([
        ...assistantParts(ir).flatMap((p) => (p.type === "tool_call" ? [`call ${p.id} ${p.name} ${parsed(p.arguments)}`] : [])),
        ...toolResults(ir).map((r) => `result ${r.toolCallId}: ${r.content.flatMap((c) => (c.type === "text" ? [parsed(c.text)] : [])).join("")}`),
      ]),
  },
  { label: "tool call arguments that are not a JSON object", probe: history({}, '"Paris"'), context: history(), read: (ir) => list(assistantParts(ir).flatMap((p) => (p.type === "tool_call" ? [p.arguments] : []))) },
  { label: "tool result marked as an error", probe: history({ isError: true }), context: history(), read: (ir) => list(toolResults(ir).flatMap((r) => (r.isError ? [`${r.toolCallId} is an error`] : []))) },
  {
    label: "image in a tool result",
    probe: history({ content: [{ type: "text", text: "map:" }, { type: "image", source: PNG }] }),
    context: history({ content: [{ type: "text", text: "map:" }] }),
    read: (ir) => list(toolResults(ir).flatMap((r) => r.content.flatMap((c) => (c.type === "image" ? [source(c.source)] : [])))),
  },
  { label: "reasoning effort", probe: { reasoning: { effort: "low" } }, read: (ir) => reasoning(ir.reasoning) },
  { label: "reasoning token budget", probe: { reasoning: { budgetTokens: 2048 } }, read: (ir) => reasoning(ir.reasoning) },
  {
    label: "reasoning left to the model to size",
    probe: { reasoning: {} },
    read: (ir) => reasoning(ir.reasoning),
    quiet: quietFor(["openai", "responses"], (vendor) => `a ${vendor} reasoning model asked for no effort thinks at its default one, which is what the request leaves to it`),
  },
  {
    label: "signed reasoning in history",
    probe: earlierTurn({ type: "reasoning", text: "The user greets me.", signature: "sig-1" }),
    context: earlierTurn(),
    read: (ir) => list(assistantParts(ir).flatMap((p) => (p.type === "reasoning" && p.text !== "" ? [`${JSON.stringify(p.text)}${p.signature ? ` signed ${p.signature}` : " unsigned"}`] : []))),
  },
  {
    label: "redacted reasoning in history",
    probe: earlierTurn({ type: "reasoning", text: "", redactedData: "opaque-1" }),
    context: earlierTurn(),
    read: (ir) => list(assistantParts(ir).flatMap((p) => (p.type === "reasoning" && p.redactedData !== undefined ? [p.redactedData] : []))),
  },
  sampling("temperature", { temperature: 0.7 }, (s) => s.temperature),
  sampling("temperature above 1", { temperature: 1.5 }, (s) => s.temperature),
  sampling("top_p", { topP: 0.9 }, (s) => s.topP),
  sampling("top_k", { topK: 40 }, (s) => s.topK),
  sampling("max output tokens", { maxTokens: 512 }, (s) => s.maxTokens),
  sampling("stop sequences", { stop: ["END"] }, (s) => s.stop),
  sampling("six stop sequences", { stop: ["a", "b", "c", "d", "e", "f"] }, (s) => s.stop),
  sampling("seed", { seed: 42 }, (s) => s.seed),
  sampling("frequency penalty", { frequencyPenalty: 0.5 }, (s) => s.frequencyPenalty),
  sampling("presence penalty", { presencePenalty: 0.5 }, (s) => s.presencePenalty),
  { label: "JSON output (no schema)", probe: { responseFormat: { type: "json" } }, read: (ir) => ir.responseFormat?.type },
  format("JSON-schema output", {}, (f) => canonical(f.schema)),
  format(
    "JSON-schema name",
    { name: "answer" },
    (f) => f.name,
    quietFor(["anthropic", "gemini", "cohere"], (vendor) => `a label only: ${vendor}'s response format has none, and the output does not depend on it`),
  ),
  format("JSON-schema description", { description: "The answer" }, (f) => f.description),
  format(
    "JSON-schema strict",
    { strict: true },
    (f) => f.strict,
    quietFor(["anthropic", "gemini", "bedrock", "cohere"], (vendor) => `${vendor}'s structured output always holds the model to the schema; there is no switch to turn off`),
  ),
  { label: "end-user id", probe: { user: "user-1" }, read: (ir) => ir.user },
  {
    label: "usage asked for in the stream",
    probe: { stream: true, includeUsage: true },
    context: { stream: true },
    read: (ir) => (ir.includeUsage ? "asked" : undefined),
    quiet: quietFor(["anthropic", "gemini", "bedrock", "cohere"], (vendor) => `${vendor} streams always end with the usage, so there is nothing to ask for; the flag only shapes the client's own stream`),
  },
];

// ---- response probes --------------------------------------------------------------------------------

const CALL: IrAssistantPart = { type: "tool_call", id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}' };
const finish = (unified: IrResponse["finishReason"]["unified"], content: IrAssistantPart[] = [{ type: "text", text: "Hello" }]): ResponseFeature => ({
  label: `finish reason ${unified}`,
  probe: { finishReason: { unified }, content },
  read: (r) => r.finishReason.unified,
});
const usage = (label: string, extra: Partial<IrResponse["usage"]>, read: (u: IrResponse["usage"]) => number): ResponseFeature => ({
  label,
  probe: { usage: { ...BASE_RESPONSE.usage, ...extra } },
  read: (r) => count(read(r.usage)),
});
const reasoningParts = (r: IrResponse) => r.content.flatMap((p) => (p.type === "reasoning" ? [p] : []));

export const RESPONSE_FEATURES: readonly ResponseFeature[] = [
  { label: "text", probe: {}, read: (r) => list(r.content.flatMap((p) => (p.type === "text" ? [p.text] : []))) },
  { label: "tool calls", probe: { content: [CALL], finishReason: { unified: "tool_calls" } }, read: (r) => list(r.content.flatMap((p) => (p.type === "tool_call" ? [`${p.id} ${p.name} ${parsed(p.arguments)}`] : []))) },
  finish("stop"),
  { label: "the stop sequence that matched", probe: { finishReason: { unified: "stop", stopSequence: "END" } }, read: (r) => r.finishReason.stopSequence },
  finish("length"),
  finish("tool_calls", [CALL]),
  finish("content_filter"),
  finish("pause"),
  finish("error"),
  finish("other"),
  { label: "input and output tokens", probe: {}, read: (r) => `${inputTotal(r.usage)} in, ${r.usage.output} out` },
  usage("cache-read input tokens", { inputCacheRead: 20 }, (u) => u.inputCacheRead),
  usage("cache-write input tokens", { inputCacheWrite: 30 }, (u) => u.inputCacheWrite),
  usage("reasoning tokens", { output: 50, outputReasoning: 20 }, (u) => u.outputReasoning),
  {
    label: "reasoning text",
    probe: { content: [{ type: "reasoning", text: "The user greets me." }, { type: "text", text: "Hello" }] },
    read: (r) => list(reasoningParts(r).flatMap((p) => (p.text === "" ? [] : [p.text]))),
  },
  {
    label: "reasoning signature",
    probe: { content: [{ type: "reasoning", text: "The user greets me.", signature: "sig-1" }, { type: "text", text: "Hello" }] },
    read: (r) => list(reasoningParts(r).flatMap((p) => (p.signature ? [p.signature] : []))),
  },
  {
    label: "redacted reasoning",
    probe: { content: [{ type: "reasoning", text: "", redactedData: "opaque-1" }, { type: "text", text: "Hello" }] },
    read: (r) => list(reasoningParts(r).flatMap((p) => (p.redactedData === undefined ? [] : [p.redactedData]))),
  },
];
