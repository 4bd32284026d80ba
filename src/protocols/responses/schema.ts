// TypeBox schemas of the OpenAI Responses wire shapes this adapter reads. Field names follow the official
// SDK (node_modules/openai/resources/responses/responses.d.ts) and the API reference
// (https://platform.openai.com/docs/api-reference/responses/create, /responses/object,
// /responses-streaming).
//
// Client input is checked item by item and part by part (told apart by `type`, or `role` for the short
// message form), so a 400 names the exact member (`input[2].content[1].image_url`). Every object stays
// open: unknown members are dropped with a warning by request.ts, never a 400. Upstream output is
// lenient: optional and nullable everywhere, so a compatible server that omits a member still decodes.
// The fault and warning helpers are Chat Completions' own: Responses speaks OpenAI's error shape.
import { Type, type Static, type TSchema } from "@sinclair/typebox";
import { checkers } from "../checkers.ts";

import type { Checker } from "../openai/schema.ts";

export { CallerFault, decodeCatching, ensure, fault, isObject, warnUnmodelled } from "../openai/schema.ts";

/** `T | null`, optional; the description is the error message ("expected <description>"). */
const Nullable = <T extends TSchema>(schema: T, description: string) => Type.Optional(Type.Union([schema, Type.Null()], { description }));
const JsonObject = Type.Record(Type.String(), Type.Unknown());
const Typed = Type.Object({ type: Type.String() });

// ---- client input (ingress) ----

export const RequestHead = Type.Object({
  model: Type.String({ minLength: 1, description: "a non-empty string" }),
  input: Type.Optional(Type.Union([Type.String(), Type.Array(Type.Unknown())], { description: "string or array of input items" })),
  instructions: Nullable(Type.String(), "string"),
  max_output_tokens: Nullable(Type.Integer({ minimum: 16 }), "integer of at least 16"),
  temperature: Nullable(Type.Number(), "number"),
  top_p: Nullable(Type.Number(), "number"),
  stream: Nullable(Type.Boolean(), "boolean"),
  store: Nullable(Type.Boolean(), "boolean"),
  background: Nullable(Type.Boolean(), "boolean"),
  parallel_tool_calls: Nullable(Type.Boolean(), "boolean"),
  previous_response_id: Nullable(Type.String(), "string"),
  user: Nullable(Type.String(), "string"),
  safety_identifier: Nullable(Type.String(), "string"),
  metadata: Nullable(Type.Record(Type.String(), Type.String()), "object of strings"),
  tools: Nullable(Type.Array(Typed), "array of tools"),
  tool_choice: Type.Optional(Type.Union([Type.String(), Typed, Type.Null()], { description: "string or object" })),
  text: Nullable(Type.Object({ format: Nullable(Typed, "object with a type"), verbosity: Nullable(Type.String(), "string") }), "object"),
  reasoning: Nullable(Type.Object({ effort: Nullable(Type.String(), "string"), summary: Nullable(Type.String(), "string"), generate_summary: Nullable(Type.String(), "string") }), "object"),
});
export type RequestHead = Static<typeof RequestHead> & Record<string, unknown>;

/** Any input item: `type` names it, except the short message form, which has only `role`. */
export const ItemHead = Type.Object({ type: Type.Optional(Type.String()), role: Type.Optional(Type.String()) }, { description: "an input item object" });
export const MessageItem = Type.Object({
  role: Type.String(),
  content: Type.Union([Type.String(), Type.Array(Type.Unknown())], { description: "string or array of content parts" }),
});
export const FunctionCallItem = Type.Object({ type: Type.Literal("function_call"), call_id: Type.String(), name: Type.String(), arguments: Type.String() });
export type FunctionCallItem = Static<typeof FunctionCallItem>;
export const FunctionCallOutputItem = Type.Object({
  type: Type.Literal("function_call_output"),
  call_id: Type.String(),
  output: Type.Union([Type.String(), Type.Array(Type.Unknown())], { description: "string or array of content parts" }),
});
const SummaryText = Type.Object({ type: Type.String(), text: Type.String() });
export const ReasoningItem = Type.Object({
  type: Type.Literal("reasoning"),
  summary: Type.Array(SummaryText),
  content: Nullable(Type.Array(SummaryText), "array of reasoning_text parts"),
  encrypted_content: Nullable(Type.String(), "string"),
});
export type ReasoningItem = Static<typeof ReasoningItem>;

export const PartHead = Type.Object({ type: Type.String({ description: "a content part type" }) }, { description: "a content part object" });
export const InputText = Type.Object({ type: Type.Literal("input_text"), text: Type.String() });
export const OutputText = Type.Object({ type: Type.Literal("output_text"), text: Type.String(), annotations: Type.Optional(Type.Array(Type.Unknown())) });
export const Refusal = Type.Object({ type: Type.Literal("refusal"), refusal: Type.String() });
export const InputImage = Type.Object({ type: Type.Literal("input_image"), image_url: Nullable(Type.String(), "string"), file_id: Nullable(Type.String(), "string"), detail: Nullable(Type.String(), "string") });
export type InputImage = Static<typeof InputImage>;
export const InputFile = Type.Object({
  type: Type.Literal("input_file"),
  file_data: Nullable(Type.String(), "string"),
  file_url: Nullable(Type.String(), "string"),
  file_id: Nullable(Type.String(), "string"),
  filename: Nullable(Type.String(), "string"),
});
export type InputFile = Static<typeof InputFile>;

export const FunctionTool = Type.Object({
  type: Type.Literal("function"),
  name: Type.String({ minLength: 1 }),
  description: Nullable(Type.String(), "string"),
  parameters: Nullable(JsonObject, "JSON Schema object"),
  strict: Nullable(Type.Boolean(), "boolean"),
});
export type FunctionTool = Static<typeof FunctionTool>;
export const FunctionChoice = Type.Object({ type: Type.Literal("function"), name: Type.String() });
export const AllowedToolsChoice = Type.Object({
  type: Type.Literal("allowed_tools"),
  mode: Type.Union([Type.Literal("auto"), Type.Literal("required")], { description: "auto or required" }),
  tools: Type.Array(Type.Object({ type: Type.String(), name: Type.Optional(Type.String()) })),
});
export type AllowedToolsChoice = Static<typeof AllowedToolsChoice>;
export const JsonSchemaFormat = Type.Object({
  type: Type.Literal("json_schema"),
  name: Type.String(),
  schema: JsonObject,
  description: Nullable(Type.String(), "string"),
  strict: Nullable(Type.Boolean(), "boolean"),
});
export type JsonSchemaFormat = Static<typeof JsonSchemaFormat>;

// ---- upstream output (egress), lenient ----

const Count = Nullable(Type.Number(), "number");
export const WireUsage = Type.Object({
  input_tokens: Count,
  input_tokens_details: Nullable(Type.Object({ cached_tokens: Count, cache_write_tokens: Count }), "object"),
  output_tokens: Count,
  output_tokens_details: Nullable(Type.Object({ reasoning_tokens: Count }), "object"),
});
export type WireUsage = Static<typeof WireUsage>;

/** An output item before it is told apart by `type`; the members of each kind are read leniently. */
export const OutputItem = Type.Object({
  type: Type.String(),
  id: Nullable(Type.String(), "string"),
  /** message */
  content: Nullable(Type.Array(Type.Object({ type: Type.String(), text: Nullable(Type.String(), "string"), refusal: Nullable(Type.String(), "string") })), "array"),
  /** function_call */
  call_id: Nullable(Type.String(), "string"),
  name: Nullable(Type.String(), "string"),
  arguments: Nullable(Type.String(), "string"),
  /** reasoning */
  summary: Nullable(Type.Array(Type.Object({ text: Nullable(Type.String(), "string") })), "array"),
  encrypted_content: Nullable(Type.String(), "string"),
});
export type OutputItem = Static<typeof OutputItem>;

/** The `response` object: a whole answer, and the payload of the lifecycle stream events. */
export const ResponseBody = Type.Object({
  id: Nullable(Type.String(), "string"),
  object: Nullable(Type.String(), "string"),
  created_at: Nullable(Type.Number(), "number"),
  model: Nullable(Type.String(), "string"),
  status: Nullable(Type.String(), "string"),
  output: Nullable(Type.Array(OutputItem), "array"),
  error: Nullable(Type.Object({ code: Nullable(Type.String(), "string"), message: Nullable(Type.String(), "string") }), "object"),
  incomplete_details: Nullable(Type.Object({ reason: Nullable(Type.String(), "string") }), "object"),
  usage: Nullable(WireUsage, "object"),
});
export type ResponseBody = Static<typeof ResponseBody>;

/** Every stream event's data: `type` names it; the members each type carries are read leniently. */
export const StreamEvent = Type.Object({
  type: Type.String(),
  response: Nullable(ResponseBody, "object"),
  item: Nullable(OutputItem, "object"),
  item_id: Nullable(Type.String(), "string"),
  output_index: Nullable(Type.Number(), "number"),
  content_index: Nullable(Type.Number(), "number"),
  summary_index: Nullable(Type.Number(), "number"),
  part: Nullable(Typed, "object"),
  delta: Nullable(Type.String(), "string"),
  /** The whole text or arguments, on the `.done` events. */
  text: Nullable(Type.String(), "string"),
  arguments: Nullable(Type.String(), "string"),
  /** The `error` event: its members sit at the top level. */
  code: Nullable(Type.String(), "string"),
  message: Nullable(Type.String(), "string"),
  param: Nullable(Type.String(), "string"),
});
export type StreamEvent = Static<typeof StreamEvent>;

// ---- compiled checkers ----
// Compiled on first use (protocols/checkers.ts): these run on every cross-protocol request and every upstream event.

export const check = checkers({
  head: RequestHead,
  itemHead: ItemHead,
  message: MessageItem,
  functionCall: FunctionCallItem,
  functionCallOutput: FunctionCallOutputItem,
  reasoning: ReasoningItem,
  partHead: PartHead,
  inputText: InputText,
  outputText: OutputText,
  refusal: Refusal,
  inputImage: InputImage,
  inputFile: InputFile,
  functionTool: FunctionTool,
  functionChoice: FunctionChoice,
  allowedTools: AllowedToolsChoice,
  jsonSchema: JsonSchemaFormat,
  response: ResponseBody,
  event: StreamEvent,
});

const keys = (...names: string[]): ReadonlySet<string> => new Set(names);
/**
 * The members the IR models, per wire object; anything else is dropped with a warning. Item `id` and
 * `status` are the API's own bookkeeping of earlier output, which a replayed conversation does not need.
 */
export const MODELLED = {
  top: keys(
    "model", "input", "instructions", "max_output_tokens", "temperature", "top_p", "stream", "store", "background", "parallel_tool_calls",
    "previous_response_id", "conversation", "prompt", "user", "safety_identifier", "metadata", "tools", "tool_choice", "text", "reasoning",
  ),
  text: keys("format"),
  reasoning: keys("effort"),
  message: keys("type", "role", "content", "id", "status"),
  functionCall: keys("type", "call_id", "name", "arguments", "id", "status"),
  functionCallOutput: keys("type", "call_id", "output", "id", "status"),
  reasoningItem: keys("type", "summary", "content", "encrypted_content", "id", "status"),
  function: keys("type", "name", "description", "parameters", "strict"),
  part: {
    input_text: keys("type", "text"),
    output_text: keys("type", "text", "annotations", "logprobs"),
    refusal: keys("type", "refusal"),
    input_image: keys("type", "image_url", "file_id", "detail"),
    input_file: keys("type", "file_data", "file_url", "file_id", "filename"),
  } as Record<string, ReadonlySet<string>>,
} as const;

/** Content part checkers by `type`, each compiled on first use (reading a `check` member compiles it). */
export const PART_CHECKS: Readonly<Record<string, Checker | undefined>> = checkers({
  input_text: InputText,
  output_text: OutputText,
  refusal: Refusal,
  input_image: InputImage,
  input_file: InputFile,
});
