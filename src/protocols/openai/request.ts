// OpenAI Chat Completions request <-> IR. Decoding faces a client (types checked member by member, a
// 400 names the member); encoding faces an OpenAI or OpenAI-compatible upstream. Members the IR does not
// model are dropped with a warning; what the IR cannot express at all (n > 1, audio output, the
// deprecated `functions`) is a 400, never a silent change (architecture.md, principle 3).
import { compact } from "../compact.ts";
import type { IrAssistantPart, IrMediaSource, IrMessage, IrReasoning, IrRequest, IrResponseFormat, IrSampling, IrTextPart, IrTool, IrToolChoice, IrToolResultPart, IrUserPart } from "../../ir/index.ts";
import type { Decoded, EncodedRequest, IngressContext } from "../types.ts";
import { formatPath } from "../../config/schema-errors.ts";
import { check, decodeCatching, ensure, fault, isObject, MODELLED, PART_CHECKS, warnUnmodelled, type AllowedToolsChoice, type AssistantMessage, type ChatRequestHead, type FilePart, type FunctionTool, type ImagePart, type JsonSchemaFormat, type NamedToolChoice } from "./schema.ts";

type Warn = (warning: string) => void;
type Json = Record<string, unknown>;


// ---- decode (client -> IR) ----

/**
 * `context.pathModel` is set by the direct routes (`POST /{provider}/{model}`, `POST /{model}`), which
 * take an OpenAI body whose model is in the path: there it wins, and the body may omit `model`.
 */
export function decodeRequest(body: unknown, context: IngressContext): Decoded<IrRequest> {
  const withModel = context.pathModel !== undefined && isObject(body) ? { ...body, model: context.pathModel } : body;
  return decodeCatching((warn) => decodeBody(withModel, warn));
}

function decodeBody(body: unknown, warn: Warn): IrRequest {
  if (!isObject(body)) fault("", "expected a JSON object");
  ensure(check.head, body, "");
  const head = body as ChatRequestHead;
  refuseInexpressible(head);
  warnUnmodelled(head, MODELLED.top, "", warn);
  if (head.stream_options) warnUnmodelled(head.stream_options, MODELLED.streamOptions, "/stream_options", warn);
  const { system, messages } = decodeMessages(head.messages, warn);
  const { tools, toolChoice } = decodeToolChoice(head.tool_choice, decodeTools(head.tools ?? [], warn), warn);
  const stream = head.stream === true;
  return compact({
    model: head.model,
    system,
    messages,
    tools,
    toolChoice,
    parallelToolCalls: head.parallel_tool_calls ?? undefined,
    sampling: decodeSampling(head),
    responseFormat: decodeResponseFormat(head.response_format ?? undefined),
    reasoning: decodeReasoning(head.reasoning_effort ?? undefined, warn),
    stream,
    includeUsage: stream && head.stream_options?.include_usage === true ? true : undefined,
    user: head.user ?? undefined,
  });
}

/** Requests whose answer the IR cannot carry: refusing beats answering something else. */
function refuseInexpressible(head: ChatRequestHead): void {
  if (typeof head.n === "number" && head.n > 1) fault("/n", "only one choice (n = 1) can be generated through this gateway's protocol translation");
  for (const legacy of ["functions", "function_call"]) {
    if (head[legacy] !== undefined && head[legacy] !== null) fault(`/${legacy}`, "deprecated and not supported across protocols; use tools and tool_choice");
  }
  const modalities = head.modalities;
  if ((Array.isArray(modalities) && modalities.includes("audio")) || (head.audio !== undefined && head.audio !== null)) {
    fault(Array.isArray(modalities) ? "/modalities" : "/audio", "audio output cannot be produced across protocols");
  }
}

function decodeMessages(wire: readonly Json[], warn: Warn): { system: IrTextPart[]; messages: IrMessage[] } {
  const system: IrTextPart[] = [];
  const messages: IrMessage[] = [];
  let toolRun: IrToolResultPart[] | undefined; // consecutive tool messages become one IR tool message
  wire.forEach((message, i) => {
    const pointer = `/messages/${i}`;
    const role = message.role;
    if (role !== "tool") toolRun = undefined;
    if (role === "system" || role === "developer") {
      ensure(check.instruction, message, pointer);
      if (messages.length > 0) warn(`${formatPath(pointer)}: a ${role} message after the conversation began is moved into the system instructions`);
      warnUnmodelled(message, MODELLED.message, pointer, warn);
      system.push(...textContent(message.content as string | unknown[], pointer, warn));
    } else if (role === "user") {
      ensure(check.user, message, pointer);
      warnUnmodelled(message, MODELLED.message, pointer, warn);
      messages.push({ role: "user", content: userContent(message.content as string | unknown[], pointer, warn) });
    } else if (role === "assistant") {
      messages.push({ role: "assistant", content: decodeAssistant(message, pointer, warn) });
    } else if (role === "tool") {
      const result = decodeToolResult(message, pointer, warn);
      if (toolRun) toolRun.push(result);
      else messages.push({ role: "tool", content: (toolRun = [result]) });
    } else if (role === "function") {
      fault(`${pointer}/role`, "function messages are deprecated and not supported across protocols; use tool messages");
    } else {
      fault(`${pointer}/role`, `expected one of system, developer, user, assistant, tool, got ${JSON.stringify(role)}`);
    }
  });
  return { system, messages };
}

/** Validates each part's head and its own shape, then hands it to `each` with its pointer. */
function eachPart<T>(content: unknown[], pointer: string, warn: Warn, each: (part: Json, type: string, at: string) => T | undefined): T[] {
  const out: T[] = [];
  content.forEach((part, j) => {
    const at = `${pointer}/content/${j}`;
    ensure(check.partHead, part, at);
    const type = (part as { type: string }).type;
    // Own members only: a part `type` of "toString" or "constructor" must not reach Object.prototype.
    const partCheck = Object.hasOwn(PART_CHECKS, type) ? PART_CHECKS[type] : undefined;
    if (partCheck) ensure(partCheck, part, at);
    const known = Object.hasOwn(MODELLED.part, type) ? MODELLED.part[type] : undefined;
    if (known) warnUnmodelled(part as Json, known, at, warn);
    const decoded = each(part as Json, type, at);
    if (decoded !== undefined) out.push(decoded);
  });
  return out;
}

/** system, developer and tool content: a string or text parts. */
function textContent(content: string | unknown[], pointer: string, warn: Warn): IrTextPart[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return eachPart(content, pointer, warn, (part, type, at) => {
    if (type !== "text") fault(`${at}/type`, `expected "text" (this role takes text parts only), got ${JSON.stringify(type)}`);
    return { type: "text", text: part.text as string };
  });
}

function userContent(content: string | unknown[], pointer: string, warn: Warn): IrUserPart[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return eachPart<IrUserPart>(content, pointer, warn, (part, type, at) => {
    switch (type) {
      case "text":
        return { type: "text", text: part.text as string };
      case "image_url":
        return decodeImage(part as ImagePart, at, warn);
      case "file":
        return decodeFile(part as FilePart, at);
      case "input_audio":
        warn(`${formatPath(at)}: audio input is not modelled across protocols; dropped`);
        return undefined;
      default:
        return fault(`${at}/type`, `expected one of text, image_url, input_audio, file, got ${JSON.stringify(type)}`);
    }
  });
}

function decodeImage(part: ImagePart, at: string, warn: Warn): IrUserPart {
  const { url, detail } = part.image_url;
  if (detail !== undefined && detail !== "auto") warn(`${formatPath(`${at}/image_url/detail`)}: not modelled across protocols; dropped`);
  if (url.startsWith("data:")) return { type: "image", source: parseDataUrl(url, `${at}/image_url/url`) };
  if (/^https?:\/\//i.test(url)) return { type: "image", source: { kind: "url", url } };
  return fault(`${at}/image_url/url`, "expected an http(s) URL or a base64 data: URL");
}

/** `data:<media type>[;params];base64,<data>`: parsed by position, the data itself is never scanned. */
function parseDataUrl(url: string, pointer: string): IrMediaSource {
  const comma = url.indexOf(",");
  const meta = comma < 0 ? "" : url.slice("data:".length, comma);
  const mediaType = meta.split(";")[0] ?? "";
  if (!meta.endsWith(";base64") || mediaType === "") fault(pointer, "expected a base64 data: URL (data:<media type>;base64,<data>)");
  return { kind: "base64", mediaType, data: url.slice(comma + 1) };
}

/** A `file` part with inline data is a document. An uploaded file id lives in OpenAI's storage only. */
function decodeFile(part: FilePart, at: string): IrUserPart {
  const { file_data: data, filename } = part.file;
  if (data === undefined) {
    return fault(`${at}/file`, part.file.file_id !== undefined ? "file_id refers to OpenAI file storage, which other providers cannot read; send file_data" : "expected file_data");
  }
  // Chat Completions file inputs are PDFs; bare base64 (no data: prefix) is taken as one.
  const source: IrMediaSource = data.startsWith("data:") ? parseDataUrl(data, `${at}/file/file_data`) : { kind: "base64", mediaType: "application/pdf", data };
  return compact({ type: "document" as const, source, title: filename });
}

function decodeAssistant(message: Json, pointer: string, warn: Warn): IrAssistantPart[] {
  ensure(check.assistant, message, pointer);
  if (message.function_call !== undefined && message.function_call !== null) fault(`${pointer}/function_call`, "deprecated and not supported across protocols; use tool_calls");
  warnUnmodelled(message, MODELLED.assistant, pointer, warn);
  const { content, refusal, tool_calls: calls } = message as AssistantMessage;
  const parts: IrAssistantPart[] = [];
  if (typeof content === "string" && content !== "") parts.push({ type: "text", text: content });
  if (Array.isArray(content)) {
    parts.push(
      ...eachPart<IrTextPart>(content, pointer, warn, (part, type, at) => {
        if (type === "text") return { type: "text", text: part.text as string };
        if (type === "refusal") return { type: "text", text: part.refusal as string };
        return fault(`${at}/type`, `expected "text" or "refusal", got ${JSON.stringify(type)}`);
      }),
    );
  }
  // A refusal is what the model said; the IR has no refusal kind, so it is text.
  if (refusal) parts.push({ type: "text", text: refusal });
  (calls ?? []).forEach((call, j) => {
    if (call.type !== "function" || !call.function) fault(`${pointer}/tool_calls/${j}/type`, `only function tool calls can cross protocols, got ${JSON.stringify(call.type)}`);
    parts.push({ type: "tool_call", id: call.id, name: call.function.name, arguments: call.function.arguments });
  });
  return parts;
}

function decodeToolResult(message: Json, pointer: string, warn: Warn): IrToolResultPart {
  ensure(check.tool, message, pointer);
  warnUnmodelled(message, MODELLED.tool, pointer, warn);
  return { type: "tool_result", toolCallId: message.tool_call_id as string, content: textContent(message.content as string | unknown[], pointer, warn) };
}

function decodeTools(tools: readonly { type: string }[], warn: Warn): IrTool[] {
  return tools.map((tool, i) => {
    const pointer = `/tools/${i}`;
    if (tool.type !== "function") fault(`${pointer}/type`, `only function tools can cross protocols, got ${JSON.stringify(tool.type)}`);
    ensure(check.functionTool, tool, pointer);
    const fn = (tool as FunctionTool).function;
    warnUnmodelled(fn, MODELLED.function, `${pointer}/function`, warn);
    // Omitted parameters mean "takes no arguments" (API reference, FunctionDefinition).
    return compact({ name: fn.name, description: fn.description ?? undefined, parameters: fn.parameters ?? { type: "object", properties: {} }, strict: fn.strict ?? undefined });
  });
}

/** `allowed_tools` narrows the tools without a named target: expressed by sending only those tools. */
function decodeToolChoice(choice: ChatRequestHead["tool_choice"], tools: IrTool[], warn: Warn): { tools: IrTool[]; toolChoice?: IrToolChoice } {
  if (choice === undefined || choice === null) return { tools };
  if (typeof choice === "string") {
    if (choice === "auto" || choice === "none" || choice === "required") return { tools, toolChoice: { type: choice } };
    return fault("/tool_choice", `expected one of auto, none, required or an object, got ${JSON.stringify(choice)}`);
  }
  if (choice.type === "function") {
    ensure(check.namedChoice, choice, "/tool_choice");
    return { tools, toolChoice: { type: "tool", name: (choice as NamedToolChoice).function.name } };
  }
  if (choice.type === "allowed_tools") {
    ensure(check.allowedTools, choice, "/tool_choice");
    const { mode, tools: allowed } = (choice as AllowedToolsChoice).allowed_tools;
    const names = new Set(allowed.map((t) => t.function?.name));
    warn("tool_choice.allowed_tools: expressed by sending only the allowed tools");
    return { tools: tools.filter((t) => names.has(t.name)), toolChoice: { type: mode } };
  }
  return fault("/tool_choice/type", `only function tools can cross protocols, got ${JSON.stringify(choice.type)}`);
}

function decodeSampling(head: ChatRequestHead): IrSampling {
  const stop = head.stop;
  return compact({
    temperature: head.temperature ?? undefined,
    topP: head.top_p ?? undefined,
    // max_tokens is the deprecated name of the same cap; the newer member wins when both are sent.
    maxTokens: head.max_completion_tokens ?? head.max_tokens ?? undefined,
    stop: stop === undefined || stop === null || stop.length === 0 ? undefined : typeof stop === "string" ? [stop] : stop,
    seed: head.seed ?? undefined,
    frequencyPenalty: head.frequency_penalty ?? undefined,
    presencePenalty: head.presence_penalty ?? undefined,
  });
}

function decodeResponseFormat(format: { type: string } | undefined): IrResponseFormat | undefined {
  if (format === undefined) return undefined;
  if (format.type === "text") return { type: "text" };
  if (format.type === "json_object") return { type: "json" };
  if (format.type !== "json_schema") return fault("/response_format/type", `expected one of text, json_object, json_schema, got ${JSON.stringify(format.type)}`);
  ensure(check.jsonSchema, format, "/response_format");
  const spec = (format as JsonSchemaFormat).json_schema;
  return compact({ type: "json_schema" as const, name: spec.name, description: spec.description ?? undefined, schema: spec.schema ?? {}, strict: spec.strict ?? undefined });
}

const IR_EFFORTS = new Set(["minimal", "low", "medium", "high"]);

function decodeReasoning(effort: string | undefined, warn: Warn): IrReasoning | undefined {
  if (effort === undefined) return undefined;
  if (IR_EFFORTS.has(effort)) return { effort: effort as NonNullable<IrReasoning["effort"]> };
  if (effort === "none") {
    warn("reasoning_effort: none has no IR form; sent without reasoning settings (the target model's default)");
    return undefined;
  }
  if (effort === "xhigh" || effort === "max") {
    warn(`reasoning_effort: ${effort} clamped to high`);
    return { effort: "high" };
  }
  return fault("/reasoning_effort", `expected one of none, minimal, low, medium, high, xhigh, max, got ${JSON.stringify(effort)}`);
}

// ---- encode (IR -> upstream) ----

export function encodeRequest(ir: IrRequest, upstreamModel: string): EncodedRequest {
  const warnings: string[] = [];
  const warn: Warn = (w) => warnings.push(w);
  const body: Json = { model: upstreamModel, messages: encodeMessages(ir, warn) };
  if (ir.tools.length > 0) body.tools = ir.tools.map(encodeTool);
  if (ir.toolChoice) body.tool_choice = ir.toolChoice.type === "tool" ? { type: "function", function: { name: ir.toolChoice.name } } : ir.toolChoice.type;
  if (ir.parallelToolCalls !== undefined) body.parallel_tool_calls = ir.parallelToolCalls;
  Object.assign(body, encodeSampling(ir.sampling, warn));
  if (ir.responseFormat) body.response_format = encodeResponseFormat(ir.responseFormat);
  const effort = encodeReasoning(ir.reasoning, warn);
  if (effort) body.reasoning_effort = effort;
  if (ir.stream) {
    body.stream = true;
    // Always asked for, whatever the client said: the gateway meters every stream. The client's own
    // include_usage only decides whether its stream encoder forwards the usage chunk.
    body.stream_options = { include_usage: true };
  }
  if (ir.user !== undefined) body.user = ir.user;
  return { path: "/chat/completions", body, warnings };
}

/** One system message per IR system part: plain strings, which every compatible server accepts. */
function encodeMessages(ir: IrRequest, warn: Warn): Json[] {
  const out: Json[] = ir.system.map((part) => ({ role: "system", content: part.text }));
  ir.messages.forEach((message, i) => {
    if (message.role === "user") out.push({ role: "user", content: encodeUserContent(message.content, i, warn) });
    else if (message.role === "assistant") out.push(encodeAssistant(message.content, i, warn));
    else for (const result of message.content) out.push(encodeToolResult(result, i, warn));
  });
  return out;
}

const dataUrl = (source: IrMediaSource) => (source.kind === "url" ? source.url : `data:${source.mediaType};base64,${source.data}`);

function encodeUserContent(parts: readonly IrUserPart[], i: number, warn: Warn): string | Json[] {
  const only = parts[0];
  if (parts.length === 1 && only?.type === "text") return only.text;
  const out: Json[] = [];
  for (const part of parts) {
    if (part.type === "text") out.push({ type: "text", text: part.text });
    else if (part.type === "image") out.push({ type: "image_url", image_url: { url: dataUrl(part.source) } });
    else if (part.source.kind === "base64") out.push({ type: "file", file: { filename: part.title ?? "document.pdf", file_data: dataUrl(part.source) } });
    else warn(`messages[${i}]: a document by URL has no Chat Completions form; dropped`);
  }
  return out;
}

function encodeAssistant(parts: readonly IrAssistantPart[], i: number, warn: Warn): Json {
  const texts: IrTextPart[] = [];
  const calls: Json[] = [];
  for (const part of parts) {
    if (part.type === "text") texts.push(part);
    else if (part.type === "tool_call") calls.push({ id: part.id, type: "function", function: { name: part.name, arguments: part.arguments } });
    else warn(`messages[${i}]: reasoning has no Chat Completions input form; dropped`);
  }
  const first = texts[0];
  const content = texts.length === 0 ? null : texts.length === 1 && first ? first.text : texts.map((t) => ({ type: "text", text: t.text }));
  return calls.length > 0 ? { role: "assistant", content, tool_calls: calls } : { role: "assistant", content };
}

function encodeToolResult(result: IrToolResultPart, i: number, warn: Warn): Json {
  const texts = result.content.filter((p): p is IrTextPart => p.type === "text");
  if (texts.length < result.content.length) warn(`messages[${i}]: images in a tool result have no Chat Completions form; dropped`);
  if (result.isError) warn(`messages[${i}]: the tool result's error flag has no Chat Completions form; dropped`);
  const first = texts[0];
  const content = texts.length === 1 && first ? first.text : texts.length === 0 ? "" : texts.map((t) => ({ type: "text", text: t.text }));
  return { role: "tool", tool_call_id: result.toolCallId, content };
}

function encodeTool(tool: IrTool): Json {
  const fn: Json = { name: tool.name, parameters: tool.parameters };
  if (tool.description !== undefined) fn.description = tool.description;
  if (tool.strict !== undefined) fn.strict = tool.strict;
  return { type: "function", function: fn };
}

/** OpenAI takes at most 4 stop sequences (API reference, `stop`). */
const MAX_STOP = 4;

function encodeSampling(sampling: IrSampling, warn: Warn): Json {
  const out: Json = {};
  if (sampling.temperature !== undefined) out.temperature = sampling.temperature;
  if (sampling.topP !== undefined) out.top_p = sampling.topP;
  if (sampling.topK !== undefined) warn("top_k has no Chat Completions form; dropped");
  if (sampling.maxTokens !== undefined) out.max_completion_tokens = sampling.maxTokens;
  if (sampling.stop !== undefined && sampling.stop.length > 0) {
    if (sampling.stop.length > MAX_STOP) warn(`stop: ${sampling.stop.length} sequences clamped to the first ${MAX_STOP}`);
    out.stop = sampling.stop.slice(0, MAX_STOP);
  }
  if (sampling.seed !== undefined) out.seed = sampling.seed;
  if (sampling.frequencyPenalty !== undefined) out.frequency_penalty = sampling.frequencyPenalty;
  if (sampling.presencePenalty !== undefined) out.presence_penalty = sampling.presencePenalty;
  return out;
}

function encodeResponseFormat(format: IrResponseFormat): Json {
  if (format.type === "text") return { type: "text" };
  if (format.type === "json") return { type: "json_object" };
  // OpenAI requires a name; the IR's is optional (Gemini and Anthropic have none).
  const spec: Json = { name: format.name ?? "response", schema: format.schema };
  if (format.description !== undefined) spec.description = format.description;
  if (format.strict !== undefined) spec.strict = format.strict;
  return { type: "json_schema", json_schema: spec };
}

/**
 * IR reasoning -> `reasoning_effort`. An effort passes as is. A budget alone (Anthropic-style) becomes an
 * effort by these thresholds: Anthropic's smallest budget is 1024 tokens, so up to 1024 is `low`; up to
 * 8192 is `medium` (OpenAI's default effort); above that `high`; a budget of 0 or less (no thinking
 * wanted) is `minimal`. The conversion is reported as a warning.
 */
export function effortForBudget(budgetTokens: number): "minimal" | "low" | "medium" | "high" {
  if (budgetTokens <= 0) return "minimal";
  if (budgetTokens <= 1024) return "low";
  if (budgetTokens <= 8192) return "medium";
  return "high";
}

function encodeReasoning(reasoning: IrReasoning | undefined, warn: Warn): string | undefined {
  if (reasoning?.effort) return reasoning.effort;
  if (reasoning?.budgetTokens === undefined) return undefined;
  const effort = effortForBudget(reasoning.budgetTokens);
  warn(`reasoning budget of ${reasoning.budgetTokens} tokens sent as reasoning_effort ${effort}`);
  return effort;
}
