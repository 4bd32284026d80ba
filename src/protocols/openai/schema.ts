// TypeBox schemas of the OpenAI Chat Completions wire shapes this adapter reads. Field names follow the
// official SDK (node_modules/openai/resources/chat/completions/completions.d.ts) and the API reference
// (https://platform.openai.com/docs/api-reference/chat/create, /chat/object, /chat-streaming).
//
// Client input is checked member by member: only the members the IR uses are typed here, every object
// stays open (unknown members are dropped with a warning by request.ts, never a 400). Messages, content
// parts and tools are checked one at a time by their `role` / `type`, so a 400 names the exact member
// (`messages[2].content[1].image_url.url`) instead of "no union variant matched".
// Upstream output is lenient: anything optional, nulls accepted, so a compatible server that omits or
// nulls a member still decodes.
import { Type, type Static, type TSchema } from "@sinclair/typebox";
import type { TypeCheck } from "@sinclair/typebox/compiler";
import { checkers } from "../checkers.ts";
import { ValueErrorType } from "@sinclair/typebox/errors";
import { formatPath } from "../../config/schema-errors.ts";
import { irError, type IrError } from "../../ir/index.ts";

type Json = Record<string, unknown>;
export const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);

/** `T | null`, optional; the description is the error message ("expected <description>"). */
const Nullable = <T extends TSchema>(schema: T, description: string) => Type.Optional(Type.Union([schema, Type.Null()], { description }));
const Content = (description: string) => Type.Union([Type.String(), Type.Array(Type.Unknown())], { description });
const Typed = Type.Object({ type: Type.String() });

// ---- client input (ingress) ----

export const ChatRequestHead = Type.Object({
  model: Type.String({ minLength: 1, description: "a non-empty string" }),
  messages: Type.Array(Type.Object({ role: Type.String() }), { minItems: 1, description: "a non-empty array of messages" }),
  temperature: Nullable(Type.Number(), "number"),
  top_p: Nullable(Type.Number(), "number"),
  frequency_penalty: Nullable(Type.Number(), "number"),
  presence_penalty: Nullable(Type.Number(), "number"),
  max_completion_tokens: Nullable(Type.Integer({ minimum: 1 }), "positive integer"),
  max_tokens: Nullable(Type.Integer({ minimum: 1 }), "positive integer"),
  seed: Nullable(Type.Integer(), "integer"),
  n: Nullable(Type.Integer({ minimum: 1 }), "positive integer"),
  stop: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String()), Type.Null()], { description: "string or array of strings" })),
  stream: Nullable(Type.Boolean(), "boolean"),
  stream_options: Nullable(Type.Object({ include_usage: Type.Optional(Type.Boolean()) }), "object"),
  parallel_tool_calls: Nullable(Type.Boolean(), "boolean"),
  user: Nullable(Type.String(), "string"),
  reasoning_effort: Nullable(Type.String(), "string"),
  response_format: Nullable(Typed, "object with a type"),
  tools: Nullable(Type.Array(Typed), "array of tools"),
  tool_choice: Type.Optional(Type.Union([Type.String(), Typed, Type.Null()], { description: "string or object" })),
});
export type ChatRequestHead = Static<typeof ChatRequestHead> & Record<string, unknown>;

/** system, developer: text only. */
export const InstructionMessage = Type.Object({ role: Type.String(), content: Content("string or array") });
export const UserMessage = Type.Object({ role: Type.Literal("user"), content: Content("string or array") });
export const ToolMessage = Type.Object({ role: Type.Literal("tool"), content: Content("string or array"), tool_call_id: Type.String() });
export const AssistantToolCall = Type.Object({
  id: Type.String(),
  type: Type.String(),
  function: Type.Optional(Type.Object({ name: Type.String(), arguments: Type.String() })),
});
export const AssistantMessage = Type.Object({
  role: Type.Literal("assistant"),
  content: Type.Optional(Type.Union([Type.String(), Type.Array(Type.Unknown()), Type.Null()], { description: "string, array or null" })),
  refusal: Nullable(Type.String(), "string"),
  tool_calls: Nullable(Type.Array(AssistantToolCall), "array of tool calls"),
});
export type AssistantMessage = Static<typeof AssistantMessage>;

export const PartHead = Type.Object({ type: Type.String({ description: "a content part type" }) }, { description: "a content part object" });
export const TextPart = Type.Object({ type: Type.Literal("text"), text: Type.String() });
export const RefusalPart = Type.Object({ type: Type.Literal("refusal"), refusal: Type.String() });
export const ImagePart = Type.Object({
  type: Type.Literal("image_url"),
  image_url: Type.Object({ url: Type.String(), detail: Type.Optional(Type.String()) }),
});
export type ImagePart = Static<typeof ImagePart>;
export const FilePart = Type.Object({
  type: Type.Literal("file"),
  file: Type.Object({ file_data: Type.Optional(Type.String()), file_id: Type.Optional(Type.String()), filename: Type.Optional(Type.String()) }),
});
export type FilePart = Static<typeof FilePart>;

export const FunctionTool = Type.Object({
  type: Type.Literal("function"),
  function: Type.Object({
    name: Type.String({ minLength: 1 }),
    description: Nullable(Type.String(), "string"),
    parameters: Nullable(Type.Record(Type.String(), Type.Unknown()), "JSON Schema object"),
    strict: Nullable(Type.Boolean(), "boolean"),
  }),
});
export type FunctionTool = Static<typeof FunctionTool>;

export const NamedToolChoice = Type.Object({ type: Type.Literal("function"), function: Type.Object({ name: Type.String() }) });
export type NamedToolChoice = Static<typeof NamedToolChoice>;
export const AllowedToolsChoice = Type.Object({
  type: Type.Literal("allowed_tools"),
  allowed_tools: Type.Object({
    mode: Type.Union([Type.Literal("auto"), Type.Literal("required")], { description: "auto or required" }),
    tools: Type.Array(Type.Object({ type: Type.String(), function: Type.Optional(Type.Object({ name: Type.String() })) })),
  }),
});
export type AllowedToolsChoice = Static<typeof AllowedToolsChoice>;

export const JsonSchemaFormat = Type.Object({
  type: Type.Literal("json_schema"),
  json_schema: Type.Object({
    name: Type.String(),
    description: Nullable(Type.String(), "string"),
    schema: Nullable(Type.Record(Type.String(), Type.Unknown()), "JSON Schema object"),
    strict: Nullable(Type.Boolean(), "boolean"),
  }),
});
export type JsonSchemaFormat = Static<typeof JsonSchemaFormat>;

// ---- upstream output (egress), lenient ----

export const WireUsage = Type.Object({
  prompt_tokens: Nullable(Type.Number(), "number"),
  completion_tokens: Nullable(Type.Number(), "number"),
  prompt_tokens_details: Nullable(Type.Object({ cached_tokens: Nullable(Type.Number(), "number"), cache_write_tokens: Nullable(Type.Number(), "number") }), "object"),
  completion_tokens_details: Nullable(Type.Object({ reasoning_tokens: Nullable(Type.Number(), "number") }), "object"),
});
export type WireUsage = Static<typeof WireUsage>;

const LenientToolCall = Type.Object({
  index: Type.Optional(Type.Number()),
  id: Nullable(Type.String(), "string"),
  type: Nullable(Type.String(), "string"),
  function: Nullable(Type.Object({ name: Nullable(Type.String(), "string"), arguments: Nullable(Type.String(), "string") }), "object"),
});
export type LenientToolCall = Static<typeof LenientToolCall>;

/** The members of `message` (whole response) and `delta` (stream chunk) we read; they share a shape. */
const LenientMessage = Type.Object({
  content: Nullable(Type.String(), "string"),
  refusal: Nullable(Type.String(), "string"),
  /** Not OpenAI's own: DeepSeek, vLLM and other compatible servers stream reasoning here. */
  reasoning_content: Nullable(Type.String(), "string"),
  tool_calls: Nullable(Type.Array(LenientToolCall), "array"),
});
export type LenientMessage = Static<typeof LenientMessage>;

export const ChatCompletion = Type.Object({
  id: Nullable(Type.String(), "string"),
  created: Nullable(Type.Number(), "number"),
  model: Nullable(Type.String(), "string"),
  choices: Type.Array(Type.Object({ message: Nullable(LenientMessage, "object"), finish_reason: Nullable(Type.String(), "string") })),
  usage: Nullable(WireUsage, "object"),
});
export type ChatCompletion = Static<typeof ChatCompletion>;

export const ChatCompletionChunk = Type.Object({
  id: Nullable(Type.String(), "string"),
  created: Nullable(Type.Number(), "number"),
  model: Nullable(Type.String(), "string"),
  choices: Nullable(Type.Array(Type.Object({ index: Nullable(Type.Number(), "number"), delta: Nullable(LenientMessage, "object"), finish_reason: Nullable(Type.String(), "string") })), "array"),
  usage: Nullable(WireUsage, "object"),
});
export type ChatCompletionChunk = Static<typeof ChatCompletionChunk>;

/** `{"error": {...}}`: OpenAI's error body, also what compatible servers send in-stream. */
export const WireErrorBody = Type.Object({
  error: Type.Object({
    message: Nullable(Type.String(), "string"),
    type: Nullable(Type.String(), "string"),
    param: Nullable(Type.String(), "string"),
    // Some compatible servers (vLLM) put the HTTP status number here.
    code: Nullable(Type.Union([Type.String(), Type.Number()]), "string or number"),
  }),
});
export type WireErrorBody = Static<typeof WireErrorBody>;

// ---- compiled checkers ----
// Compiled on first use (protocols/checkers.ts): these run on every cross-protocol request and every upstream chunk.

export const check = checkers({
  head: ChatRequestHead,
  instruction: InstructionMessage,
  user: UserMessage,
  tool: ToolMessage,
  assistant: AssistantMessage,
  partHead: PartHead,
  text: TextPart,
  refusal: RefusalPart,
  image: ImagePart,
  file: FilePart,
  functionTool: FunctionTool,
  namedChoice: NamedToolChoice,
  allowedTools: AllowedToolsChoice,
  jsonSchema: JsonSchemaFormat,
  completion: ChatCompletion,
  chunk: ChatCompletionChunk,
  errorBody: WireErrorBody,
});

/** Any compiled checker (narrowed to what firstProblem calls, so checkers of different schemas mix). */
export type Checker = Pick<TypeCheck<TSchema>, "Check" | "Errors">;

/**
 * The first problem with `value`, as `messages[2].content: expected string or array`, or undefined when
 * it passes. `pointer` is where `value` sits in the body (JSON pointer, "" for the root).
 */
export function firstProblem(checker: Checker, value: unknown, pointer: string): { param: string; message: string } | undefined {
  if (checker.Check(value)) return undefined;
  const error = checker.Errors(value).First();
  const param = formatPath(pointer + (error?.path ?? ""));
  if (!error) return { param, message: `${param}: invalid value` };
  const description = (error.schema as { description?: string }).description;
  let what: string;
  if (error.type === ValueErrorType.ObjectRequiredProperty) what = description ? `required member missing (expected ${description})` : "required member missing";
  else if (description) what = `expected ${description}`;
  else what = error.message.charAt(0).toLowerCase() + error.message.slice(1);
  return { param, message: `${param}: ${what}` };
}

// ---- client input: faults and unmodelled members ----

/** A caller fault found deep in the body; decodeRequest turns it into a 400 naming `param`. */
export class CallerFault extends Error {
  constructor(readonly param: string, message: string) {
    super(message);
  }
}
/** A body decoded with its warnings, or the caller's 400 when the decoder threw a CallerFault. */
export function decodeCatching<T>(decode: (warn: (warning: string) => void) => T): { ok: true; value: T; warnings: string[] } | { ok: false; error: IrError } {
  const warnings: string[] = [];
  try {
    return { ok: true, value: decode((w) => warnings.push(w)), warnings };
  } catch (error) {
    if (error instanceof CallerFault) return { ok: false, error: irError("invalid_request", error.message, { param: error.param }) };
    throw error;
  }
}

/** Throws a fault at `pointer` (JSON pointer), message `<path>: <what>`. */
export function fault(pointer: string, what: string): never {
  const param = formatPath(pointer);
  throw new CallerFault(param, `${param}: ${what}`);
}
/** Throws the first problem of `value` against `checker`, if any. */
export function ensure(checker: Checker, value: unknown, pointer: string): void {
  const problem = firstProblem(checker, value, pointer);
  if (problem) throw new CallerFault(problem.param, problem.message);
}

/** Reports every member of `object` outside `known` (null counts as absent: it asks for nothing). */
export function warnUnmodelled(object: Json, known: ReadonlySet<string>, pointer: string, warn: (warning: string) => void): void {
  // Keys, not entries: a pair array per member of every object of every translated request added up.
  for (const key in object) {
    if (!known.has(key) && Object.hasOwn(object, key)) {
      const value = object[key];
      if (value !== null && value !== undefined) warn(`${formatPath(`${pointer}/${key}`)}: not modelled across protocols; dropped`);
    }
  }
}

const keys = (...names: string[]): ReadonlySet<string> => new Set(names);
/** The members the IR models, per wire object; anything else is dropped with a warning. */
export const MODELLED = {
  top: keys(
    "model", "messages", "temperature", "top_p", "frequency_penalty", "presence_penalty", "max_completion_tokens", "max_tokens", "seed",
    "n", "stop", "stream", "stream_options", "parallel_tool_calls", "user", "reasoning_effort", "response_format", "tools", "tool_choice", "modalities",
  ),
  streamOptions: keys("include_usage"),
  message: keys("role", "content"),
  assistant: keys("role", "content", "refusal", "tool_calls"),
  tool: keys("role", "content", "tool_call_id"),
  function: keys("name", "description", "parameters", "strict"),
  part: { text: keys("type", "text"), refusal: keys("type", "refusal"), image_url: keys("type", "image_url"), file: keys("type", "file") } as Record<string, ReadonlySet<string>>,
} as const;

/** Content part checkers by `type` (input_audio is dropped unread, so it has none), each compiled on first use. */
export const PART_CHECKS: Readonly<Record<string, Checker | undefined>> = checkers({ text: TextPart, refusal: RefusalPart, image_url: ImagePart, file: FilePart });
