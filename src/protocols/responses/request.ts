// OpenAI Responses request <-> IR. Decoding faces a client (types checked item by item, a 400 names the
// member); encoding faces OpenAI's Responses API or a compatible server. Members the IR does not model
// are dropped with a warning; a request that points at state stored at OpenAI (previous_response_id,
// conversation, a stored prompt, item references) is a 400: the IR carries the whole conversation, and
// another provider cannot read OpenAI's store.
import { compact } from "../compact.ts";
import type { IrAssistantPart, IrImagePart, IrMediaSource, IrMessage, IrReasoning, IrRequest, IrResponseFormat, IrSampling, IrTextPart, IrTool, IrToolChoice, IrToolResultPart, IrUserPart } from "../../ir/index.ts";
import type { Decoded, EncodedRequest, IngressContext } from "../types.ts";
import { formatPath } from "../../config/schema-errors.ts";
import { effortForBudget } from "../openai/request.ts";
import { check, decodeCatching, ensure, fault, isObject, MODELLED, PART_CHECKS, warnUnmodelled, type AllowedToolsChoice, type FunctionCallItem, type FunctionTool, type InputFile, type InputImage, type JsonSchemaFormat, type ReasoningItem, type RequestHead } from "./schema.ts";

type Warn = (warning: string) => void;
type Json = Record<string, unknown>;

export const RESPONSES_PATH = "/responses";


// ---- decode (client -> IR) ----

export function decodeRequest(body: unknown, _context: IngressContext): Decoded<IrRequest> {
  return decodeCatching((warn) => decodeBody(body, warn));
}

function decodeBody(body: unknown, warn: Warn): IrRequest {
  if (!isObject(body)) fault("", "expected a JSON object");
  ensure(check.head, body, "");
  const head = body as RequestHead;
  refuseStored(head);
  warnUnmodelled(head, MODELLED.top, "", warn);
  // store defaults to true at OpenAI; only an explicit ask is reported as lost.
  if (head.store === true) warn("store: the response is not stored at OpenAI when translated; dropped");
  if (head.metadata && Object.keys(head.metadata).length > 0) warn("metadata: not modelled across protocols; dropped");
  if (head.text) warnUnmodelled(head.text, MODELLED.text, "/text", warn);
  if (head.reasoning) warnUnmodelled(head.reasoning, MODELLED.reasoning, "/reasoning", warn);
  if (head.input === undefined) fault("/input", "required member missing (expected string or array of input items)");
  const { system, messages } = decodeInput(head.input, warn);
  const instructions: IrTextPart[] = head.instructions ? [{ type: "text", text: head.instructions }] : [];
  const { tools, toolChoice } = decodeToolChoice(head.tool_choice, decodeTools(head.tools ?? [], warn), warn);
  const stream = head.stream === true;
  return compact({
    model: head.model,
    system: [...instructions, ...system],
    messages,
    tools,
    toolChoice,
    parallelToolCalls: head.parallel_tool_calls ?? undefined,
    sampling: compact({ temperature: head.temperature ?? undefined, topP: head.top_p ?? undefined, maxTokens: head.max_output_tokens ?? undefined }),
    responseFormat: decodeFormat(head.text?.format ?? undefined),
    reasoning: decodeReasoning(head.reasoning?.effort ?? undefined, warn),
    stream,
    // A Responses stream always ends with the usage (in response.completed).
    includeUsage: stream ? true : undefined,
    user: head.safety_identifier ?? head.user ?? undefined,
  });
}

const STORED = "the gateway translates this request for another provider, which cannot read state stored at OpenAI; send the whole conversation in input";

/** Members that name state kept at OpenAI; only a same-protocol route (which never decodes) can pass them on. */
function refuseStored(head: RequestHead): void {
  for (const member of ["previous_response_id", "conversation", "prompt"]) {
    if (head[member] !== undefined && head[member] !== null) fault(`/${member}`, STORED);
  }
  if (head.background === true) fault("/background", "background responses are stored at OpenAI and polled; they cannot be served across protocols");
}

/**
 * Input items -> IR messages. An assistant turn is a run of items (reasoning, message, function_call)
 * and becomes one IR assistant message; a run of function_call_output items becomes one tool message.
 */
function decodeInput(input: string | unknown[], warn: Warn): { system: IrTextPart[]; messages: IrMessage[] } {
  if (typeof input === "string") return { system: [], messages: [{ role: "user", content: [{ type: "text", text: input }] }] };
  const system: IrTextPart[] = [];
  const messages: IrMessage[] = [];
  let assistant: IrAssistantPart[] | undefined;
  let results: IrToolResultPart[] | undefined;
  const assistantTurn = (): IrAssistantPart[] => {
    if (assistant) return assistant;
    results = undefined;
    messages.push({ role: "assistant", content: (assistant = []) });
    return assistant;
  };
  const toolTurn = (): IrToolResultPart[] => {
    if (results) return results;
    assistant = undefined;
    messages.push({ role: "tool", content: (results = []) });
    return results;
  };
  input.forEach((item, i) => {
    const pointer = `/input/${i}`;
    ensure(check.itemHead, item, pointer);
    const { type, role } = item as { type?: string; role?: string };
    switch (type ?? (role === undefined ? undefined : "message")) {
      case "message": {
        ensure(check.message, item, pointer);
        warnUnmodelled(item as Json, MODELLED.message, pointer, warn);
        const content = (item as { content: string | unknown[] }).content;
        if (role === "system" || role === "developer") {
          if (messages.length > 0) warn(`${formatPath(pointer)}: a ${role} message after the conversation began is moved into the system instructions`);
          system.push(...systemContent(content, pointer, warn));
        } else if (role === "user") {
          assistant = results = undefined;
          messages.push({ role: "user", content: userContent(content, pointer, warn) });
        } else if (role === "assistant") {
          assistantTurn().push(...assistantContent(content, pointer, warn));
        } else {
          fault(`${pointer}/role`, `expected one of user, assistant, system, developer, got ${JSON.stringify(role)}`);
        }
        return;
      }
      case "function_call": {
        ensure(check.functionCall, item, pointer);
        warnUnmodelled(item as Json, MODELLED.functionCall, pointer, warn);
        const call = item as FunctionCallItem;
        assistantTurn().push({ type: "tool_call", id: call.call_id, name: call.name, arguments: call.arguments });
        return;
      }
      case "function_call_output":
        ensure(check.functionCallOutput, item, pointer);
        warnUnmodelled(item as Json, MODELLED.functionCallOutput, pointer, warn);
        toolTurn().push(decodeToolResult(item as { call_id: string; output: string | unknown[] }, pointer, warn));
        return;
      case "reasoning": {
        const part = decodeReasoningItem(item, pointer, warn);
        if (part) assistantTurn().push(part);
        return;
      }
      case "item_reference":
        return fault(pointer, "item references point at items stored at OpenAI, which another provider cannot read; send the items themselves");
      case undefined:
        return fault(`${pointer}/type`, "required member missing (expected an item type, or a role for a message)");
      default:
        // web_search_call, file_search_call, computer_call, mcp_call, custom_tool_call, ...: OpenAI-side tool history.
        warn(`${formatPath(pointer)}: a ${type} item is not modelled across protocols; dropped`);
    }
  });
  return { system, messages };
}

/** Validates each part's head and its own shape, then hands it to `each` with its pointer. */
function eachPart<T>(content: unknown[], pointer: string, warn: Warn, each: (part: Json, type: string, at: string) => T | undefined, member = "content"): T[] {
  const out: T[] = [];
  content.forEach((part, j) => {
    const at = `${pointer}/${member}/${j}`;
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

const unexpected = (at: string, expected: string, type: string): never => fault(`${at}/type`, `expected ${expected}, got ${JSON.stringify(type)}`);

function systemContent(content: string | unknown[], pointer: string, warn: Warn): IrTextPart[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return eachPart(content, pointer, warn, (part, type, at) => (type === "input_text" ? { type: "text", text: part.text as string } : unexpected(at, '"input_text" (instructions are text only)', type)));
}

function userContent(content: string | unknown[], pointer: string, warn: Warn): IrUserPart[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return eachPart<IrUserPart>(content, pointer, warn, (part, type, at) => {
    if (type === "input_text") return { type: "text", text: part.text as string };
    if (type === "input_image") return decodeImage(part as InputImage, at, warn);
    if (type === "input_file") return decodeFile(part as InputFile, at);
    return unexpected(at, "one of input_text, input_image, input_file", type);
  });
}

function assistantContent(content: string | unknown[], pointer: string, warn: Warn): IrTextPart[] {
  if (typeof content === "string") return content === "" ? [] : [{ type: "text", text: content }];
  return eachPart<IrTextPart>(content, pointer, warn, (part, type, at) => {
    if (type === "output_text" || type === "input_text") {
      if (Array.isArray(part.annotations) && part.annotations.length > 0) warn(`${formatPath(`${at}/annotations`)}: citations are not modelled across protocols; dropped`);
      return { type: "text", text: part.text as string };
    }
    // A refusal is what the model said; the IR has no refusal kind, so it is text.
    if (type === "refusal") return { type: "text", text: part.refusal as string };
    return unexpected(at, "one of output_text, refusal", type);
  });
}

/** `data:<media type>[;params];base64,<data>`: parsed by position, the data itself is never scanned. */
function parseDataUrl(url: string, pointer: string): IrMediaSource {
  const comma = url.indexOf(",");
  const meta = comma < 0 ? "" : url.slice("data:".length, comma);
  const mediaType = meta.split(";")[0] ?? "";
  if (!meta.endsWith(";base64") || mediaType === "") fault(pointer, "expected a base64 data: URL (data:<media type>;base64,<data>)");
  return { kind: "base64", mediaType, data: url.slice(comma + 1) };
}

const isHttp = (url: string) => /^https?:\/\//i.test(url);
const FILE_ID = "file_id refers to OpenAI file storage, which other providers cannot read";

function decodeImage(part: InputImage, at: string, warn: Warn): IrImagePart {
  const { image_url: url, file_id: fileId, detail } = part;
  if (detail && detail !== "auto") warn(`${formatPath(`${at}/detail`)}: not modelled across protocols; dropped`);
  if (url?.startsWith("data:")) return { type: "image", source: parseDataUrl(url, `${at}/image_url`) };
  if (url && isHttp(url)) return { type: "image", source: { kind: "url", url } };
  if (url) return fault(`${at}/image_url`, "expected an http(s) URL or a base64 data: URL");
  return fault(fileId ? `${at}/file_id` : `${at}/image_url`, fileId ? `${FILE_ID}; send image_url` : "required member missing (expected image_url)");
}

/** An input_file with inline data or a URL is a document; an uploaded file id lives in OpenAI's storage only. */
function decodeFile(part: InputFile, at: string): IrUserPart {
  const { file_data: data, file_url: url, filename } = part;
  const title = filename ?? undefined;
  // Bare base64 (no data: prefix) is taken as a PDF, the file type the Responses API reads.
  if (data) return compact({ type: "document" as const, source: data.startsWith("data:") ? parseDataUrl(data, `${at}/file_data`) : { kind: "base64" as const, mediaType: "application/pdf", data }, title });
  if (url && isHttp(url)) return compact({ type: "document" as const, source: { kind: "url" as const, url }, title });
  if (url) return fault(`${at}/file_url`, "expected an http(s) URL");
  return fault(part.file_id ? `${at}/file_id` : at, part.file_id ? `${FILE_ID}; send file_data or file_url` : "expected file_data or file_url");
}

function decodeToolResult(item: { call_id: string; output: string | unknown[] }, pointer: string, warn: Warn): IrToolResultPart {
  const content =
    typeof item.output === "string"
      ? [{ type: "text" as const, text: item.output }]
      : eachPart<IrToolResultPart["content"][number]>(
          item.output,
          pointer,
          warn,
          (part, type, at) => {
            if (type === "input_text") return { type: "text", text: part.text as string };
            if (type === "input_image") return decodeImage(part as InputImage, at, warn);
            if (type === "input_file") {
              warn(`${formatPath(at)}: a file in a tool result is not modelled across protocols (text and images are); dropped`);
              return undefined;
            }
            return unexpected(at, "one of input_text, input_image, input_file", type);
          },
          "output",
        );
  return { type: "tool_result", toolCallId: item.call_id, content };
}

/** Reasoning text is the raw content when given (open-weight models), else the summary. */
function decodeReasoningItem(item: unknown, pointer: string, warn: Warn): IrAssistantPart | undefined {
  ensure(check.reasoning, item, pointer);
  warnUnmodelled(item as Json, MODELLED.reasoningItem, pointer, warn);
  const reasoning = item as ReasoningItem;
  if (reasoning.encrypted_content) warn(`${formatPath(`${pointer}/encrypted_content`)}: encrypted reasoning is readable only by OpenAI; dropped`);
  const parts = reasoning.content && reasoning.content.length > 0 ? reasoning.content : reasoning.summary;
  const text = parts.map((p) => p.text).join("\n\n");
  return text === "" ? undefined : { type: "reasoning", text };
}

function decodeTools(tools: readonly { type: string }[], warn: Warn): IrTool[] {
  const out: IrTool[] = [];
  tools.forEach((tool, i) => {
    const pointer = `/tools/${i}`;
    if (tool.type !== "function") {
      warn(`${formatPath(pointer)}: ${tool.type} tools run only at OpenAI (only function tools cross protocols); dropped`);
      return;
    }
    ensure(check.functionTool, tool, pointer);
    warnUnmodelled(tool as Json, MODELLED.function, pointer, warn);
    const fn = tool as FunctionTool;
    // Omitted strict means "the target's default": Responses alone would make it strict.
    out.push(compact({ name: fn.name, description: fn.description ?? undefined, parameters: fn.parameters ?? { type: "object", properties: {} }, strict: fn.strict ?? undefined }));
  });
  return out;
}

/** `allowed_tools` narrows the tools without a named target: expressed by sending only those tools. */
function decodeToolChoice(choice: RequestHead["tool_choice"], tools: IrTool[], warn: Warn): { tools: IrTool[]; toolChoice?: IrToolChoice } {
  if (choice === undefined || choice === null) return { tools };
  if (typeof choice === "string") {
    if (choice === "auto" || choice === "none" || choice === "required") return { tools, toolChoice: { type: choice } };
    return fault("/tool_choice", `expected one of auto, none, required or an object, got ${JSON.stringify(choice)}`);
  }
  if (choice.type === "function") {
    ensure(check.functionChoice, choice, "/tool_choice");
    return { tools, toolChoice: { type: "tool", name: (choice as unknown as { name: string }).name } };
  }
  if (choice.type === "allowed_tools") {
    ensure(check.allowedTools, choice, "/tool_choice");
    const { mode, tools: allowed } = choice as AllowedToolsChoice;
    const names = new Set(allowed.filter((t) => t.type === "function").map((t) => t.name));
    warn("tool_choice.allowed_tools: expressed by sending only the allowed function tools");
    return { tools: tools.filter((t) => names.has(t.name)), toolChoice: { type: mode } };
  }
  warn(`tool_choice: forces a ${choice.type} tool, which does not cross protocols; dropped`);
  return { tools };
}

function decodeFormat(format: { type: string } | undefined): IrResponseFormat | undefined {
  if (format === undefined) return undefined;
  if (format.type === "text") return { type: "text" };
  if (format.type === "json_object") return { type: "json" };
  if (format.type !== "json_schema") return fault("/text/format/type", `expected one of text, json_object, json_schema, got ${JSON.stringify(format.type)}`);
  ensure(check.jsonSchema, format, "/text/format");
  const spec = format as JsonSchemaFormat;
  return compact({ type: "json_schema" as const, name: spec.name, description: spec.description ?? undefined, schema: spec.schema, strict: spec.strict ?? undefined });
}

const IR_EFFORTS = new Set(["minimal", "low", "medium", "high"]);

function decodeReasoning(effort: string | undefined, warn: Warn): IrReasoning | undefined {
  if (effort === undefined) return undefined;
  if (IR_EFFORTS.has(effort)) return { effort: effort as NonNullable<IrReasoning["effort"]> };
  if (effort === "none") {
    warn("reasoning.effort: none has no IR form; sent without reasoning settings (the target model's default)");
    return undefined;
  }
  if (effort === "xhigh" || effort === "max") {
    warn(`reasoning.effort: ${effort} clamped to high`);
    return { effort: "high" };
  }
  return fault("/reasoning/effort", `expected one of none, minimal, low, medium, high, xhigh, max, got ${JSON.stringify(effort)}`);
}

// ---- encode (IR -> upstream) ----

export function encodeRequest(ir: IrRequest, upstreamModel: string): EncodedRequest {
  const warnings: string[] = [];
  const warn: Warn = (w) => warnings.push(w);
  const body: Json = { model: upstreamModel };
  if (ir.system.length > 0) body.instructions = instructionsOf(ir);
  body.input = encodeInput(ir.messages, warn);
  Object.assign(body, settings(ir, warn));
  if (ir.sampling.topK !== undefined) warn("top_k has no Responses form; dropped");
  if (ir.sampling.stop !== undefined && ir.sampling.stop.length > 0) warn("stop has no Responses form; dropped");
  if (ir.sampling.seed !== undefined) warn("seed has no Responses form; dropped");
  if (ir.sampling.frequencyPenalty !== undefined) warn("frequency_penalty has no Responses form; dropped");
  if (ir.sampling.presencePenalty !== undefined) warn("presence_penalty has no Responses form; dropped");
  if (ir.stream) body.stream = true;
  if (ir.user !== undefined) body.safety_identifier = ir.user;
  // The gateway sends the whole conversation every turn and never reads a stored response back.
  body.store = false;
  return { path: RESPONSES_PATH, body, warnings };
}

/** The IR's system parts as the one `instructions` string. */
export const instructionsOf = (ir: IrRequest) => ir.system.map((part) => part.text).join("\n\n");

/** The Responses API's floor for max_output_tokens (API reference, CreateResponse). */
const MIN_OUTPUT_TOKENS = 16;

/**
 * The members that configure generation, as an upstream request carries them and as a response object
 * echoes them back (response.ts).
 */
export function settings(ir: IrRequest, warn: Warn): Json {
  const out: Json = {};
  if (ir.tools.length > 0) out.tools = ir.tools.map(encodeTool);
  if (ir.toolChoice) out.tool_choice = ir.toolChoice.type === "tool" ? { type: "function", name: ir.toolChoice.name } : ir.toolChoice.type;
  if (ir.parallelToolCalls !== undefined) out.parallel_tool_calls = ir.parallelToolCalls;
  const { temperature, topP, maxTokens } = ir.sampling;
  if (temperature !== undefined) out.temperature = temperature;
  if (topP !== undefined) out.top_p = topP;
  if (maxTokens !== undefined) {
    if (maxTokens < MIN_OUTPUT_TOKENS) warn(`max_output_tokens raised from ${maxTokens} to ${MIN_OUTPUT_TOKENS}, the Responses API's minimum`);
    out.max_output_tokens = Math.max(maxTokens, MIN_OUTPUT_TOKENS);
  }
  if (ir.responseFormat) out.text = { format: encodeFormat(ir.responseFormat) };
  const effort = encodeEffort(ir.reasoning, warn);
  if (effort) out.reasoning = { effort };
  return out;
}

/**
 * IR messages -> input items. Reasoning in history is dropped: a Responses reasoning item is OpenAI's
 * own (its item id and encrypted content), and text alone cannot be handed back as one.
 */
function encodeInput(messages: readonly IrMessage[], warn: Warn): Json[] {
  const out: Json[] = [];
  messages.forEach((message, i) => {
    if (message.role === "user") out.push({ role: "user", content: encodeUserContent(message.content) });
    else if (message.role === "tool") for (const result of message.content) out.push(encodeToolResult(result, i, warn));
    else {
      for (const part of message.content) {
        if (part.type === "text") out.push({ role: "assistant", content: part.text });
        else if (part.type === "tool_call") out.push({ type: "function_call", call_id: part.id, name: part.name, arguments: part.arguments });
        else warn(`messages[${i}]: reasoning has no Responses input form without OpenAI's own reasoning item; dropped`);
      }
    }
  });
  return out;
}

const dataUrl = (source: IrMediaSource) => (source.kind === "url" ? source.url : `data:${source.mediaType};base64,${source.data}`);

function encodeUserPart(part: IrUserPart): Json {
  if (part.type === "text") return { type: "input_text", text: part.text };
  if (part.type === "image") return { type: "input_image", image_url: dataUrl(part.source), detail: "auto" };
  if (part.source.kind === "url") return compact({ type: "input_file", file_url: part.source.url, filename: part.title });
  return { type: "input_file", filename: part.title ?? (part.source.mediaType === "application/pdf" ? "document.pdf" : "document"), file_data: dataUrl(part.source) };
}

function encodeUserContent(parts: readonly IrUserPart[]): string | Json[] {
  const only = parts[0];
  return parts.length === 1 && only?.type === "text" ? only.text : parts.map(encodeUserPart);
}

function encodeToolResult(result: IrToolResultPart, i: number, warn: Warn): Json {
  if (result.isError) warn(`messages[${i}]: the tool result's error flag has no Responses form; dropped`);
  const only = result.content[0];
  const output = result.content.length === 1 && only?.type === "text" ? only.text : result.content.length === 0 ? "" : result.content.map(encodeUserPart);
  return { type: "function_call_output", call_id: result.toolCallId, output };
}

/** Responses makes a function strict when `strict` is omitted; the IR's "unsaid" means the usual non-strict. */
function encodeTool(tool: IrTool): Json {
  return compact({ type: "function", name: tool.name, description: tool.description, parameters: tool.parameters, strict: tool.strict ?? false });
}

function encodeFormat(format: IrResponseFormat): Json {
  if (format.type === "text") return { type: "text" };
  if (format.type === "json") return { type: "json_object" };
  // Responses requires a name; the IR's is optional (Gemini and Anthropic have none).
  return compact({ type: "json_schema", name: format.name ?? "response", schema: format.schema, description: format.description, strict: format.strict });
}

/** An effort passes as is; a budget alone becomes one (openai/request.ts, effortForBudget), with a warning. */
function encodeEffort(reasoning: IrReasoning | undefined, warn: Warn): string | undefined {
  if (reasoning?.effort) return reasoning.effort;
  if (reasoning?.budgetTokens === undefined) return undefined;
  const effort = effortForBudget(reasoning.budgetTokens);
  warn(`reasoning budget of ${reasoning.budgetTokens} tokens sent as reasoning.effort ${effort}`);
  return effort;
}
