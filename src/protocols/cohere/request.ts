// Cohere v2 Chat request <-> IR. Decoding faces a client (strict about the members it reads, a 400
// naming the member at fault; lenient about the rest, which is dropped with a warning). Encoding faces
// an upstream and reports everything it drops, converts or clamps.
import type { Decoded, EncodedRequest, IngressContext, WarningSink } from "../types.ts";
import { irError } from "../../ir/errors.ts";
import type { IrMediaSource, IrMessage, IrReasoning, IrRequest, IrResponseFormat, IrSampling, IrTextPart, IrTool, IrToolResultPart, IrUserPart } from "../../ir/index.ts";
import {
  AssistantMessage,
  BlockHead,
  DocumentBlock,
  DropLog,
  ImageBlock,
  RequestBody,
  SystemMessage,
  TextBlock,
  ToolDefinition,
  ToolFunction,
  ToolMessage,
  UserMessage,
  WireError,
  expectShape,
} from "./schema.ts";
import { decodeAssistant, encodeAssistant, onceEach } from "./response.ts";

/** The one chat endpoint, streaming or not (the model is a body member). */
export const CHAT_PATH = "/v2/chat";

export function decodeRequest(body: unknown, _context: IngressContext): Decoded<IrRequest> {
  const log = new DropLog();
  try {
    return { ok: true, value: decodeBody(body, log), warnings: log.list() };
  } catch (error) {
    if (!(error instanceof WireError)) throw error;
    return { ok: false, error: irError("invalid_request", error.message, error.path === "" ? {} : { param: error.path }) };
  }
}

export function encodeRequest(request: IrRequest, upstreamModel: string): EncodedRequest {
  const warnings: string[] = [];
  const body = encodeBody(request, upstreamModel, onceEach((warning) => warnings.push(warning)));
  return { path: CHAT_PATH, body, warnings };
}

// ---- decode: the body -----------------------------------------------------------------------------

type Block = { type: string } & Record<string, unknown>;

function decodeBody(body: unknown, log: DropLog): IrRequest {
  expectShape(RequestBody, body, "");
  log.unknownMembers(body, RequestBody, "");
  const system: IrTextPart[] = [];
  const messages: IrMessage[] = [];
  body.messages.forEach((message, i) => {
    const at = `messages[${i}]`;
    switch (message.role) {
      case "system":
        expectShape(SystemMessage, message, at);
        log.unknownMembers(message, SystemMessage, at);
        if (messages.length > 0) log.note(`${at}: a system message after the conversation began was moved to the front, where the IR keeps instructions`);
        system.push(...blocksOf(message.content, `${at}.content`).map(({ block, at: path }) => decodeText(block, path, log)));
        return;
      case "user":
        expectShape(UserMessage, message, at);
        log.unknownMembers(message, UserMessage, at);
        messages.push({ role: "user", content: decodeUserContent(message.content, `${at}.content`, log) });
        return;
      case "assistant":
        expectShape(AssistantMessage, message, at);
        log.unknownMembers(message, AssistantMessage, at);
        messages.push({ role: "assistant", content: decodeAssistant(message, at, log, "text") });
        return;
      case "tool": {
        expectShape(ToolMessage, message, at);
        log.unknownMembers(message, ToolMessage, at);
        // One Cohere tool message per call; the IR gathers a turn's results in one tool message.
        const result = decodeToolResult(message.tool_call_id, message.content, `${at}.content`, log);
        const last = messages.at(-1);
        if (last?.role === "tool") messages[messages.length - 1] = { role: "tool", content: [...last.content, result] };
        else messages.push({ role: "tool", content: [result] });
        return;
      }
      default:
        throw new WireError(`${at}.role`, "expected 'system', 'user', 'assistant' or 'tool'");
    }
  });
  const tools = decodeTools(body.tools ?? [], body.strict_tools === true, log);
  const toolChoice = body.tool_choice === "REQUIRED" ? { type: "required" as const } : body.tool_choice === "NONE" ? { type: "none" as const } : undefined;
  const responseFormat = decodeResponseFormat(body.response_format);
  const thinking = body.thinking;
  const reasoning: IrReasoning | undefined = thinking?.type === "enabled" ? (typeof thinking.token_budget === "number" ? { budgetTokens: thinking.token_budget } : {}) : undefined;
  return {
    model: body.model,
    system,
    messages,
    tools,
    ...(toolChoice && { toolChoice }),
    sampling: decodeSampling(body),
    ...(responseFormat && { responseFormat }),
    ...(reasoning && { reasoning }),
    stream: body.stream === true,
  };
}

function decodeSampling(body: RequestBody): IrSampling {
  const set = <T>(value: T | null | undefined): value is T => value !== undefined && value !== null;
  return {
    ...(set(body.max_tokens) && { maxTokens: body.max_tokens }),
    ...(set(body.temperature) && { temperature: body.temperature }),
    ...(set(body.p) && { topP: body.p }),
    // k = 0 switches top-k sampling off, the same as leaving it out.
    ...(set(body.k) && body.k > 0 && { topK: body.k }),
    ...(set(body.stop_sequences) && { stop: body.stop_sequences }),
    ...(set(body.seed) && { seed: body.seed }),
    ...(set(body.frequency_penalty) && { frequencyPenalty: body.frequency_penalty }),
    ...(set(body.presence_penalty) && { presencePenalty: body.presence_penalty }),
  };
}

function decodeResponseFormat(format: RequestBody["response_format"]): IrResponseFormat | undefined {
  if (!format) return undefined;
  if (format.type === "text") return { type: "text" };
  return format.json_schema ? { type: "json_schema", schema: format.json_schema } : { type: "json" };
}

/** Content as blocks: a string is shorthand for one text block. */
function blocksOf(content: string | unknown[], at: string): { block: Block; at: string }[] {
  if (typeof content === "string") return [{ block: { type: "text", text: content }, at }];
  return content.map((block, i) => {
    expectShape(BlockHead, block, `${at}[${i}]`);
    return { block: block as Block, at: `${at}[${i}]` };
  });
}

function decodeText(block: Block, at: string, log: DropLog): IrTextPart {
  if (block.type !== "text") throw new WireError(`${at}.type`, 'expected "text"');
  expectShape(TextBlock, block, at);
  log.unknownMembers(block, TextBlock, at);
  return { type: "text", text: block.text };
}

function decodeUserContent(content: string | unknown[], at: string, log: DropLog): IrUserPart[] {
  const parts: IrUserPart[] = [];
  for (const { block, at: path } of blocksOf(content, at)) {
    if (block.type === "text") parts.push(decodeText(block, path, log));
    else if (block.type === "image_url") parts.push(decodeImage(block, path, log));
    else log.drop(`${block.type} block`, path, "a Cohere user message carries text and images only");
  }
  return parts;
}

/** `image_url.url` is a web URL or a base64 `data:` URI (the reference: "either a base64 data URI or a web URL"). */
function decodeImage(block: Block, at: string, log: DropLog): IrUserPart {
  expectShape(ImageBlock, block, at);
  log.unknownMembers(block, ImageBlock, at);
  const { url, detail } = block.image_url;
  // "auto" is the default, so only another detail is lost.
  if (detail && detail !== "auto") log.drop("image_url.detail", `${at}.image_url.detail`, "the IR has no image detail level");
  return { type: "image", source: sourceFromUrl(url) };
}

function sourceFromUrl(url: string): IrMediaSource {
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  return data ? { kind: "base64", mediaType: data[1] ?? "", data: data[2] ?? "" } : { kind: "url", url };
}

/**
 * A tool message -> an IR tool result. The IR's results hold text and images; a Cohere `document` block
 * becomes text (its data, as JSON unless it already is text), so the tool's output still reaches the
 * model; its `id`, which only Cohere's citations use, is dropped.
 */
function decodeToolResult(toolCallId: string, content: string | unknown[], at: string, log: DropLog): IrToolResultPart {
  const parts: IrTextPart[] = [];
  for (const { block, at: path } of blocksOf(content, at)) {
    if (block.type === "text") {
      parts.push(decodeText(block, path, log));
    } else if (block.type === "document") {
      expectShape(DocumentBlock, block, path);
      const data = block.document.data;
      parts.push({ type: "text", text: typeof data === "string" ? data : JSON.stringify(data) });
      log.note("document blocks in tool messages carried as text: the IR's tool results hold text and images");
      if (block.document.id) log.drop("document.id", `${path}.document.id`, "document ids serve Cohere's citations only");
    } else {
      log.drop(`${block.type} block`, path, "a Cohere tool message carries text and documents only");
    }
  }
  return { type: "tool_result", toolCallId, content: parts };
}

function decodeTools(tools: readonly object[], strict: boolean, log: DropLog): IrTool[] {
  return tools.map((tool, i) => {
    const at = `tools[${i}]`;
    expectShape(ToolDefinition, tool, at);
    log.unknownMembers(tool, ToolDefinition, at);
    log.unknownMembers(tool.function, ToolFunction, `${at}.function`);
    const { name, description, parameters } = tool.function;
    return { name, ...(typeof description === "string" && { description }), parameters, ...(strict && { strict: true }) };
  });
}

// ---- encode --------------------------------------------------------------------------------------

type Wire = Record<string, unknown>;

/**
 * Effort -> thinking.token_budget, the steps the Anthropic encoder uses (docs/protocols.md), so one
 * effort costs the same thinking room at either vendor. A budget in the IR wins and is sent as is.
 */
const EFFORT_BUDGET: Readonly<Record<NonNullable<IrReasoning["effort"]>, number>> = { minimal: 1024, low: 2048, medium: 8192, high: 16384 };
/** The reference: "A list of up to 5 strings". */
const MAX_STOP_SEQUENCES = 5;

function encodeBody(ir: IrRequest, upstreamModel: string, warn: WarningSink): Wire {
  const body: Wire = { model: upstreamModel, messages: encodeMessages(ir, warn) };
  if (ir.tools.length > 0) {
    body.tools = ir.tools.map((tool) => ({ type: "function", function: { name: tool.name, ...(tool.description !== undefined && { description: tool.description }), parameters: tool.parameters } }));
    const strict = ir.tools.filter((tool) => tool.strict === true).length;
    if (strict > 0) body.strict_tools = true;
    if (strict > 0 && strict < ir.tools.length) warn("strict applied to every tool: Cohere's strict_tools covers all tools or none");
  }
  const toolChoice = encodeToolChoice(ir, warn);
  if (toolChoice) body.tool_choice = toolChoice;
  if (ir.parallelToolCalls === false) warn("parallel_tool_calls false dropped: Cohere cannot turn parallel tool calls off");
  Object.assign(body, encodeSampling(ir.sampling, warn));
  const format = encodeResponseFormat(ir.responseFormat, ir.tools.length > 0, warn);
  if (format) body.response_format = format;
  if (ir.reasoning) {
    const budget = ir.reasoning.budgetTokens ?? (ir.reasoning.effort && EFFORT_BUDGET[ir.reasoning.effort]);
    body.thinking = { type: "enabled", ...(budget !== undefined && { token_budget: budget }) };
  }
  if (ir.user !== undefined) warn("user dropped: Cohere has no end-user id");
  // The reference marks `stream` required (false or true), so it is always sent.
  body.stream = ir.stream;
  return body;
}

/** A message's blocks; one text block goes in the string shorthand, as the reference writes it. */
function compact(blocks: readonly Wire[]): string | Wire[] {
  const [only] = blocks;
  return blocks.length === 1 && only?.type === "text" ? (only.text as string) : [...blocks];
}

function encodeMessages(ir: IrRequest, warn: WarningSink): Wire[] {
  const out: Wire[] = [];
  // Cohere answers 400 "system turn must be the first in the list": all instructions go first, as one.
  if (ir.system.length > 0) out.push({ role: "system", content: compact(ir.system.map((part) => ({ type: "text", text: part.text }))) });
  for (const message of ir.messages) {
    if (message.role === "tool") {
      for (const result of message.content) out.push(encodeToolResult(result, warn));
    } else if (message.role === "assistant") {
      const { content, ...rest } = encodeAssistant(message.content, warn);
      if (content.length === 0 && Object.keys(rest).length === 0) warn("an assistant message with nothing Cohere can carry was dropped");
      else out.push({ role: "assistant", ...(content.length > 0 && { content: compact(content) }), ...rest });
    } else {
      const content = message.content.flatMap((part) => encodeUserPart(part, warn));
      if (content.length > 0) out.push({ role: "user", content: compact(content) });
      else warn("a user message with nothing Cohere can carry was dropped");
    }
  }
  return out;
}

function encodeUserPart(part: IrUserPart, warn: WarningSink): Wire[] {
  switch (part.type) {
    case "text":
      return [{ type: "text", text: part.text }];
    case "image": {
      const url = part.source.kind === "url" ? part.source.url : `data:${part.source.mediaType};base64,${part.source.data}`;
      return [{ type: "image_url", image_url: { url } }];
    }
    case "document":
      warn("document dropped: a Cohere user message carries text and images only");
      return [];
  }
}

function encodeToolResult(result: IrToolResultPart, warn: WarningSink): Wire {
  const texts: Wire[] = [];
  for (const part of result.content) {
    if (part.type === "text") texts.push({ type: "text", text: part.text });
    else warn("image in a tool result dropped: a Cohere tool message carries text and documents only");
  }
  if (result.isError === true) warn("tool result error flag dropped: Cohere tool messages have none");
  return { role: "tool", tool_call_id: result.toolCallId, content: texts.length > 0 ? compact(texts) : "" };
}

function encodeToolChoice(ir: IrRequest, warn: WarningSink): string | undefined {
  const choice = ir.toolChoice;
  if (!choice || choice.type === "auto") return undefined;
  if (ir.tools.length === 0) {
    if (choice.type !== "none") warn(`tool_choice ${choice.type} dropped: the request has no tools`);
    return undefined;
  }
  if (choice.type === "none") return "NONE";
  if (choice.type === "tool") warn(`tool_choice for tool ${choice.name} sent as REQUIRED: Cohere cannot name the tool to call`);
  return "REQUIRED";
}

/** A value inside Cohere's documented range, or the nearest bound (warned). */
function clamp(name: string, value: number, min: number, max: number, warn: WarningSink): number {
  const bounded = Math.min(max, Math.max(min, value));
  if (bounded !== value) warn(`${name} ${value} clamped to ${bounded}, the nearest value Cohere accepts (${min} to ${max})`);
  return bounded;
}

/** Sampling members and the reference's ranges for them. */
function encodeSampling(sampling: IrSampling, warn: WarningSink): Wire {
  const out: Wire = {};
  if (sampling.maxTokens !== undefined) out.max_tokens = sampling.maxTokens;
  if (sampling.temperature !== undefined) out.temperature = clamp("temperature", sampling.temperature, 0, 1, warn);
  if (sampling.topP !== undefined) out.p = clamp("top_p", sampling.topP, 0.01, 0.99, warn);
  if (sampling.topK !== undefined) out.k = clamp("top_k", sampling.topK, 0, 500, warn);
  if (sampling.stop && sampling.stop.length > 0) {
    if (sampling.stop.length > MAX_STOP_SEQUENCES) warn(`stop sequences after the first ${MAX_STOP_SEQUENCES} dropped: Cohere takes at most ${MAX_STOP_SEQUENCES}`);
    out.stop_sequences = sampling.stop.slice(0, MAX_STOP_SEQUENCES);
  }
  if (sampling.seed !== undefined && sampling.seed >= 0) out.seed = sampling.seed;
  else if (sampling.seed !== undefined) warn(`seed ${sampling.seed} dropped: Cohere takes a seed of 0 or more`);
  if (sampling.frequencyPenalty !== undefined) out.frequency_penalty = clamp("frequency_penalty", sampling.frequencyPenalty, 0, 1, warn);
  if (sampling.presencePenalty !== undefined) out.presence_penalty = clamp("presence_penalty", sampling.presencePenalty, 0, 1, warn);
  return out;
}

/**
 * JSON mode is `json_object`, with the schema in `json_schema` when there is one. The reference:
 * "The parameter is not supported when used in combinations with the `documents` or `tools` parameters",
 * so with tools it is left out (plain text, the default, loses nothing).
 */
function encodeResponseFormat(format: IrResponseFormat | undefined, withTools: boolean, warn: WarningSink): Wire | undefined {
  if (!format) return undefined;
  if (format.type === "text") return withTools ? undefined : { type: "text" };
  if (withTools) {
    warn(`response_format ${format.type} dropped: Cohere does not take response_format together with tools`);
    return undefined;
  }
  if (format.type === "json") return { type: "json_object" };
  if (format.description !== undefined) warn("response_format description dropped: Cohere's json_object format takes only a schema");
  return { type: "json_object", json_schema: format.schema };
}
