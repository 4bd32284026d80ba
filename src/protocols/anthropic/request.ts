// Anthropic Messages request <-> IR. Decoding faces a client (strict about the members it reads, a 400
// naming the member at fault; lenient about the rest, which is dropped with a warning). Encoding faces an
// upstream and reports everything it drops or clamps.
import type { Decoded, EncodedRequest, IngressContext, WarningSink } from "../types.ts";
import { irError } from "../../ir/errors.ts";
import type { IrAssistantPart, IrMediaSource, IrMessage, IrReasoning, IrRequest, IrSampling, IrTextPart, IrTool, IrToolChoice, IrToolResultPart, IrUserPart } from "../../ir/index.ts";
import { Base64Source, BlockHead, DocumentBlock, DropLog, ImageBlock, PlainTextSource, RequestBody, TextBlock, ThinkingParam, ToolParam, ToolResultBlock, UrlSource, WireError, expectShape } from "./schema.ts";
import { decodeAssistantBlock, encodeAssistantPart } from "./response.ts";

export const MESSAGES_PATH = "/v1/messages";

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
  const body = encodeBody(request, upstreamModel, (warning) => warnings.push(warning));
  return { path: MESSAGES_PATH, body, warnings };
}

// ---- decode: the body -----------------------------------------------------------------------------

function decodeBody(body: unknown, log: DropLog): IrRequest {
  expectShape(RequestBody, body, "");
  log.unknownMembers(body, RequestBody, "");
  const system = body.system === undefined ? [] : decodeSystem(body.system, "system", log);
  const messages: IrMessage[] = [];
  body.messages.forEach((message, i) => {
    const at = `messages[${i}]`;
    if (message.role === "system") {
      // Claude Code sends a system turn inside `messages`; the IR has one place for instructions.
      system.push(...decodeSystem(message.content, `${at}.content`, log));
    } else if (message.role === "user") {
      messages.push(...decodeUserTurn(message.content, `${at}.content`, log));
    } else if (message.role === "assistant") {
      messages.push({ role: "assistant", content: decodeAssistantTurn(message.content, `${at}.content`, log) });
    } else {
      throw new WireError(`${at}.role`, "Input should be 'user' or 'assistant'");
    }
  });
  const { toolChoice, parallelToolCalls } = decodeToolChoice(body.tool_choice);
  const reasoning = decodeReasoning(body, log);
  const format = body.output_config?.format;
  const user = body.metadata?.user_id;
  const sampling = {
    maxTokens: body.max_tokens,
    ...(body.temperature !== undefined && { temperature: body.temperature }),
    ...(body.top_p !== undefined && { topP: body.top_p }),
    ...(body.top_k !== undefined && { topK: body.top_k }),
    ...(body.stop_sequences !== undefined && { stop: body.stop_sequences }),
  };
  return {
    model: body.model,
    system,
    messages,
    tools: decodeTools(body.tools ?? [], log),
    ...(toolChoice && { toolChoice }),
    ...(parallelToolCalls !== undefined && { parallelToolCalls }),
    sampling,
    ...(format && { responseFormat: { type: "json_schema" as const, schema: format.schema } }),
    ...(reasoning && { reasoning }),
    stream: body.stream === true,
    ...(typeof user === "string" && { user }),
  };
}

/** `system` (or a system turn's content): a string or a list of text blocks. */
function decodeSystem(content: unknown, at: string, log: DropLog): IrTextPart[] {
  if (typeof content === "string") return content === "" ? [] : [{ type: "text", text: content }];
  if (!Array.isArray(content)) throw new WireError(at, "Input should be a valid string or a list of text blocks");
  return content.map((block, i) => {
    expectShape(TextBlock, block, `${at}[${i}]`);
    log.unknownMembers(block, TextBlock, `${at}[${i}]`);
    return { type: "text", text: block.text };
  });
}

/** A turn's content as blocks: a string is shorthand for one text block. */
function blocksOf(content: unknown, at: string): { block: { type: string } & Record<string, unknown>; at: string }[] {
  if (typeof content === "string") return [{ block: { type: "text", text: content }, at }];
  if (!Array.isArray(content)) throw new WireError(at, "Input should be a valid string or a list of content blocks");
  return content.map((block, i) => {
    expectShape(BlockHead, block, `${at}[${i}]`);
    return { block: block as { type: string } & Record<string, unknown>, at: `${at}[${i}]` };
  });
}

/**
 * A user turn. Its tool_result blocks become one IR `tool` message placed before the rest of the turn
 * (Anthropic carries tool results inside the user turn; the IR gives them their own role), in order.
 */
function decodeUserTurn(content: unknown, at: string, log: DropLog): IrMessage[] {
  const results: IrToolResultPart[] = [];
  const parts: IrUserPart[] = [];
  for (const { block, at: path } of blocksOf(content, at)) {
    if (block.type === "tool_result") {
      results.push(decodeToolResult(block, path, log));
      continue;
    }
    const part = decodeUserBlock(block, path, log);
    if (part) parts.push(part);
  }
  const out: IrMessage[] = [];
  if (results.length > 0) out.push({ role: "tool", content: results });
  if (parts.length > 0 || results.length === 0) out.push({ role: "user", content: parts });
  return out;
}

function decodeUserBlock(block: { type: string }, at: string, log: DropLog): IrUserPart | undefined {
  switch (block.type) {
    case "text":
      expectShape(TextBlock, block, at);
      log.unknownMembers(block, TextBlock, at);
      return { type: "text", text: block.text };
    case "image": {
      expectShape(ImageBlock, block, at);
      log.unknownMembers(block, ImageBlock, at);
      const source = decodeSource(block.source, `${at}.source`, ["base64", "url", "file"], log);
      return source && { type: "image", source };
    }
    case "document": {
      expectShape(DocumentBlock, block, at);
      log.unknownMembers(block, DocumentBlock, at);
      const source = decodeSource(block.source, `${at}.source`, ["base64", "url", "text", "content", "file"], log);
      return source && { type: "document", source, ...(typeof block.title === "string" && { title: block.title }) };
    }
    default:
      log.drop(`${block.type} block`, at, "this content block type is not modelled by the gateway's IR");
      return undefined;
  }
}

/**
 * An image or document source. A plain-text document becomes base64 `text/plain` (the IR's only inline
 * form; the encoder turns it back). File ids and block-list documents cannot cross protocols: dropped.
 */
function decodeSource(source: { type: string }, at: string, allowed: readonly string[], log: DropLog): IrMediaSource | undefined {
  if (!allowed.includes(source.type)) {
    const quoted = allowed.map((t) => `'${t}'`);
    throw new WireError(`${at}.type`, `Input should be ${quoted.slice(0, -1).join(", ")} or ${quoted.at(-1)}`);
  }
  switch (source.type) {
    case "base64":
      expectShape(Base64Source, source, at);
      return { kind: "base64", mediaType: source.media_type, data: source.data };
    case "url":
      expectShape(UrlSource, source, at);
      return { kind: "url", url: source.url };
    case "text":
      expectShape(PlainTextSource, source, at);
      return { kind: "base64", mediaType: source.media_type, data: Buffer.from(source.data, "utf8").toString("base64") };
    default:
      log.drop(`${source.type} source`, at, "its block was dropped; only base64, url and plain-text sources cross protocols");
      return undefined;
  }
}

function decodeToolResult(block: object, at: string, log: DropLog): IrToolResultPart {
  expectShape(ToolResultBlock, block, at);
  log.unknownMembers(block, ToolResultBlock, at);
  const content: IrToolResultPart["content"][number][] = [];
  if (block.content !== undefined) {
    for (const { block: inner, at: path } of blocksOf(block.content, `${at}.content`)) {
      if (inner.type !== "text" && inner.type !== "image") {
        log.drop(`${inner.type} block in tool_result`, path, "a tool result carries only text and images in the IR");
        continue;
      }
      const part = decodeUserBlock(inner, path, log);
      if (part && part.type !== "document") content.push(part);
    }
  }
  return { type: "tool_result", toolCallId: block.tool_use_id, content, ...(block.is_error === true && { isError: true }) };
}

function decodeAssistantTurn(content: unknown, at: string, log: DropLog): IrAssistantPart[] {
  const parts: IrAssistantPart[] = [];
  for (const { block, at: path } of blocksOf(content, at)) {
    const part = decodeAssistantBlock(block, path, log);
    if (part) parts.push(part);
  }
  return parts;
}

// ---- decode: tools, choice, reasoning -------------------------------------------------------------

function decodeTools(tools: readonly object[], log: DropLog): IrTool[] {
  const out: IrTool[] = [];
  tools.forEach((tool, i) => {
    const at = `tools[${i}]`;
    const kind = (tool as { type?: unknown }).type;
    if (typeof kind === "string" && kind !== "custom") {
      // Server tools (web_search_20250305, code_execution_..., bash_...) run at Anthropic only.
      log.drop(`server tool ${kind}`, at, "server tools run only at Anthropic");
      return;
    }
    expectShape(ToolParam, tool, at);
    log.unknownMembers(tool, ToolParam, at);
    out.push({
      name: tool.name,
      ...(tool.description !== undefined && { description: tool.description }),
      parameters: tool.input_schema,
      ...(tool.strict !== undefined && { strict: tool.strict }),
    });
  });
  return out;
}

function decodeToolChoice(choice: RequestBody["tool_choice"]): { toolChoice?: IrToolChoice; parallelToolCalls?: boolean } {
  if (!choice) return {};
  const parallel = choice.disable_parallel_tool_use === true ? { parallelToolCalls: false } : {};
  switch (choice.type) {
    case "auto":
      return { toolChoice: { type: "auto" }, ...parallel };
    case "any":
      return { toolChoice: { type: "required" }, ...parallel };
    case "none":
      return { toolChoice: { type: "none" } };
    default:
      if (choice.name === undefined) throw new WireError("tool_choice.name", "Field required");
      return { toolChoice: { type: "tool", name: choice.name }, ...parallel };
  }
}

const EFFORTS = ["low", "medium", "high"] as const;

/**
 * `thinking` and `output_config.effort` -> IR reasoning. `enabled` carries its budget; `adaptive` (the
 * model decides) is reasoning with neither budget nor effort unless an effort says how hard to try.
 */
function decodeReasoning(body: RequestBody, log: DropLog): IrReasoning | undefined {
  const thinking = body.thinking;
  const effort = decodeEffort(body.output_config?.effort, log);
  if (!thinking) return effort ? { effort } : undefined;
  log.unknownMembers(thinking, ThinkingParam, "thinking");
  switch (thinking.type) {
    case "enabled":
      if (thinking.budget_tokens === undefined) throw new WireError("thinking.budget_tokens", "Field required");
      return { budgetTokens: thinking.budget_tokens, ...(effort && { effort }) };
    case "disabled":
      return undefined;
    case "adaptive":
      return { ...(effort && { effort }) };
    default:
      log.note(`thinking.type ${thinking.type} carried as reasoning the model sizes itself`);
      return { ...(effort && { effort }) };
  }
}

function decodeEffort(effort: string | null | undefined, log: DropLog): IrReasoning["effort"] {
  if (effort === undefined || effort === null) return undefined;
  if ((EFFORTS as readonly string[]).includes(effort)) return effort as (typeof EFFORTS)[number];
  // `xhigh` and `max` are above the IR's top step.
  log.note(`output_config.effort ${effort} clamped to high, the IR's highest effort`);
  return "high";
}

// ---- encode --------------------------------------------------------------------------------------

type Block = Record<string, unknown>;
interface Turn {
  readonly role: "user" | "assistant";
  readonly content: Block[];
}
type WireTurn = { readonly role: Turn["role"]; readonly content: string | Block[] };
const defined = <T>(value: T | undefined): value is T => value !== undefined;

/** Anthropic requires max_tokens; the IR may not have one. */
const DEFAULT_MAX_TOKENS = 4096;
/** Anthropic's floor for thinking.budget_tokens (ThinkingConfigEnabled: "Must be ≥1024"). */
const MIN_THINKING_BUDGET = 1024;
/**
 * Effort -> thinking.budget_tokens. minimal is Anthropic's floor; each step up doubles or quadruples the
 * room, ending at 16384 so that budget plus a default answer (4096) stays near 20k tokens, below the
 * output limits of the models that think. A budget in the IR wins over an effort and is used as is
 * (raised to the floor if below it).
 */
const EFFORT_BUDGET: Readonly<Record<NonNullable<IrReasoning["effort"]>, number>> = { minimal: 1024, low: 2048, medium: 8192, high: 16384 };

function encodeBody(ir: IrRequest, upstreamModel: string, warn: WarningSink): Block {
  const body: Block = { model: upstreamModel };
  const [onlySystem] = ir.system;
  if (ir.system.length === 1 && onlySystem) body.system = onlySystem.text;
  else if (ir.system.length > 1) body.system = ir.system.map((part) => ({ type: "text", text: part.text }));
  body.messages = encodeTurns(ir.messages, warn);
  if (ir.tools.length > 0) body.tools = ir.tools.map(encodeTool);
  const toolChoice = encodeToolChoice(ir, warn);
  if (toolChoice) body.tool_choice = toolChoice;
  const forcedTool = toolChoice?.type === "any" || toolChoice?.type === "tool";
  const { thinking, maxTokens } = encodeThinking(ir, forcedTool, warn);
  body.max_tokens = maxTokens;
  if (thinking) body.thinking = thinking;
  Object.assign(body, encodeSampling(ir.sampling, thinking !== undefined, warn));
  const outputConfig = encodeResponseFormat(ir.responseFormat, warn);
  if (outputConfig) body.output_config = outputConfig;
  if (ir.user !== undefined) body.metadata = { user_id: ir.user };
  if (ir.stream) body.stream = true;
  return body;
}

/**
 * IR messages -> Anthropic turns. Tool results become tool_result blocks in a user turn, which a
 * following user message joins: Anthropic wants user/assistant alternation with the results first in
 * the user turn after the tool_use.
 */
function encodeTurns(messages: readonly IrMessage[], warn: WarningSink): WireTurn[] {
  const turns: Turn[] = [];
  let toolTurn: Turn | undefined;
  for (const message of messages) {
    if (message.role === "assistant") {
      toolTurn = undefined;
      const content = message.content.map((part) => encodeAssistantPart(part, warn, true)).filter(defined);
      if (content.length > 0) turns.push({ role: "assistant", content });
      else warn("an assistant message with nothing Anthropic can carry was dropped");
      continue;
    }
    const content = message.role === "tool" ? message.content.map((r) => encodeToolResult(r, warn)) : message.content.map((p) => encodeUserPart(p, warn)).filter(defined);
    if (toolTurn) {
      toolTurn.content.push(...content);
      if (message.role === "user") toolTurn = undefined;
      continue;
    }
    const turn: Turn = { role: "user", content };
    turns.push(turn);
    if (message.role === "tool") toolTurn = turn;
  }
  return turns.map(compactTurn);
}

/** A turn of one text block is sent in the shorthand string form, as the API reference writes it. */
function compactTurn(turn: Turn): WireTurn {
  const [only] = turn.content;
  return turn.content.length === 1 && only?.type === "text" ? { role: turn.role, content: only.text as string } : turn;
}

function encodeUserPart(part: IrUserPart, warn: WarningSink): Block | undefined {
  switch (part.type) {
    case "text":
      return { type: "text", text: part.text };
    case "image":
      return { type: "image", source: part.source.kind === "url" ? { type: "url", url: part.source.url } : { type: "base64", media_type: part.source.mediaType, data: part.source.data } };
    case "document": {
      const source = encodeDocumentSource(part.source, warn);
      return source && { type: "document", source, ...(part.title !== undefined && { title: part.title }) };
    }
  }
}

/** Anthropic takes PDF (base64 or url) and plain text documents; other media types are dropped. */
function encodeDocumentSource(source: IrMediaSource, warn: WarningSink): Block | undefined {
  if (source.kind === "url") return { type: "url", url: source.url };
  if (source.mediaType === "application/pdf") return { type: "base64", media_type: source.mediaType, data: source.data };
  if (source.mediaType === "text/plain") return { type: "text", media_type: "text/plain", data: Buffer.from(source.data, "base64").toString("utf8") };
  warn(`document of type ${source.mediaType} dropped: Anthropic takes PDF and plain-text documents`);
  return undefined;
}

function encodeToolResult(result: IrToolResultPart, warn: WarningSink): Block {
  const blocks = result.content.map((part) => encodeUserPart(part, warn)).filter(defined);
  const [only] = blocks;
  const content = blocks.length === 1 && only?.type === "text" ? only.text : blocks.length > 0 ? blocks : undefined;
  return { type: "tool_result", tool_use_id: result.toolCallId, ...(content !== undefined && { content }), ...(result.isError === true && { is_error: true }) };
}

function encodeTool(tool: IrTool): Block {
  return {
    name: tool.name,
    ...(tool.description !== undefined && { description: tool.description }),
    // Anthropic requires an object schema; a tool that takes nothing still needs {"type":"object"}.
    input_schema: tool.parameters.type === undefined ? { type: "object", ...tool.parameters } : tool.parameters,
    ...(tool.strict !== undefined && { strict: tool.strict }),
  };
}

function encodeToolChoice(ir: IrRequest, warn: WarningSink): Block | undefined {
  const choice = ir.toolChoice ?? (ir.parallelToolCalls === false ? { type: "auto" as const } : undefined);
  if (!choice || ir.tools.length === 0) {
    if (choice && choice.type !== "none" && choice.type !== "auto") warn(`tool_choice ${choice.type} dropped: the request has no tools`);
    return undefined;
  }
  const noParallel = ir.parallelToolCalls === false ? { disable_parallel_tool_use: true } : {};
  switch (choice.type) {
    case "auto":
      return { type: "auto", ...noParallel };
    case "required":
      return { type: "any", ...noParallel };
    case "none":
      return { type: "none" };
    case "tool":
      return { type: "tool", name: choice.name, ...noParallel };
  }
}

/**
 * IR reasoning -> `thinking`, keeping max_tokens above the budget (Anthropic counts thinking inside
 * max_tokens and requires budget_tokens < max_tokens). Reasoning with neither budget nor effort came from
 * adaptive thinking and goes back as such.
 */
function encodeThinking(ir: IrRequest, forcedTool: boolean, warn: WarningSink): { thinking?: Block; maxTokens: number } {
  let maxTokens = ir.sampling.maxTokens ?? DEFAULT_MAX_TOKENS;
  if (ir.sampling.maxTokens === undefined) warn(`max_tokens defaulted to ${DEFAULT_MAX_TOKENS}: Anthropic requires it`);
  const reasoning = ir.reasoning;
  if (!reasoning) return { maxTokens };
  if (forcedTool) {
    warn("reasoning dropped: Anthropic does not allow thinking with a forced tool_choice");
    return { maxTokens };
  }
  if (reasoning.budgetTokens === undefined && reasoning.effort === undefined) return { thinking: { type: "adaptive" }, maxTokens };
  let budget = reasoning.budgetTokens ?? EFFORT_BUDGET[reasoning.effort ?? "medium"];
  if (budget < MIN_THINKING_BUDGET) {
    warn(`thinking budget ${budget} raised to ${MIN_THINKING_BUDGET}, Anthropic's minimum`);
    budget = MIN_THINKING_BUDGET;
  }
  if (maxTokens <= budget) {
    warn(`max_tokens raised from ${maxTokens} to ${budget + maxTokens} to stay above thinking.budget_tokens ${budget}`);
    maxTokens += budget;
  }
  return { thinking: { type: "enabled", budget_tokens: budget }, maxTokens };
}

/** Sampling members; with thinking on Anthropic refuses temperature and top_k changes and top_p < 0.95. */
function encodeSampling(sampling: IrSampling, thinking: boolean, warn: WarningSink): Block {
  const out: Block = {};
  const { temperature, topP, topK } = sampling;
  if (temperature !== undefined && thinking && temperature !== 1) warn("temperature dropped: Anthropic does not accept it with thinking on");
  else if (temperature !== undefined && temperature > 1) warn(`temperature ${temperature} clamped to 1, Anthropic's maximum`);
  if (temperature !== undefined && !(thinking && temperature !== 1)) out.temperature = Math.min(temperature, 1);
  if (topP !== undefined && thinking && topP < 0.95) warn(`top_p ${topP} raised to 0.95, the lowest Anthropic accepts with thinking on`);
  if (topP !== undefined) out.top_p = thinking ? Math.max(topP, 0.95) : topP;
  if (topK !== undefined && thinking) warn("top_k dropped: Anthropic does not accept it with thinking on");
  else if (topK !== undefined) out.top_k = topK;
  if (sampling.stop && sampling.stop.length > 0) out.stop_sequences = sampling.stop;
  if (sampling.seed !== undefined) warn("seed dropped: Anthropic has no seed");
  if (sampling.frequencyPenalty !== undefined) warn("frequency_penalty dropped: Anthropic has no frequency penalty");
  if (sampling.presencePenalty !== undefined) warn("presence_penalty dropped: Anthropic has no presence penalty");
  return out;
}

/** JSON-schema output maps to `output_config.format` (structured outputs); schema-less JSON mode does not exist. */
function encodeResponseFormat(format: IrRequest["responseFormat"], warn: WarningSink): Block | undefined {
  if (!format || format.type === "text") return undefined;
  if (format.type === "json") {
    warn("response_format json dropped: Anthropic's output_config.format needs a JSON schema");
    return undefined;
  }
  if (format.description !== undefined) warn("response_format description dropped: output_config.format takes only a schema");
  return { format: { type: "json_schema", schema: format.schema } };
}
