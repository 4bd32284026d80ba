// TypeBox schemas of the Gemini generateContent wire shapes this adapter reads, and the helpers that
// check them. Field names follow the API reference (https://ai.google.dev/api/generate-content and
// https://ai.google.dev/api/caching#Content for Content / Part) and the official SDK's types
// (@google/genai dist/genai.d.ts: Part, FunctionCall, FunctionResponse, GenerationConfig, ...).
//
// Google's JSON mapping of its protobufs accepts each field in lowerCamelCase or in its proto
// snake_case name (the docs' curl samples send `system_instruction`, `inline_data`), so a client body is
// first brought to lowerCamelCase (camelCaseKeys). Every object stays open: a member the IR does not
// model is dropped with a warning (DropLog), never a 400. Upstream output is read leniently.
import { Type, type Static, type TSchema } from "@sinclair/typebox";
import { checkerFor, joinPointer } from "../checkers.ts";
import { DropLog as SharedDropLog } from "../drop-log.ts";
import { ValueErrorType, type ValueError } from "@sinclair/typebox/errors";

export type Json = Record<string, unknown>;
export const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);

const JsonObject = Type.Record(Type.String(), Type.Unknown());

// ---- client request ----------------------------------------------------------------------------

/** Inline bytes (`inlineData`), base64. */
export const Blob = Type.Object({ mimeType: Type.String(), data: Type.String() });
/** A file by URI (`fileData`): uploaded files, YouTube, and public or signed https URLs. */
export const FileData = Type.Object({ mimeType: Type.Optional(Type.String()), fileUri: Type.String() });
export const FunctionCall = Type.Object({ name: Type.String(), args: Type.Optional(JsonObject), id: Type.Optional(Type.String()) });
export const FunctionResponse = Type.Object({
  name: Type.String(),
  response: JsonObject,
  id: Type.Optional(Type.String()),
  /** Media the function returned (FunctionResponsePart: inlineData or fileData). */
  parts: Type.Optional(Type.Array(Type.Object({}))),
});
/** What any part may carry beside its data: the thought flag and the opaque signature. */
export const PartFlags = Type.Object({ thought: Type.Optional(Type.Boolean()), thoughtSignature: Type.Optional(Type.String()) });
export const Content = Type.Object({ role: Type.Optional(Type.String()), parts: Type.Array(Type.Object({})) });

export const FunctionDeclaration = Type.Object({
  name: Type.String({ minLength: 1 }),
  description: Type.Optional(Type.String()),
  /** An OpenAPI 3.0 Schema subset (upper-case types allowed). */
  parameters: Type.Optional(JsonObject),
  /** Plain JSON Schema, the alternative to `parameters`. */
  parametersJsonSchema: Type.Optional(JsonObject),
});
export const FunctionCallingConfig = Type.Object({ mode: Type.Optional(Type.String()), allowedFunctionNames: Type.Optional(Type.Array(Type.String())) });
export const ToolConfig = Type.Object({ functionCallingConfig: Type.Optional(FunctionCallingConfig) });
export const ThinkingConfig = Type.Object({
  thinkingBudget: Type.Optional(Type.Integer()),
  includeThoughts: Type.Optional(Type.Boolean()),
  thinkingLevel: Type.Optional(Type.String()),
});
export const GenerationConfig = Type.Object({
  temperature: Type.Optional(Type.Number()),
  topP: Type.Optional(Type.Number()),
  topK: Type.Optional(Type.Number()),
  maxOutputTokens: Type.Optional(Type.Integer()),
  stopSequences: Type.Optional(Type.Array(Type.String())),
  candidateCount: Type.Optional(Type.Integer()),
  seed: Type.Optional(Type.Integer()),
  presencePenalty: Type.Optional(Type.Number()),
  frequencyPenalty: Type.Optional(Type.Number()),
  responseMimeType: Type.Optional(Type.String()),
  responseSchema: Type.Optional(JsonObject),
  responseJsonSchema: Type.Optional(JsonObject),
  thinkingConfig: Type.Optional(ThinkingConfig),
});
export const GenerateContentRequest = Type.Object({
  contents: Type.Array(Type.Unknown()),
  systemInstruction: Type.Optional(Type.Unknown()),
  tools: Type.Optional(Type.Array(Type.Object({}))),
  toolConfig: Type.Optional(ToolConfig),
  generationConfig: Type.Optional(GenerationConfig),
  /** Some clients repeat the path's model in the body; the path wins. */
  model: Type.Optional(Type.String()),
});
export type GenerateContentRequest = Static<typeof GenerateContentRequest>;

// ---- upstream output (lenient: only what we read) ----------------------------------------------

const Count = Type.Optional(Type.Union([Type.Number(), Type.Null()]));
export const UsageMetadata = Type.Object({
  promptTokenCount: Count,
  candidatesTokenCount: Count,
  totalTokenCount: Count,
  cachedContentTokenCount: Count,
  thoughtsTokenCount: Count,
  toolUsePromptTokenCount: Count,
});
export type UsageMetadata = Static<typeof UsageMetadata>;

export const Candidate = Type.Object({
  content: Type.Optional(Type.Object({ parts: Type.Optional(Type.Array(Type.Object({}))) })),
  finishReason: Type.Optional(Type.String()),
  index: Type.Optional(Type.Integer()),
});
export const GenerateContentResponse = Type.Object({
  candidates: Type.Optional(Type.Array(Candidate)),
  promptFeedback: Type.Optional(Type.Object({ blockReason: Type.Optional(Type.String()) })),
  usageMetadata: Type.Optional(UsageMetadata),
  modelVersion: Type.Optional(Type.String()),
  responseId: Type.Optional(Type.String()),
});
export type GenerateContentResponse = Static<typeof GenerateContentResponse>;

/** `{"error": {"code", "message", "status", "details"}}`: google.rpc.Status in JSON. */
export const ErrorBody = Type.Object({
  error: Type.Object({
    code: Type.Optional(Type.Number()),
    message: Type.Optional(Type.String()),
    status: Type.Optional(Type.String()),
    /** Not Google's: the member a gateway adds for a spent budget (errors.ts). */
    type: Type.Optional(Type.String()),
    details: Type.Optional(Type.Array(Type.Object({}))),
  }),
});
export type ErrorBody = Static<typeof ErrorBody>;

// ---- checking ----------------------------------------------------------------------------------

/** A 400-worthy fault in a client's body: the member at fault and Google's wording of what is wrong. */
export class WireError extends Error {
  constructor(
    readonly path: string,
    detail: string,
  ) {
    super(detail);
  }
}

/** The protobuf type names Google's 400s quote (`Invalid value at 'x' (TYPE_STRING), 5`). */
const PROTO_TYPE: Partial<Record<ValueErrorType, string>> = {
  [ValueErrorType.String]: "TYPE_STRING",
  [ValueErrorType.Number]: "TYPE_FLOAT",
  [ValueErrorType.Integer]: "TYPE_INT32",
  [ValueErrorType.Boolean]: "TYPE_BOOL",
};

/** Google's wording for a bad member: a missing required one, or a value of the wrong type. */
function wording(path: string, error: ValueError): string {
  // A required member that is absent fails its own type check first, with no value.
  if (error.type === ValueErrorType.ObjectRequiredProperty || error.value === undefined) return `* GenerateContentRequest.${path}: ${path.split(/[.[]/).at(-1)} is not specified`;
  if (error.type === ValueErrorType.StringMinLength) return `* GenerateContentRequest.${path}: ${path.split(/[.[]/).at(-1)} cannot be empty`;
  const proto = PROTO_TYPE[error.type];
  if (proto) return `Invalid value at '${path}' (${proto}), ${JSON.stringify(error.value) ?? "undefined"}`;
  if (error.type === ValueErrorType.Array) return `Invalid value at '${path}': expected a list`;
  if (error.type === ValueErrorType.Object) return `Invalid value at '${path}': expected an object`;
  return `Invalid value at '${path}': ${error.message}`;
}

/** Asserts `value` has the schema's shape, or throws a WireError naming the member at fault under `at`. */
export function expectShape<T extends TSchema>(schema: T, value: unknown, at: string): asserts value is Static<T> {
  const check = checkerFor(schema);
  if (check.Check(value)) return;
  const first = check.Errors(value).First();
  if (!first) throw new WireError(at, `Invalid value at '${at}'`);
  const path = joinPointer(at, first.path);
  throw new WireError(path, wording(path, first));
}

/** Checks a part's `thought` flag and `thoughtSignature`, leaving the part typed as the open object it is. */
export function checkPartFlags(part: Json, at: string): void {
  expectShape(PartFlags, part, at);
}

/** Non-throwing check for lenient upstream reading. */
export function matches<T extends TSchema>(schema: T, value: unknown): value is Static<T> {
  return checkerFor(schema).Check(value);
}

// ---- field names -------------------------------------------------------------------------------

/** Members whose values are the caller's own data (schemas, arguments): their keys are never renamed. */
const OPAQUE = new Set(["args", "response", "parameters", "parametersJsonSchema", "responseSchema", "responseJsonSchema", "partMetadata", "labels"]);

/**
 * A client body in lowerCamelCase: `inline_data` -> `inlineData`; when both spellings come, camelCase
 * wins. SDKs send lowerCamelCase already, so a body with no snake_case key is returned as it is.
 */
export function camelCaseKeys(value: unknown): unknown {
  return hasSnakeCaseKey(value) ? camelCased(value) : value;
}

/** Whether any key outside the opaque members holds `_`; walks without allocating. */
function hasSnakeCaseKey(value: unknown): boolean {
  if (Array.isArray(value)) {
    for (const item of value) if (hasSnakeCaseKey(item)) return true;
    return false;
  }
  if (!isObject(value)) return false;
  for (const key in value) {
    if (key.includes("_")) return true;
    if (!OPAQUE.has(key) && hasSnakeCaseKey(value[key])) return true;
  }
  return false;
}

function camelCased(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(camelCased);
  if (!isObject(value)) return value;
  const out: Json = {};
  for (const [key, inner] of Object.entries(value)) {
    const name = key.includes("_") ? key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase()) : key;
    if (name !== key && name in out) continue;
    out[name] = OPAQUE.has(name) ? inner : camelCased(inner);
  }
  return out;
}

/** A repeated field given as one object (the docs' curl samples do this for `contents` and `parts`) as a list. */
export const listOf = (value: unknown): unknown => (isObject(value) ? [value] : value);

// ---- dropped members -----------------------------------------------------------------------------

/** Why a commonly sent member cannot cross protocols; anything else gets the generic reason. */
const DROP_REASONS: Readonly<Record<string, string>> = {
  safetySettings: "safety settings are Gemini-only",
  cachedContent: "cached content is Gemini-only",
  labels: "labels are Gemini-only",
  serviceTier: "service tiers are Gemini-only",
  responseModalities: "only text output is modelled",
  speechConfig: "only text output is modelled",
  imageConfig: "only text output is modelled",
  mediaResolution: "media resolution is Gemini-only",
  responseLogprobs: "log probabilities are not modelled",
  logprobs: "log probabilities are not modelled",
  videoMetadata: "video is not modelled",
};

/** Drops and notes of one decode, with the reasons above. */
export class DropLog extends SharedDropLog {
  constructor() {
    super(DROP_REASONS);
  }
}
