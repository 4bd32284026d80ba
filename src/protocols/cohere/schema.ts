// TypeBox schemas of the Cohere v2 Chat wire shapes this adapter reads: the request body a client sends
// (POST /v2/chat), the chat response and the stream events an upstream returns, and the error body.
// Member names follow the API reference (https://docs.cohere.com/reference/chat, .../chat-stream,
// .../errors) and the official SDK's wire serializers (cohere-ai serialization/types/*.d.ts).
//
// Every object is open: a member the IR does not model is not a client error, it is dropped with a
// warning (DropLog). Messages and content blocks are told apart by `role` / `type` in request.ts, so a
// 400 names the exact member at fault. Upstream output is read leniently: optional, nulls accepted.
import { Kind, Type, type Static, type TProperties, type TSchema } from "@sinclair/typebox";
import { checkerFor, joinPointer } from "../checkers.ts";
import { DropLog as SharedDropLog } from "../drop-log.ts";
import { ValueErrorType, type ValueError } from "@sinclair/typebox/errors";

/** Optional, and null counts as absent (the Python SDK may send None members as null). */
const Opt = <T extends TSchema>(schema: T) => Type.Optional(Type.Union([schema, Type.Null()]));
const Choice = (values: readonly string[]) => Type.Union(values.map((v) => Type.Literal(v)), { description: values.map((v) => `'${v}'`).join(", ") });
/** A string, or a list of blocks told apart in request.ts. */
const Content = Type.Union([Type.String(), Type.Array(Type.Unknown())], { description: "a string or a list of content blocks" });

// ---- client request ----------------------------------------------------------------------------

export const RequestBody = Type.Object({
  model: Type.String({ minLength: 1 }),
  messages: Type.Array(Type.Object({ role: Type.String() })),
  stream: Opt(Type.Boolean()),
  tools: Opt(Type.Array(Type.Object({}))),
  strict_tools: Opt(Type.Boolean()),
  tool_choice: Opt(Choice(["REQUIRED", "NONE"])),
  max_tokens: Opt(Type.Integer()),
  stop_sequences: Opt(Type.Array(Type.String())),
  temperature: Opt(Type.Number()),
  seed: Opt(Type.Integer()),
  frequency_penalty: Opt(Type.Number()),
  presence_penalty: Opt(Type.Number()),
  k: Opt(Type.Integer()),
  p: Opt(Type.Number()),
  response_format: Opt(Type.Object({ type: Choice(["text", "json_object"]), json_schema: Opt(Type.Object({})) })),
  thinking: Opt(Type.Object({ type: Choice(["enabled", "disabled"]), token_budget: Opt(Type.Integer({ minimum: 1 })) })),
});
export type RequestBody = Static<typeof RequestBody>;

export const SystemMessage = Type.Object({ role: Type.Literal("system"), content: Content });
export const UserMessage = Type.Object({ role: Type.Literal("user"), content: Content });
export const AssistantMessage = Type.Object({
  role: Type.Literal("assistant"),
  content: Opt(Content),
  tool_plan: Opt(Type.String()),
  tool_calls: Opt(Type.Array(Type.Object({}))),
});
export const ToolMessage = Type.Object({ role: Type.Literal("tool"), tool_call_id: Type.String(), content: Content });

/** Any content block before it is told apart by `type`. */
export const BlockHead = Type.Object({ type: Type.String() });
export const TextBlock = Type.Object({ type: Type.Literal("text"), text: Type.String() });
export const ThinkingBlock = Type.Object({ type: Type.Literal("thinking"), thinking: Type.String() });
export const ImageBlock = Type.Object({ type: Type.Literal("image_url"), image_url: Type.Object({ url: Type.String(), detail: Opt(Type.String()) }) });
/** `data` is an object in the reference; the tool-use guide sends JSON text, so both are read. */
export const DocumentBlock = Type.Object({ type: Type.Literal("document"), document: Type.Object({ data: Type.Unknown(), id: Opt(Type.String()) }) });

export const ToolCall = Type.Object({
  id: Type.String(),
  type: Opt(Type.Literal("function")),
  function: Type.Object({ name: Type.String(), arguments: Opt(Type.String()) }),
});
export type ToolCall = Static<typeof ToolCall>;
export const ToolFunction = Type.Object({ name: Type.String(), description: Opt(Type.String()), parameters: Type.Object({}) });
export const ToolDefinition = Type.Object({ type: Type.Literal("function"), function: ToolFunction });

// ---- upstream output (lenient: only what we read) ----------------------------------------------

const Count = Opt(Type.Number());
export const WireUsage = Type.Object({
  billed_units: Opt(Type.Object({ input_tokens: Count, output_tokens: Count })),
  tokens: Opt(Type.Object({ input_tokens: Count, output_tokens: Count })),
  cached_tokens: Count,
});
export type WireUsage = Static<typeof WireUsage>;

export const ResponseMessage = Type.Object({
  role: Opt(Type.String()),
  content: Opt(Type.Array(BlockHead)),
  tool_plan: Opt(Type.String()),
  tool_calls: Opt(Type.Array(ToolCall)),
});
export const ChatResponse = Type.Object({ id: Type.String(), finish_reason: Opt(Type.String()), message: ResponseMessage, usage: Opt(WireUsage) });

/** A stream event's `delta.message`: what the event changes. Every event also names its `type`. */
const Delta = <T extends TProperties>(message: T) => Type.Object({ message: Type.Object(message) });
const Index = Type.Integer();
export const MessageStartEvent = Type.Object({ id: Opt(Type.String()) });
export const ContentStartEvent = Type.Object({ index: Index, delta: Delta({ content: Type.Object({ type: Opt(Type.String()), text: Opt(Type.String()), thinking: Opt(Type.String()) }) }) });
export const ContentDeltaEvent = Type.Object({ index: Index, delta: Delta({ content: Type.Object({ text: Opt(Type.String()), thinking: Opt(Type.String()) }) }) });
/** content-end, tool-call-end. */
export const IndexedEvent = Type.Object({ index: Index });
export const ToolPlanDeltaEvent = Type.Object({ delta: Delta({ tool_plan: Type.String() }) });
export const ToolCallStartEvent = Type.Object({ index: Index, delta: Delta({ tool_calls: Type.Object({ id: Type.String(), function: Type.Object({ name: Type.String(), arguments: Opt(Type.String()) }) }) }) });
export const ToolCallDeltaEvent = Type.Object({ index: Index, delta: Delta({ tool_calls: Type.Object({ function: Type.Object({ arguments: Type.String() }) }) }) });
export const MessageEndEvent = Type.Object({
  delta: Opt(Type.Object({ finish_reason: Opt(Type.String()), usage: Opt(WireUsage), error: Opt(Type.String()) })),
});

/** `{"message": "..."}` (and an `id`): every error status in the reference has this body. */
/** `type` is not Cohere's: the member a gateway adds for a spent budget (errors.ts). */
export const ErrorBody = Type.Object({ message: Type.String(), id: Opt(Type.String()), type: Opt(Type.String()) });

// ---- checking ----------------------------------------------------------------------------------

/** A 400-worthy fault in a client's body: the member at fault and what is wrong with it. */
export class WireError extends Error {
  constructor(
    readonly path: string,
    readonly detail: string,
  ) {
    super(path === "" ? detail : `${path}: ${detail}`);
  }
}

function wording(error: ValueError): string {
  const schema = error.schema as TSchema & { description?: string; const?: unknown; minimum?: number };
  switch (error.type) {
    case ValueErrorType.ObjectRequiredProperty:
      return "required member missing";
    case ValueErrorType.String:
      return "expected a string";
    case ValueErrorType.Number:
      return "expected a number";
    case ValueErrorType.Integer:
      return "expected an integer";
    case ValueErrorType.Boolean:
      return "expected a boolean";
    case ValueErrorType.Array:
      return "expected a list";
    case ValueErrorType.Object:
      return "expected an object";
    case ValueErrorType.Literal:
      return `expected ${JSON.stringify(schema.const)}`;
    case ValueErrorType.Union:
      return schema.description ? `expected ${schema.description}` : "no allowed form matches";
    case ValueErrorType.IntegerMinimum:
    case ValueErrorType.NumberMinimum:
      return `must be at least ${schema.minimum}`;
    case ValueErrorType.StringMinLength:
      return "must not be empty";
    default:
      return error.message;
  }
}

/**
 * The first fault of `value` against `schema`. A value that fails an Opt(...) member is not null, so
 * the fault is looked for inside the non-null form, where it has a useful path and wording.
 */
function firstFault(schema: TSchema, value: unknown, at: string): WireError {
  const first = checkerFor(schema).Errors(value).First();
  if (!first) return new WireError(at, "invalid value");
  const variants = (first.schema as { anyOf?: TSchema[] }).anyOf;
  const nonNull = variants?.length === 2 && variants.some((v) => v[Kind] === "Null") ? variants.find((v) => v[Kind] !== "Null") : undefined;
  if (first.type === ValueErrorType.Union && nonNull) return firstFault(nonNull, first.value, joinPointer(at, first.path));
  return new WireError(joinPointer(at, first.path), wording(first));
}

/** Asserts `value` has the schema's shape, or throws a WireError naming the member at fault under `at`. */
export function expectShape<T extends TSchema>(schema: T, value: unknown, at: string): asserts value is Static<T> {
  if (!checkerFor(schema).Check(value)) throw firstFault(schema, value, at);
}

/** Non-throwing check for lenient upstream reading. */
export function matches<T extends TSchema>(schema: T, value: unknown): value is Static<T> {
  return checkerFor(schema).Check(value);
}

// ---- dropped members -----------------------------------------------------------------------------

/** Why a commonly sent member cannot cross protocols; anything else gets the generic reason. */
const DROP_REASONS: Readonly<Record<string, string>> = {
  documents: "Cohere's grounding documents have no place in the IR",
  citation_options: "citations are Cohere-only",
  citations: "citations are Cohere-only",
  safety_mode: "safety modes are Cohere-only",
  logprobs: "log probabilities are not modelled by the gateway's IR",
  priority: "request priority is Cohere-only",
};

/** Drops and notes of one decode, with the reasons above. */
export class DropLog extends SharedDropLog {
  constructor() {
    super(DROP_REASONS);
  }
}
