// Bedrock Converse request <-> IR. The model and streaming are in the path (POST /model/{modelId}/converse
// or /converse-stream), not the body. Decoding faces a client (strict about the members it reads, a 400
// in AWS's validation wording; lenient about the rest, dropped with a warning). Encoding faces an
// upstream and reports everything it drops or clamps.
import type { Decoded, EncodedRequest, IngressContext, WarningSink } from "../types.ts";
import { irError } from "../../ir/errors.ts";
import type { IrMediaSource, IrMessage, IrReasoning, IrRequest, IrResponseFormat, IrSampling, IrTextPart, IrTool, IrToolChoice, IrToolResultPart, IrUserPart } from "../../ir/index.ts";
import { CONTENT_MEMBERS, decodeAssistantBlock, encodeAssistantPart } from "./response.ts";
import {
  DocumentBlock,
  DropLog,
  ImageBlock,
  JsonSchemaDefinition,
  Message,
  RequestBody,
  SpecificToolChoice,
  TextMember,
  ToolResultBlock,
  ToolSpecification,
  WireError,
  expectShape,
  isObject,
  unionMember,
} from "./schema.ts";

/** The path of a Converse call to `model` (an id or ARN, so it is percent-encoded as one segment). */
export const upstreamPath = (model: string, stream: boolean) => `/model/${encodeURIComponent(model)}/${stream ? "converse-stream" : "converse"}`;

export function decodeRequest(body: unknown, context: IngressContext): Decoded<IrRequest> {
  const log = new DropLog();
  try {
    return { ok: true, value: decodeBody(body, context, log), warnings: log.list() };
  } catch (error) {
    if (!(error instanceof WireError)) throw error;
    return { ok: false, error: irError("invalid_request", error.message, error.path === "" ? {} : { param: error.path }) };
  }
}

export function encodeRequest(request: IrRequest, upstreamModel: string): EncodedRequest {
  const warnings: string[] = [];
  const body = encodeBody(request, upstreamModel, (warning) => warnings.push(warning));
  return { path: upstreamPath(upstreamModel, request.stream), body, warnings };
}

// ---- media types ------------------------------------------------------------------------------------

/** ImageFormat values; the IR carries the media type. */
const IMAGE_FORMATS = ["png", "jpeg", "gif", "webp"] as const;
/** DocumentFormat values and the media types they name. */
const DOCUMENT_TYPES: Readonly<Record<string, string>> = {
  pdf: "application/pdf",
  csv: "text/csv",
  doc: "application/msword",
  docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  xls: "application/vnd.ms-excel",
  xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  html: "text/html",
  txt: "text/plain",
  md: "text/markdown",
};
const DOCUMENT_FORMATS = Object.fromEntries(Object.entries(DOCUMENT_TYPES).map(([format, type]) => [type, format]));
const enumOf = (values: readonly string[]) => `Member must satisfy enum value set: [${values.join(", ")}]`;

// ---- decode: the body -----------------------------------------------------------------------------

function decodeBody(body: unknown, context: IngressContext, log: DropLog): IrRequest {
  expectShape(RequestBody, body, "");
  log.unknownMembers(body, RequestBody, "");
  const model = context.pathModel ?? "";
  if (model === "") throw new WireError("modelId", "Member must have length greater than or equal to 1");
  const messages: IrMessage[] = [];
  (body.messages ?? []).forEach((message, i) => messages.push(...decodeMessage(message, `messages[${i}]`, log)));
  const { tools, toolChoice } = decodeToolConfig(body.toolConfig, log);
  const extra = decodeAdditionalFields(body.additionalModelRequestFields, log);
  const { responseFormat, effort } = decodeOutputConfig(body.outputConfig, log);
  const reasoning = extra.reasoning || effort ? { ...extra.reasoning, ...(effort && { effort }) } : undefined;
  const config = body.inferenceConfig;
  const sampling: IrSampling = {
    ...(config?.maxTokens !== undefined && { maxTokens: config.maxTokens }),
    ...(config?.temperature !== undefined && { temperature: config.temperature }),
    ...(config?.topP !== undefined && { topP: config.topP }),
    ...(extra.topK !== undefined && { topK: extra.topK }),
    ...(config?.stopSequences !== undefined && { stop: config.stopSequences }),
  };
  return {
    model,
    system: decodeSystem(body.system ?? [], log),
    messages,
    tools,
    ...(toolChoice && { toolChoice }),
    sampling,
    ...(responseFormat && { responseFormat }),
    ...(reasoning && { reasoning }),
    stream: context.pathStream === true,
  };
}

function decodeSystem(blocks: readonly object[], log: DropLog): IrTextPart[] {
  const out: IrTextPart[] = [];
  blocks.forEach((block, i) => {
    const at = `system[${i}]`;
    const kind = unionMember(block, ["text", "guardContent", "cachePoint"], at);
    if ("other" in kind || kind.member !== "text") return log.drop("other" in kind ? kind.other : kind.member, at);
    expectShape(TextMember, kind.value, `${at}.text`);
    out.push({ type: "text", text: kind.value });
  });
  return out;
}

/**
 * One message. A user turn's toolResult blocks become one IR `tool` message placed before the rest of
 * the turn (Converse carries tool results inside the user turn; the IR gives them their own role).
 */
function decodeMessage(message: object, at: string, log: DropLog): IrMessage[] {
  expectShape(Message, message, at);
  log.unknownMembers(message, Message, at);
  const blocks = message.content.map((block, i) => ({ block, at: `${at}.content[${i}]` }));
  if (message.role === "assistant") {
    return [{ role: "assistant", content: blocks.map(({ block, at: path }) => decodeAssistantBlock(block, path, log)).filter((p) => p !== undefined) }];
  }
  const results: IrToolResultPart[] = [];
  const parts: IrUserPart[] = [];
  for (const { block, at: path } of blocks) {
    const kind = unionMember(block, CONTENT_MEMBERS, path);
    const member = "other" in kind ? kind.other : kind.member;
    const value = "other" in kind ? undefined : kind.value;
    if (member === "toolResult") results.push(decodeToolResult(value, `${path}.toolResult`, log));
    else if (member === "text") {
      expectShape(TextMember, value, `${path}.text`);
      parts.push({ type: "text", text: value });
    } else if (member === "image" || member === "document") {
      const part = member === "image" ? decodeImage(value, `${path}.image`, log) : decodeDocument(value, `${path}.document`, log);
      if (part) parts.push(part);
    } else log.drop(`${member} block`, path, "this content block type is not modelled by the gateway's IR");
  }
  const out: IrMessage[] = [];
  if (results.length > 0) out.push({ role: "tool", content: results });
  if (parts.length > 0 || results.length === 0) out.push({ role: "user", content: parts });
  return out;
}

/** ImageBlock: `{format, source: {bytes}}`; an S3 source cannot cross protocols. */
function decodeImage(value: unknown, at: string, log: DropLog): IrUserPart | undefined {
  expectShape(ImageBlock, value, at);
  log.unknownMembers(value, ImageBlock, at);
  if (!(IMAGE_FORMATS as readonly string[]).includes(value.format)) throw new WireError(`${at}.format`, enumOf(IMAGE_FORMATS));
  const bytes = sourceBytes(value.source, `${at}.source`, ["bytes", "s3Location"], log);
  return bytes === undefined ? undefined : { type: "image", source: { kind: "base64", mediaType: `image/${value.format}`, data: bytes } };
}

/** DocumentBlock: `{format, name, source: {bytes} | {text}}`; the name becomes the IR title. */
function decodeDocument(value: unknown, at: string, log: DropLog): IrUserPart | undefined {
  expectShape(DocumentBlock, value, at);
  log.unknownMembers(value, DocumentBlock, at);
  const format = value.format;
  if (format !== undefined && DOCUMENT_TYPES[format] === undefined) throw new WireError(`${at}.format`, enumOf(Object.keys(DOCUMENT_TYPES)));
  const mediaType = format === undefined ? undefined : DOCUMENT_TYPES[format];
  const kind = unionMember(value.source, ["bytes", "text", "s3Location", "content"], `${at}.source`);
  let source: IrMediaSource | undefined;
  if (!("other" in kind) && kind.member === "text") {
    expectShape(TextMember, kind.value, `${at}.source.text`);
    source = { kind: "base64", mediaType: mediaType ?? "text/plain", data: Buffer.from(kind.value, "utf8").toString("base64") };
  } else {
    const bytes = sourceBytes(value.source, `${at}.source`, ["bytes", "text", "s3Location", "content"], log);
    if (bytes !== undefined) source = { kind: "base64", mediaType: mediaType ?? "application/octet-stream", data: bytes };
  }
  return source && { type: "document", source, title: value.name };
}

/** A source union's base64 `bytes`; S3 objects and document content blocks are dropped with a warning. */
function sourceBytes(source: object, at: string, members: readonly string[], log: DropLog): string | undefined {
  const kind = unionMember(source, members, at);
  if ("other" in kind || kind.member !== "bytes") {
    log.drop(`${"other" in kind ? kind.other : kind.member} source`, at, "its block was dropped; only inline bytes (and document text) cross protocols");
    return undefined;
  }
  expectShape(TextMember, kind.value, `${at}.bytes`);
  return kind.value;
}

function decodeToolResult(value: unknown, at: string, log: DropLog): IrToolResultPart {
  expectShape(ToolResultBlock, value, at);
  log.unknownMembers(value, ToolResultBlock, at, ["type"]);
  const content: IrToolResultPart["content"][number][] = [];
  value.content.forEach((block, i) => {
    const path = `${at}.content[${i}]`;
    const kind = unionMember(block, ["text", "json", "image", "document", "video", "searchResult"], path);
    if ("other" in kind) return log.drop(`${kind.other} in toolResult`, path, "a tool result carries only text, JSON and images in the IR");
    if (kind.member === "text") {
      expectShape(TextMember, kind.value, `${path}.text`);
      content.push({ type: "text", text: kind.value });
    } else if (kind.member === "json") {
      log.note("toolResult json content carried as JSON text (the IR's tool results hold text and images)");
      content.push({ type: "text", text: JSON.stringify(kind.value) });
    } else if (kind.member === "image") {
      const image = decodeImage(kind.value, `${path}.image`, log);
      if (image?.type === "image") content.push(image);
    } else log.drop(`${kind.member} in toolResult`, path, "a tool result carries only text, JSON and images in the IR");
  });
  return { type: "tool_result", toolCallId: value.toolUseId, content, ...(value.status === "error" && { isError: true }) };
}

// ---- decode: tools, model fields, output -----------------------------------------------------------

function decodeToolConfig(config: RequestBody["toolConfig"], log: DropLog): { tools: IrTool[]; toolChoice?: IrToolChoice } {
  if (!config) return { tools: [] };
  const tools: IrTool[] = [];
  config.tools.forEach((tool, i) => {
    const at = `toolConfig.tools[${i}]`;
    const kind = unionMember(tool, ["toolSpec", "systemTool", "cachePoint"], at);
    if ("other" in kind || kind.member !== "toolSpec") return log.drop("other" in kind ? kind.other : kind.member, at, "only toolSpec tools cross protocols");
    expectShape(ToolSpecification, kind.value, `${at}.toolSpec`);
    log.unknownMembers(kind.value, ToolSpecification, `${at}.toolSpec`);
    const spec = kind.value;
    tools.push({ name: spec.name, ...(spec.description !== undefined && { description: spec.description }), parameters: spec.inputSchema.json, ...(spec.strict !== undefined && { strict: spec.strict }) });
  });
  if (!config.toolChoice) return { tools };
  const choice = unionMember(config.toolChoice, ["auto", "any", "tool"], "toolConfig.toolChoice");
  if ("other" in choice) {
    if (choice.other === "(empty)") throw new WireError("toolConfig.toolChoice", "Member must have exactly one of [auto, any, tool] set");
    log.drop(choice.other, `toolConfig.toolChoice.${choice.other}`, "this tool choice is not modelled by the gateway's IR");
    return { tools };
  }
  if (choice.member === "auto") return { tools, toolChoice: { type: "auto" } };
  if (choice.member === "any") return { tools, toolChoice: { type: "required" } };
  expectShape(SpecificToolChoice, choice.value, "toolConfig.toolChoice.tool");
  return { tools, toolChoice: { type: "tool", name: choice.value.name } };
}

/**
 * additionalModelRequestFields go to the model as they are; of them the IR models Anthropic's
 * `thinking` (enabled with budget_tokens, adaptive, disabled) and `top_k`. The rest is dropped.
 */
function decodeAdditionalFields(fields: unknown, log: DropLog): { reasoning?: IrReasoning; topK?: number } {
  if (fields === undefined || fields === null) return {};
  const why = "model-specific fields cross protocols only where the IR models them (thinking, top_k)";
  if (!isObject(fields)) {
    log.drop("additionalModelRequestFields", "additionalModelRequestFields", why);
    return {};
  }
  const out: { reasoning?: IrReasoning; topK?: number } = {};
  for (const [member, value] of Object.entries(fields)) {
    const at = `additionalModelRequestFields.${member}`;
    if (member === "top_k" && Number.isInteger(value)) out.topK = value as number;
    else if (member === "thinking" && isObject(value) && value.type === "enabled" && Number.isInteger(value.budget_tokens)) out.reasoning = { budgetTokens: value.budget_tokens as number };
    else if (member === "thinking" && isObject(value) && value.type === "adaptive") out.reasoning = {};
    else if (!(member === "thinking" && isObject(value) && value.type === "disabled")) log.drop(at, at, why);
  }
  return out;
}

const EFFORTS = ["low", "medium", "high"] as const;

/** outputConfig: a JSON-schema text format (its schema is JSON text), and a reasoning effort. */
function decodeOutputConfig(config: RequestBody["outputConfig"], log: DropLog): { responseFormat?: IrResponseFormat; effort?: IrReasoning["effort"] } {
  if (!config) return {};
  let effort: IrReasoning["effort"];
  if (config.effort !== undefined && (EFFORTS as readonly string[]).includes(config.effort)) effort = config.effort as IrReasoning["effort"];
  else if (config.effort === "xhigh" || config.effort === "max") {
    log.note(`outputConfig.effort ${config.effort} clamped to high, the IR's highest effort`);
    effort = "high";
  } else if (config.effort !== undefined) log.drop("outputConfig.effort", "outputConfig.effort", `effort ${config.effort} is not one the IR knows`);
  const format = config.textFormat;
  if (!format) return { ...(effort && { effort }) };
  const kind = unionMember(format.structure, ["jsonSchema"], "outputConfig.textFormat.structure");
  if ("other" in kind) throw new WireError("outputConfig.textFormat.structure", "Member must have exactly one of [jsonSchema] set");
  const at = "outputConfig.textFormat.structure.jsonSchema";
  expectShape(JsonSchemaDefinition, kind.value, at);
  let schema: unknown;
  try {
    schema = JSON.parse(kind.value.schema);
  } catch {
    schema = undefined;
  }
  if (!isObject(schema)) throw new WireError(`${at}.schema`, "Member must be a JSON schema object, as JSON text");
  const { name, description } = kind.value;
  return {
    responseFormat: { type: "json_schema", schema, ...(name !== undefined && { name }), ...(description !== undefined && { description }) },
    ...(effort && { effort }),
  };
}

// ---- encode --------------------------------------------------------------------------------------

type Block = Record<string, unknown>;
type Turn = { role: "user" | "assistant"; content: Block[] };
const defined = <T>(value: T | undefined): value is T => value !== undefined;

/** Anthropic's floor for thinking budget_tokens. */
const MIN_THINKING_BUDGET = 1024;
/** Effort -> budget_tokens, the anthropic adapter's table (docs/protocols.md). */
const EFFORT_BUDGET: Readonly<Record<NonNullable<IrReasoning["effort"]>, number>> = { minimal: 1024, low: 2048, medium: 8192, high: 16384 };

/**
 * Whether the upstream model is one of Anthropic's Claude models (`anthropic.claude-...`, with a region
 * prefix, or in an ARN), whose thinking and top_k go in additionalModelRequestFields. An application
 * inference profile ARN names no model and counts as not Claude.
 */
const isClaude = (model: string) => /anthropic\.claude|claude-/i.test(model);

function encodeBody(ir: IrRequest, upstreamModel: string, warn: WarningSink): Block {
  const body: Block = {};
  const messages = encodeTurns(ir.messages, warn);
  body.messages = messages;
  const system = ir.system.filter((part) => part.text !== "").map((part) => ({ text: part.text }));
  if (system.length > 0) body.system = system;
  const toolConfig = encodeToolConfig(ir, messages, warn);
  if (toolConfig) body.toolConfig = toolConfig;
  const forcedTool = ir.toolChoice?.type === "required" || ir.toolChoice?.type === "tool";
  const claude = isClaude(upstreamModel);
  const additional: Block = {};
  const thinking = encodeThinking(ir, claude, forcedTool, upstreamModel, warn);
  if (thinking) additional.thinking = thinking.thinking;
  const inferenceConfig = encodeInference(ir.sampling, thinking?.budget, warn);
  if (Object.keys(inferenceConfig).length > 0) body.inferenceConfig = inferenceConfig;
  if (ir.sampling.topK !== undefined && thinking) warn("top_k dropped: Anthropic models do not accept it with thinking on");
  else if (ir.sampling.topK !== undefined && claude) additional.top_k = ir.sampling.topK;
  else if (ir.sampling.topK !== undefined) warn(`top_k dropped: Converse has no topK, and the gateway maps it into additionalModelRequestFields only for Claude models (upstream ${upstreamModel})`);
  if (Object.keys(additional).length > 0) body.additionalModelRequestFields = additional;
  const textFormat = encodeResponseFormat(ir.responseFormat, warn);
  if (textFormat) body.outputConfig = { textFormat };
  if (ir.user !== undefined) warn("user dropped: Converse has no end-user field");
  return body;
}

/**
 * IR messages -> Converse turns. Tool results become toolResult blocks in a user turn, and turns of the
 * same role are merged: Converse requires user and assistant turns to alternate.
 */
function encodeTurns(messages: readonly IrMessage[], warn: WarningSink): Turn[] {
  const turns: Turn[] = [];
  let documents = 0;
  for (const message of messages) {
    let content: Block[];
    if (message.role === "assistant") content = message.content.map((part) => encodeAssistantPart(part, warn, true)).filter(defined);
    else if (message.role === "tool") content = message.content.map((result) => encodeToolResult(result, warn));
    else content = message.content.map((part) => encodeUserPart(part, warn, () => ++documents)).filter(defined);
    const role = message.role === "assistant" ? "assistant" : "user";
    if (content.length === 0) {
      warn(`a${role === "user" ? " user" : "n assistant"} message with nothing Bedrock can carry was dropped`);
      continue;
    }
    const last = turns.at(-1);
    if (last?.role === role) last.content.push(...content);
    else turns.push({ role, content });
  }
  return turns;
}

function encodeUserPart(part: IrUserPart, warn: WarningSink, nextDocument: () => number): Block | undefined {
  switch (part.type) {
    case "text":
      return part.text === "" ? undefined : { text: part.text };
    case "image": {
      const image = encodeImage(part.source, warn);
      return image && { image };
    }
    case "document":
      return encodeDocument(part.source, part.title, nextDocument, warn);
  }
}

/** Converse takes image bytes in png, jpeg, gif or webp; URLs and other types are dropped. */
function encodeImage(source: IrMediaSource, warn: WarningSink): Block | undefined {
  if (source.kind === "url") {
    warn("image by URL dropped: Converse takes image bytes (or S3 objects), not URLs");
    return undefined;
  }
  const format = source.mediaType.replace(/^image\//, "").replace(/^jpg$/, "jpeg");
  if (!(IMAGE_FORMATS as readonly string[]).includes(format)) {
    warn(`image of type ${source.mediaType} dropped: Converse takes png, jpeg, gif and webp`);
    return undefined;
  }
  return { format, source: { bytes: source.data } };
}

/**
 * A document as bytes in one of Converse's formats. Converse requires a name of letters, digits, single
 * spaces, hyphens, parentheses and square brackets: a title is cleaned to fit, an untitled one numbered.
 */
function encodeDocument(source: IrMediaSource, title: string | undefined, nextDocument: () => number, warn: WarningSink): Block | undefined {
  if (source.kind === "url") {
    warn("document by URL dropped: Converse takes document bytes (or S3 objects), not URLs");
    return undefined;
  }
  const format = DOCUMENT_FORMATS[source.mediaType];
  if (format === undefined) {
    warn(`document of type ${source.mediaType} dropped: Converse takes ${Object.keys(DOCUMENT_TYPES).join(", ")}`);
    return undefined;
  }
  const n = nextDocument();
  const cleaned = (title ?? "").replace(/[^A-Za-z0-9\s()[\]-]/g, " ").replace(/\s+/g, " ").trim();
  const name = cleaned === "" ? `document-${n}` : cleaned;
  if (title !== undefined && name !== title) warn(`document title ${JSON.stringify(title)} sent as name ${JSON.stringify(name)}: Converse names allow only letters, digits, single spaces, hyphens, parentheses and brackets`);
  return { document: { format, name, source: { bytes: source.data } } };
}

function encodeToolResult(result: IrToolResultPart, warn: WarningSink): Block {
  const content: Block[] = [];
  for (const part of result.content) {
    if (part.type === "text") content.push({ text: part.text });
    else {
      const image = encodeImage(part.source, warn);
      if (image) content.push({ image });
    }
  }
  return { toolResult: { toolUseId: result.toolCallId, content, ...(result.isError === true && { status: "error" }) } };
}

/** Tool names the turns use; Converse refuses toolUse / toolResult blocks without a toolConfig. */
function toolNamesInTurns(turns: readonly Turn[]): Set<string> | undefined {
  const names = new Set<string>();
  let any = false;
  for (const block of turns.flatMap((turn) => turn.content)) {
    if (isObject(block.toolUse)) names.add(String(block.toolUse.name));
    any ||= block.toolUse !== undefined || block.toolResult !== undefined;
  }
  return any ? names : undefined;
}

function encodeToolConfig(ir: IrRequest, turns: readonly Turn[], warn: WarningSink): Block | undefined {
  const used = toolNamesInTurns(turns);
  const choice = ir.toolChoice;
  if (ir.parallelToolCalls === false) warn("parallel_tool_calls false dropped: Converse has no switch for parallel tool calls");
  if (ir.tools.length === 0 || (choice?.type === "none" && !used)) {
    if (choice && choice.type !== "none" && choice.type !== "auto") warn(`tool_choice ${choice.type} dropped: the request has no tools`);
    if (choice?.type === "none" && ir.tools.length > 0 && !used) warn("tool_choice none sent by leaving the tools out: Converse has no 'none' tool choice");
    if (!used) return undefined;
    // History holds tool calls but the request names no tools: declare the ones used, schema-less.
    warn(`toolConfig declared for ${[...used].join(", ") || "the tool results"} with empty schemas: Converse requires one when the conversation holds toolUse or toolResult blocks`);
    return { tools: [...used].map((name) => ({ toolSpec: { name, inputSchema: { json: { type: "object" } } } })) };
  }
  const tools = ir.tools.map((tool) => ({
    toolSpec: {
      name: tool.name,
      ...(tool.description !== undefined && { description: tool.description }),
      inputSchema: { json: tool.parameters.type === undefined ? { type: "object", ...tool.parameters } : tool.parameters },
      ...(tool.strict !== undefined && { strict: tool.strict }),
    },
  }));
  switch (choice?.type) {
    case undefined:
      return { tools };
    case "auto":
      return { tools, toolChoice: { auto: {} } };
    case "required":
      return { tools, toolChoice: { any: {} } };
    case "tool":
      return { tools, toolChoice: { tool: { name: choice.name } } };
    case "none":
      warn("tool_choice none dropped: Converse has no 'none' tool choice, and the conversation's tool blocks need the tools declared");
      return { tools };
  }
}

/**
 * IR reasoning -> Anthropic's `thinking` in additionalModelRequestFields (Claude models only; other
 * families name their reasoning switches differently). Reasoning with neither budget nor effort came from
 * adaptive thinking and goes back as such.
 */
function encodeThinking(ir: IrRequest, claude: boolean, forcedTool: boolean, upstreamModel: string, warn: WarningSink): { thinking: Block; budget?: number } | undefined {
  const reasoning = ir.reasoning;
  if (!reasoning) return undefined;
  if (!claude) {
    warn(`reasoning dropped: Converse sets reasoning in model-specific additionalModelRequestFields, which the gateway maps only for Claude models (upstream ${upstreamModel})`);
    return undefined;
  }
  if (forcedTool) {
    warn("reasoning dropped: Anthropic models do not allow thinking with a forced tool choice");
    return undefined;
  }
  if (reasoning.budgetTokens === undefined && reasoning.effort === undefined) return { thinking: { type: "adaptive" } };
  let budget = reasoning.budgetTokens ?? EFFORT_BUDGET[reasoning.effort ?? "medium"];
  if (budget < MIN_THINKING_BUDGET) {
    warn(`thinking budget ${budget} raised to ${MIN_THINKING_BUDGET}, Anthropic's minimum`);
    budget = MIN_THINKING_BUDGET;
  }
  return { thinking: { type: "enabled", budget_tokens: budget }, budget };
}

/**
 * inferenceConfig. Temperature and topP range over 0..1. With Anthropic thinking on, maxTokens must stay
 * above the budget, temperature may only be 1 and topP no lower than 0.95.
 */
function encodeInference(sampling: IrSampling, budget: number | undefined, warn: WarningSink): Block {
  const out: Block = {};
  const thinking = budget !== undefined;
  let maxTokens = sampling.maxTokens;
  if (maxTokens !== undefined && budget !== undefined && maxTokens <= budget) {
    warn(`maxTokens raised from ${maxTokens} to ${budget + maxTokens} to stay above thinking budget_tokens ${budget}`);
    maxTokens += budget;
  }
  if (maxTokens !== undefined) out.maxTokens = maxTokens;
  const { temperature, topP } = sampling;
  if (temperature !== undefined && thinking && temperature !== 1) warn("temperature dropped: Anthropic models do not accept it with thinking on");
  else if (temperature !== undefined && temperature > 1) warn(`temperature ${temperature} clamped to 1, Converse's maximum`);
  if (temperature !== undefined && !(thinking && temperature !== 1)) out.temperature = Math.min(temperature, 1);
  if (topP !== undefined && thinking && topP < 0.95) warn(`top_p ${topP} raised to 0.95, the lowest Anthropic models accept with thinking on`);
  if (topP !== undefined) out.topP = thinking ? Math.max(topP, 0.95) : topP;
  if (sampling.stop && sampling.stop.length > 0) out.stopSequences = sampling.stop;
  if (sampling.seed !== undefined) warn("seed dropped: Converse has no seed");
  if (sampling.frequencyPenalty !== undefined) warn("frequency_penalty dropped: Converse has no frequency penalty");
  if (sampling.presencePenalty !== undefined) warn("presence_penalty dropped: Converse has no presence penalty");
  return out;
}

/** JSON-schema output -> outputConfig.textFormat (its schema travels as JSON text); schema-less JSON mode does not exist. */
function encodeResponseFormat(format: IrRequest["responseFormat"], warn: WarningSink): Block | undefined {
  if (!format || format.type === "text") return undefined;
  if (format.type === "json") {
    warn("response_format json dropped: Converse's outputConfig.textFormat needs a JSON schema");
    return undefined;
  }
  const jsonSchema = { schema: JSON.stringify(format.schema), ...(format.name !== undefined && { name: format.name }), ...(format.description !== undefined && { description: format.description }) };
  return { type: "json_schema", structure: { jsonSchema } };
}
