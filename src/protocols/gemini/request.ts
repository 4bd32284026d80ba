// GenerateContentRequest <-> IR. Decoding faces a client (strict about the members it reads, a 400 naming
// the member at fault; lenient about the rest, which is dropped with a warning). Encoding faces an
// upstream and reports everything it drops or changes. The model and streaming are in the path
// (`/v1beta/models/{model}:generateContent`, `:streamGenerateContent`), not in the body.
import { Type, type Static } from "@sinclair/typebox";
import type { Decoded, EncodedRequest, IngressContext, WarningSink } from "../types.ts";
import { irError } from "../../ir/errors.ts";
import type { IrMediaSource, IrMessage, IrReasoning, IrRequest, IrResponseFormat, IrSampling, IrTextPart, IrTool, IrToolChoice, IrToolResultPart, IrUserPart } from "../../ir/index.ts";
import { FOREIGN_SIGNATURE, decodeModelParts, encodeModelParts, type CallIdFor } from "./response.ts";
import {
  Blob,
  Content,
  DropLog,
  FileData,
  FunctionDeclaration,
  FunctionResponse,
  GenerateContentRequest,
  GenerationConfig,
  PartFlags,
  ThinkingConfig,
  WireError,
  camelCaseKeys,
  checkPartFlags,
  expectShape,
  isObject,
  listOf,
  type Json,
} from "./schema.ts";

/** What encodeURIComponent writes unchanged. */
const UNRESERVED = /^[A-Za-z0-9\-_.!~*'()]*$/;

/** The path of a call (the provider's base_url has no version segment). A `models/` prefix is the SDK's long form of the same name. */
export function generatePath(model: string, stream: boolean, sse = true): string {
  // One path segment whatever the name holds (a direct route puts a caller's text here).
  const bare = model.startsWith("models/") ? model.slice("models/".length) : model;
  // A name of characters encodeURIComponent leaves as they are (the usual one) is not re-encoded per request.
  const name = UNRESERVED.test(bare) ? bare : encodeURIComponent(bare);
  if (!stream) return `/v1beta/models/${name}:generateContent`;
  return `/v1beta/models/${name}:streamGenerateContent${sse ? "?alt=sse" : ""}`;
}

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
  const body = encodeBody(request, (warning) => warnings.push(warning));
  return { path: generatePath(upstreamModel, request.stream), body, warnings };
}

// ---- decode: the body -----------------------------------------------------------------------------

function decodeBody(raw: unknown, context: IngressContext, log: DropLog): IrRequest {
  const camel = camelCaseKeys(raw);
  // camelCaseKeys may hand back the caller's own object, which a later same-protocol attempt relays.
  const body = isObject(camel) && isObject(camel.contents) ? { ...camel, contents: listOf(camel.contents) } : camel;
  expectShape(GenerateContentRequest, body, "");
  log.unknownMembers(body, GenerateContentRequest, "");
  const model = context.pathModel ?? body.model;
  if (model === undefined || model === "") throw new WireError("model", "* GenerateContentRequest.model: model is not specified");
  const ledger = new CallLedger(log);
  const messages: IrMessage[] = [];
  body.contents.forEach((content, i) => messages.push(...decodeContent(content, `contents[${i}]`, log, ledger)));
  const config = body.generationConfig ?? {};
  if (body.generationConfig) log.unknownMembers(config, GenerationConfig, "generationConfig");
  if (config.candidateCount !== undefined && config.candidateCount > 1) {
    throw new WireError("generationConfig.candidateCount", "generationConfig.candidateCount: this gateway serves one candidate per request across protocols");
  }
  const toolChoice = decodeToolChoice(body, log);
  const responseFormat = decodeResponseFormat(config, log);
  const reasoning = decodeReasoning(config.thinkingConfig, log);
  return {
    model,
    system: body.systemInstruction === undefined ? [] : decodeSystem(body.systemInstruction, log),
    messages,
    tools: (body.tools ?? []).flatMap((tool, i) => decodeTool(tool, `tools[${i}]`, log)),
    ...(toolChoice && { toolChoice }),
    sampling: decodeSampling(config),
    ...(responseFormat && { responseFormat }),
    ...(reasoning && { reasoning }),
    stream: context.pathStream === true,
  };
}

/**
 * Shapes checked per request, built once: checkerFor caches compiled checkers by schema object, so a
 * schema written inline at the call was compiled again on every request.
 */
const SystemInstructionShape = Type.Object({ parts: Type.Array(Type.Object({})) });
const TextPartShape = Type.Object({ text: Type.String() });

/** `systemInstruction`: a Content whose text parts are the instructions (its role, if any, is ignored). */
function decodeSystem(value: unknown, log: DropLog): IrTextPart[] {
  const content = isObject(value) ? { ...value, parts: listOf(value.parts) } : value;
  expectShape(SystemInstructionShape, content, "systemInstruction");
  return (content.parts as Json[]).flatMap((part, i): IrTextPart[] => {
    const at = `systemInstruction.parts[${i}]`;
    if (typeof part.text === "string") return part.text === "" ? [] : [{ type: "text", text: part.text }];
    log.drop("non-text systemInstruction part", at, "system instructions carry only text in the IR");
    return [];
  });
}

/**
 * Function call ids across the conversation. Gemini 2.x sends calls without ids and answers them by
 * name, so a call without one gets `call_<n>`, and a response takes the id of the open call with its id,
 * else of the earliest open call of its name: in the IR a result always names its call.
 */
class CallLedger {
  private generated = 0;
  private readonly open: { id: string; name: string }[] = [];
  constructor(private readonly log: DropLog) {}

  readonly call: CallIdFor = (call) => {
    const id = call.id ?? `call_${this.generated++}`;
    this.open.push({ id, name: call.name });
    return id;
  };

  answer(response: { name: string; id?: string }, at: string): string {
    const byId = response.id === undefined ? -1 : this.open.findIndex((call) => call.id === response.id);
    const i = byId >= 0 ? byId : this.open.findIndex((call) => call.name === response.name);
    const [matched] = i >= 0 ? this.open.splice(i, 1) : [];
    if (matched) return matched.id;
    if (response.id !== undefined) return response.id;
    const id = `call_${this.generated++}`;
    this.log.note(`functionResponse ${response.name} at ${at} answers no earlier functionCall; given id ${id}`);
    return id;
  }
}

function decodeContent(raw: unknown, at: string, log: DropLog, ledger: CallLedger): IrMessage[] {
  const content = isObject(raw) ? { ...raw, parts: listOf(raw.parts) } : raw;
  expectShape(Content, content, at);
  log.unknownMembers(content, Content, at);
  const role = content.role ?? "user";
  if (role === "model") return [{ role: "assistant", content: decodeModelParts(content.parts, `${at}.parts`, log, ledger.call) }];
  if (role !== "user") throw new WireError(`${at}.role`, "Please use a valid role: user, model.");
  return decodeUserTurn(content.parts as Json[], `${at}.parts`, log, ledger);
}

const USER_PART_MEMBERS = ["text", "inlineData", "fileData", "functionResponse"];

/** A user turn: its functionResponse parts become one IR `tool` message placed first, the rest a user message. */
function decodeUserTurn(parts: readonly Json[], at: string, log: DropLog, ledger: CallLedger): IrMessage[] {
  const results: IrToolResultPart[] = [];
  const content: IrUserPart[] = [];
  parts.forEach((part, j) => {
    const path = `${at}[${j}]`;
    checkPartFlags(part, path);
    if (part.functionResponse !== undefined) return results.push(decodeFunctionResponse(part.functionResponse, `${path}.functionResponse`, log, ledger));
    log.unknownMembers(part, PartFlags, path, USER_PART_MEMBERS);
    if (part.text !== undefined) {
      expectShape(TextPartShape, part, path);
      return part.text === "" ? undefined : content.push({ type: "text", text: part.text });
    }
    const media = decodeMedia(part, path, log);
    if (media) content.push(media);
  });
  const out: IrMessage[] = [];
  if (results.length > 0) out.push({ role: "tool", content: results });
  if (content.length > 0 || results.length === 0) out.push({ role: "user", content });
  return out;
}

/** The IANA types the gateway can name from a URL's extension (Gemini's fileData requires one). */
const MIME_BY_EXTENSION: Readonly<Record<string, string>> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  webp: "image/webp",
  gif: "image/gif",
  heic: "image/heic",
  heif: "image/heif",
  pdf: "application/pdf",
  txt: "text/plain",
};

export function mimeFromUrl(url: string): string | undefined {
  const path = url.split(/[?#]/)[0] ?? "";
  const dot = path.lastIndexOf(".");
  return dot < 0 || dot < path.lastIndexOf("/") ? undefined : MIME_BY_EXTENSION[path.slice(dot + 1).toLowerCase()];
}

/** Uploaded files (Files API) and gs:// objects are readable only by Gemini with the caller's key. */
const GEMINI_ONLY_URI = /^(gs:\/\/|https:\/\/generativelanguage\.googleapis\.com\/)/i;

/** An inlineData or fileData part -> image or document; audio, video and Gemini-only files are dropped. */
function decodeMedia(part: Json, at: string, log: DropLog): IrUserPart | undefined {
  let source: IrMediaSource;
  let mimeType: string | undefined;
  if (part.inlineData !== undefined) {
    expectShape(Blob, part.inlineData, `${at}.inlineData`);
    mimeType = part.inlineData.mimeType;
    source = { kind: "base64", mediaType: mimeType, data: part.inlineData.data };
  } else if (part.fileData !== undefined) {
    expectShape(FileData, part.fileData, `${at}.fileData`);
    const uri = part.fileData.fileUri;
    if (GEMINI_ONLY_URI.test(uri) || !/^https?:\/\//i.test(uri)) {
      log.drop("fileData uri", `${at}.fileData`, "uploaded files and gs:// objects are readable only by Gemini; only public http(s) URLs cross protocols");
      return undefined;
    }
    mimeType = part.fileData.mimeType ?? mimeFromUrl(uri);
    source = { kind: "url", url: uri };
  } else {
    const kind = Object.keys(part).find((key) => key !== "thought" && key !== "thoughtSignature") ?? "empty";
    log.drop(`${kind} part`, at, "this part type is not modelled by the gateway's IR in a user turn");
    return undefined;
  }
  if (mimeType?.startsWith("image/")) return { type: "image", source };
  if (mimeType === undefined || mimeType.startsWith("audio/") || mimeType.startsWith("video/")) {
    log.drop(`${mimeType ?? "untyped"} media`, at, "audio, video and media of unknown type are not modelled by the gateway's IR");
    return undefined;
  }
  return { type: "document", source };
}

/**
 * A functionResponse -> IR tool result. Gemini's reference: an "output" key holds the output, an
 * "error" key the error; a response with neither is the output as a whole.
 */
function decodeFunctionResponse(value: unknown, at: string, log: DropLog, ledger: CallLedger): IrToolResultPart {
  expectShape(FunctionResponse, value, at);
  log.unknownMembers(value, FunctionResponse, at);
  const { response } = value;
  const only = Object.keys(response).length === 1 ? Object.keys(response)[0] : undefined;
  const isError = only === "error";
  const result = only === "output" || isError ? response[only] : response;
  const content: IrToolResultPart["content"][number][] = [{ type: "text", text: typeof result === "string" ? result : JSON.stringify(result) }];
  (value.parts ?? []).forEach((part, j) => {
    const media = decodeMedia(part as Json, `${at}.parts[${j}]`, log);
    if (media?.type === "image") content.push(media);
    else if (media) log.drop("document in functionResponse", `${at}.parts[${j}]`, "a tool result carries only text and images in the IR");
  });
  return { type: "tool_result", toolCallId: ledger.answer(value, at), content, ...(isError && { isError: true }) };
}

// ---- decode: tools, tool config, generation config -------------------------------------------------

const ToolSchema = Type.Object({ functionDeclarations: Type.Optional(Type.Array(FunctionDeclaration)) });

/** A Tool: its function declarations; the built-in tools (googleSearch, codeExecution, ...) are dropped. */
function decodeTool(tool: Json, at: string, log: DropLog): IrTool[] {
  const withList = tool.functionDeclarations === undefined ? tool : { ...tool, functionDeclarations: listOf(tool.functionDeclarations) };
  expectShape(ToolSchema, withList, at);
  for (const [key, value] of Object.entries(tool)) {
    if (key !== "functionDeclarations" && value !== null && value !== undefined) log.drop(`${key} tool`, `${at}.${key}`, "Gemini's built-in tools run only at Google");
  }
  return (withList.functionDeclarations ?? []).map((declaration, j) => {
    log.unknownMembers(declaration, FunctionDeclaration, `${at}.functionDeclarations[${j}]`);
    const parameters = declaration.parametersJsonSchema ?? (declaration.parameters ? (jsonSchemaOf(declaration.parameters) as Json) : {});
    return { name: declaration.name, ...(declaration.description !== undefined && { description: declaration.description }), parameters };
  });
}

const camel = (key: string) => key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/**
 * Gemini's OpenAPI-subset Schema -> JSON Schema: types are named in upper case on Gemini's side
 * (`OBJECT`), `nullable` becomes a null type, proto field names become camelCase (`any_of` -> `anyOf`).
 * Property names (the keys of `properties`) are the caller's and stay as they are.
 */
export function jsonSchemaOf(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(jsonSchemaOf);
  if (!isObject(schema)) return schema;
  const out: Json = {};
  for (const [rawKey, value] of Object.entries(schema)) {
    const key = camel(rawKey);
    if (key === "type" && typeof value === "string") out.type = value.toLowerCase();
    else if (key === "properties" && isObject(value)) out.properties = Object.fromEntries(Object.entries(value).map(([name, inner]) => [name, jsonSchemaOf(inner)]));
    else if (key === "items" || key === "anyOf") out[key] = jsonSchemaOf(value);
    else out[key] = value;
  }
  if (out.nullable === true && typeof out.type === "string") {
    out.type = [out.type, "null"];
    delete out.nullable;
  }
  return out;
}

/** `toolConfig.functionCallingConfig` -> tool choice. ANY with one allowed name is that tool. */
function decodeToolChoice(body: GenerateContentRequest, log: DropLog): IrToolChoice | undefined {
  const config = body.toolConfig?.functionCallingConfig;
  if (body.toolConfig) log.unknownMembers(body.toolConfig, Type.Object({ functionCallingConfig: Type.Unknown() }), "toolConfig");
  if (!config) return undefined;
  const at = "toolConfig.functionCallingConfig";
  log.unknownMembers(config, Type.Object({ mode: Type.Unknown(), allowedFunctionNames: Type.Unknown() }), at);
  const names = config.allowedFunctionNames ?? [];
  const mode = (config.mode ?? "AUTO").toUpperCase();
  const [only] = names;
  if (mode === "ANY" && names.length === 1 && only !== undefined) return { type: "tool", name: only };
  if (names.length > 0 && mode !== "NONE") log.drop("allowedFunctionNames", `${at}.allowedFunctionNames`, "the IR names one tool or all of them; every declared function stays callable");
  switch (mode) {
    case "AUTO":
      return { type: "auto" };
    case "ANY":
      return { type: "required" };
    case "NONE":
      return { type: "none" };
    case "VALIDATED":
      log.note("functionCallingConfig.mode VALIDATED carried as AUTO: the IR has no schema-validated mode");
      return { type: "auto" };
    case "MODE_UNSPECIFIED":
      return undefined;
    default:
      throw new WireError(`${at}.mode`, `Invalid value at '${at}.mode' (type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionCallingConfig.Mode), ${JSON.stringify(config.mode)}`);
  }
}

function decodeSampling(config: Static<typeof GenerationConfig>): IrSampling {
  // Assigned one by one: spreading conditional objects costs a copy per member on every request.
  const sampling: { -readonly [K in keyof IrSampling]: IrSampling[K] } = {};
  if (config.temperature !== undefined) sampling.temperature = config.temperature;
  if (config.topP !== undefined) sampling.topP = config.topP;
  if (config.topK !== undefined) sampling.topK = config.topK;
  if (config.maxOutputTokens !== undefined) sampling.maxTokens = config.maxOutputTokens;
  if (config.stopSequences !== undefined) sampling.stop = config.stopSequences;
  if (config.seed !== undefined) sampling.seed = config.seed;
  if (config.frequencyPenalty !== undefined) sampling.frequencyPenalty = config.frequencyPenalty;
  if (config.presencePenalty !== undefined) sampling.presencePenalty = config.presencePenalty;
  return sampling;
}

/** responseMimeType + responseJsonSchema (or the OpenAPI-subset responseSchema) -> response format. */
function decodeResponseFormat(config: Static<typeof GenerationConfig>, log: DropLog): IrResponseFormat | undefined {
  const mime = config.responseMimeType;
  const schema = config.responseJsonSchema ?? (config.responseSchema && (jsonSchemaOf(config.responseSchema) as Json));
  if (mime === "application/json" || (mime === undefined && schema)) return schema ? { type: "json_schema", schema } : { type: "json" };
  if (mime === undefined || mime === "text/plain") return undefined;
  log.drop(`responseMimeType ${mime}`, "generationConfig.responseMimeType", "the IR has text and JSON output only");
  return undefined;
}

const EFFORTS = ["minimal", "low", "medium", "high"] as const;

/**
 * thinkingConfig -> IR reasoning. thinkingLevel is an effort; a positive thinkingBudget a budget; -1
 * (dynamic) or includeThoughts alone is reasoning the model sizes itself; a budget of 0 turns it off.
 */
function decodeReasoning(thinking: Static<typeof ThinkingConfig> | undefined, log: DropLog): IrReasoning | undefined {
  if (!thinking) return undefined;
  const at = "generationConfig.thinkingConfig";
  log.unknownMembers(thinking, ThinkingConfig, at);
  const level = thinking.thinkingLevel?.toLowerCase();
  if (level !== undefined && level !== "thinking_level_unspecified") {
    if ((EFFORTS as readonly string[]).includes(level)) return { effort: level as (typeof EFFORTS)[number] };
    throw new WireError(`${at}.thinkingLevel`, `Invalid value at '${at}.thinkingLevel' (type.googleapis.com/google.ai.generativelanguage.v1beta.ThinkingConfig.ThinkingLevel), ${JSON.stringify(thinking.thinkingLevel)}`);
  }
  const budget = thinking.thinkingBudget;
  if (budget === 0) return undefined;
  if (budget !== undefined && budget > 0) return { budgetTokens: budget };
  return budget !== undefined || thinking.includeThoughts === true ? {} : undefined;
}

// ---- encode --------------------------------------------------------------------------------------

const defined = <T>(value: T | undefined): value is T => value !== undefined;

/** Gemini's OpenAI-compatibility layer maps reasoning_effort low / medium / high to these budgets; minimal takes the lowest. */
const EFFORT_BUDGET: Readonly<Record<NonNullable<IrReasoning["effort"]>, number>> = { minimal: 1024, low: 1024, medium: 8192, high: 24576 };
/** generationConfig.stopSequences: "up to 5" (API reference, GenerationConfig). */
const MAX_STOP_SEQUENCES = 5;

function encodeBody(ir: IrRequest, warn: WarningSink): Json {
  const body: Json = { contents: encodeContents(ir.messages, warn) };
  if (ir.system.length > 0) body.systemInstruction = { parts: ir.system.map((part) => ({ text: part.text })) };
  if (ir.tools.length > 0) body.tools = [{ functionDeclarations: ir.tools.map((tool) => encodeTool(tool, warn)) }];
  const toolConfig = encodeToolConfig(ir, warn);
  if (toolConfig) body.toolConfig = toolConfig;
  const generationConfig = encodeGenerationConfig(ir, warn);
  if (Object.keys(generationConfig).length > 0) body.generationConfig = generationConfig;
  if (ir.user !== undefined) warn("user dropped: Gemini has no end-user id");
  return body;
}

/** IR messages -> contents; tool results go in a user turn, and adjacent turns of one role are joined. */
function encodeContents(messages: readonly IrMessage[], warn: WarningSink): Json[] {
  const contents: { role: string; parts: Json[] }[] = [];
  const push = (role: string, parts: Json[]) => {
    const last = contents.at(-1);
    if (last?.role === role) last.parts.push(...parts);
    else if (parts.length > 0) contents.push({ role, parts });
  };
  let unsigned = 0;
  messages.forEach((message, i) => {
    if (message.role === "assistant") {
      const parts = encodeModelParts(message.content, warn, true);
      if (parts.length === 0) warn("an assistant message with nothing Gemini can carry was dropped");
      if (signFirstCall(parts)) unsigned += 1;
      push("model", parts);
    } else if (message.role === "tool") {
      push("user", message.content.map((result) => encodeToolResult(result, messages, i, warn)).filter(defined));
    } else {
      push("user", message.content.map((part) => encodeUserPart(part, warn)).filter(defined));
    }
  });
  if (unsigned > 0) warn(`${unsigned} model turn(s) with function calls had no thought signature (history from another vendor); sent Google's ${FOREIGN_SIGNATURE}`);
  return contents;
}

/** Marks the first call of an unsigned turn of calls with the foreign signature; true when it did. */
function signFirstCall(parts: Json[]): boolean {
  const calls = parts.filter((part) => part.functionCall !== undefined);
  const [first] = calls;
  if (!first || calls.some((part) => part.thoughtSignature !== undefined)) return false;
  first.thoughtSignature = FOREIGN_SIGNATURE;
  return true;
}

function encodeUserPart(part: IrUserPart, warn: WarningSink): Json | undefined {
  if (part.type === "text") return { text: part.text };
  if (part.type === "document" && part.title !== undefined) warn("document title dropped: Gemini parts have no title");
  return encodeMedia(part.source, part.type, warn);
}

/** Bytes go inline; a URL goes as fileData, which needs a mimeType (from a data: URL or the extension). */
function encodeMedia(source: IrMediaSource, kind: string, warn: WarningSink): Json | undefined {
  if (source.kind === "base64") return { inlineData: { mimeType: source.mediaType, data: source.data } };
  const inline = /^data:([^;,]+);base64,(.*)$/s.exec(source.url);
  if (inline) return { inlineData: { mimeType: inline[1], data: inline[2] } };
  const mimeType = mimeFromUrl(source.url);
  if (mimeType) return { fileData: { mimeType, fileUri: source.url } };
  warn(`${kind} by URL dropped: Gemini's fileData needs a mimeType and ${source.url.slice(0, 80)} names none by its extension`);
  return undefined;
}

/** The function a tool result answers, named by the latest earlier assistant turn that made the call. */
function calledName(messages: readonly IrMessage[], before: number, id: string): string | undefined {
  for (let i = before - 1; i >= 0; i -= 1) {
    const message = messages[i];
    if (message?.role !== "assistant") continue;
    const call = message.content.find((part) => part.type === "tool_call" && part.id === id);
    if (call?.type === "tool_call") return call.name;
  }
  return undefined;
}

/** A tool result's text as the functionResponse.response object: a JSON object as is, else {"output": text}. */
function responseObject(text: string): Json {
  try {
    const value: unknown = JSON.parse(text);
    if (isObject(value)) return value;
  } catch {
    // plain text
  }
  return { output: text };
}

function encodeToolResult(result: IrToolResultPart, messages: readonly IrMessage[], index: number, warn: WarningSink): Json | undefined {
  const name = calledName(messages, index, result.toolCallId);
  if (name === undefined) {
    warn(`tool result for call ${result.toolCallId} dropped: no earlier tool call names its function, which Gemini's functionResponse requires`);
    return undefined;
  }
  const text = result.content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("\n");
  const media = result.content.flatMap((part) => (part.type === "image" ? [encodeMedia(part.source, "image in a tool result", warn)] : [])).filter(defined);
  const response = result.isError === true ? { error: text } : responseObject(text);
  return { functionResponse: { id: result.toolCallId, name, response, ...(media.length > 0 && { parts: media }) } };
}

function encodeTool(tool: IrTool, warn: WarningSink): Json {
  if (tool.strict === true) warn(`strict dropped from tool ${tool.name}: Gemini has no strict function schemas`);
  return {
    name: tool.name,
    ...(tool.description !== undefined && { description: tool.description }),
    ...(Object.keys(tool.parameters).length > 0 && { parametersJsonSchema: tool.parameters }),
  };
}

function encodeToolConfig(ir: IrRequest, warn: WarningSink): Json | undefined {
  if (ir.parallelToolCalls === false) warn("parallel_tool_calls false dropped: Gemini has no switch for parallel function calls");
  const choice = ir.toolChoice;
  if (!choice) return undefined;
  if (ir.tools.length === 0) {
    if (choice.type === "required" || choice.type === "tool") warn(`tool_choice ${choice.type} dropped: the request has no tools`);
    return undefined;
  }
  const config = (mode: string, extra: Json = {}) => ({ functionCallingConfig: { mode, ...extra } });
  switch (choice.type) {
    case "auto":
      return config("AUTO");
    case "none":
      return config("NONE");
    case "required":
      return config("ANY");
    case "tool":
      return config("ANY", { allowedFunctionNames: [choice.name] });
  }
}

function encodeGenerationConfig(ir: IrRequest, warn: WarningSink): Json {
  const s = ir.sampling;
  const out: Json = {};
  if (s.temperature !== undefined) out.temperature = s.temperature;
  if (s.topP !== undefined) out.topP = s.topP;
  if (s.topK !== undefined) out.topK = s.topK;
  if (s.maxTokens !== undefined) out.maxOutputTokens = s.maxTokens;
  if (s.stop && s.stop.length > MAX_STOP_SEQUENCES) warn(`stop sequences after the first ${MAX_STOP_SEQUENCES} dropped: Gemini takes at most ${MAX_STOP_SEQUENCES}`);
  if (s.stop && s.stop.length > 0) out.stopSequences = s.stop.slice(0, MAX_STOP_SEQUENCES);
  if (s.seed !== undefined) out.seed = s.seed;
  if (s.presencePenalty !== undefined) out.presencePenalty = s.presencePenalty;
  if (s.frequencyPenalty !== undefined) out.frequencyPenalty = s.frequencyPenalty;
  const format = ir.responseFormat;
  if (format?.type === "json") out.responseMimeType = "application/json";
  if (format?.type === "json_schema") {
    if (format.description !== undefined) warn("response_format description dropped: Gemini takes only a schema");
    out.responseMimeType = "application/json";
    out.responseJsonSchema = format.schema;
  }
  const reasoning = ir.reasoning;
  // A budget wins over an effort; reasoning with neither is dynamic thinking (-1). Thoughts are asked
  // for, so the client that wanted reasoning sees it.
  if (reasoning) out.thinkingConfig = { thinkingBudget: reasoning.budgetTokens ?? (reasoning.effort ? EFFORT_BUDGET[reasoning.effort] : -1), includeThoughts: true };
  return out;
}
