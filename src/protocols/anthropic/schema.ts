// TypeBox schemas of the Anthropic Messages wire shapes this adapter reads: the request body a client
// sends, and the message / stream events an upstream returns. Field names follow the official SDK's
// types (@anthropic-ai/sdk resources/messages/messages.d.ts) and the API reference.
//
// Every object is open (extra members allowed): a member the IR does not model is not a client error,
// it is dropped with a warning (DropLog). Unions whose error messages would be useless ("expected union
// value") are discriminated by hand in request.ts; only the members we read are typed here.
import { Type, type Static, type TSchema } from "@sinclair/typebox";
import { checkerFor, joinPointer } from "../checkers.ts";
import { DropLog as SharedDropLog } from "../drop-log.ts";
import { ValueErrorType, type ValueError } from "@sinclair/typebox/errors";

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const Choice = (values: readonly string[], description: string) => Type.Union(values.map((v) => Type.Literal(v)), { description });

// ---- client request ----------------------------------------------------------------------------

export const TextBlock = Type.Object({ type: Type.Literal("text"), text: Type.String() });
/** Any content block before it is told apart by `type`. */
export const BlockHead = Type.Object({ type: Type.String() });
export const ImageBlock = Type.Object({ type: Type.Literal("image"), source: BlockHead });
export const DocumentBlock = Type.Object({ type: Type.Literal("document"), source: BlockHead, title: Type.Optional(Nullable(Type.String())) });
export const Base64Source = Type.Object({ type: Type.Literal("base64"), media_type: Type.String(), data: Type.String() });
export const UrlSource = Type.Object({ type: Type.Literal("url"), url: Type.String() });
/** A document's plain-text source (`media_type: text/plain`). */
export const PlainTextSource = Type.Object({ type: Type.Literal("text"), media_type: Type.String(), data: Type.String() });
export const ToolUseBlock = Type.Object({ type: Type.Literal("tool_use"), id: Type.String(), name: Type.String(), input: Type.Object({}) });
export const ToolResultBlock = Type.Object({
  type: Type.Literal("tool_result"),
  tool_use_id: Type.String(),
  /** A string or a list of blocks; told apart in request.ts. */
  content: Type.Optional(Type.Unknown()),
  is_error: Type.Optional(Type.Boolean()),
});
export const ThinkingBlock = Type.Object({ type: Type.Literal("thinking"), thinking: Type.String(), signature: Type.String() });
export const RedactedThinkingBlock = Type.Object({ type: Type.Literal("redacted_thinking"), data: Type.String() });

export const MessageParam = Type.Object({
  role: Type.String(),
  /** A string or a list of blocks; told apart in request.ts. */
  content: Type.Unknown(),
});

/** A client tool. Server tools (web search, code execution, ...) carry another `type` and are dropped. */
export const ToolParam = Type.Object({
  name: Type.String(),
  description: Type.Optional(Type.String()),
  input_schema: Type.Object({}),
  strict: Type.Optional(Type.Boolean()),
  type: Type.Optional(Nullable(Type.Literal("custom"))),
});

export const ToolChoiceParam = Type.Object({
  type: Choice(["auto", "any", "tool", "none"], "'auto', 'any', 'tool' or 'none'"),
  name: Type.Optional(Type.String()),
  disable_parallel_tool_use: Type.Optional(Type.Boolean()),
});

export const ThinkingParam = Type.Object({ type: Type.String(), budget_tokens: Type.Optional(Type.Integer()) });

export const OutputConfigParam = Type.Object({
  effort: Type.Optional(Nullable(Type.String())),
  format: Type.Optional(Nullable(Type.Object({ type: Type.Literal("json_schema"), schema: Type.Object({}) }))),
});

export const RequestBody = Type.Object({
  model: Type.String({ minLength: 1 }),
  messages: Type.Array(MessageParam),
  max_tokens: Type.Integer({ minimum: 0 }),
  /** A string or a list of text blocks; told apart in request.ts. */
  system: Type.Optional(Type.Unknown()),
  temperature: Type.Optional(Type.Number()),
  top_p: Type.Optional(Type.Number()),
  top_k: Type.Optional(Type.Integer()),
  stop_sequences: Type.Optional(Type.Array(Type.String())),
  stream: Type.Optional(Type.Boolean()),
  metadata: Type.Optional(Type.Object({ user_id: Type.Optional(Nullable(Type.String())) })),
  tools: Type.Optional(Type.Array(Type.Object({}))),
  tool_choice: Type.Optional(ToolChoiceParam),
  thinking: Type.Optional(ThinkingParam),
  output_config: Type.Optional(OutputConfigParam),
});
export type RequestBody = Static<typeof RequestBody>;

// ---- upstream output (lenient: only what we read) ----------------------------------------------

const Count = Type.Optional(Nullable(Type.Number()));
export const WireUsage = Type.Object({
  input_tokens: Count,
  output_tokens: Count,
  cache_creation_input_tokens: Count,
  cache_read_input_tokens: Count,
  output_tokens_details: Type.Optional(Nullable(Type.Object({ thinking_tokens: Count }))),
});
export type WireUsage = Static<typeof WireUsage>;

export const MessageBody = Type.Object({
  id: Type.String(),
  model: Type.String(),
  content: Type.Array(BlockHead),
  stop_reason: Type.Optional(Nullable(Type.String())),
  stop_sequence: Type.Optional(Nullable(Type.String())),
  usage: WireUsage,
});

export const MessageStartEvent = Type.Object({
  message: Type.Object({ id: Type.String(), model: Type.String(), usage: Type.Optional(WireUsage) }),
});
export const ContentBlockStartEvent = Type.Object({ index: Type.Integer(), content_block: BlockHead });
export const ContentBlockDeltaEvent = Type.Object({ index: Type.Integer(), delta: BlockHead });
export const ContentBlockStopEvent = Type.Object({ index: Type.Integer() });
export const MessageDeltaEvent = Type.Object({
  delta: Type.Object({ stop_reason: Type.Optional(Nullable(Type.String())), stop_sequence: Type.Optional(Nullable(Type.String())) }),
  usage: Type.Optional(WireUsage),
});
/** `{"type":"error","error":{"type","message"}}`: an error body, and the data of an in-stream `error` event. */
export const ErrorBody = Type.Object({
  error: Type.Object({ type: Type.String(), message: Type.String(), details: Type.Optional(Nullable(Type.Object({ error_code: Type.Optional(Type.String()) }))) }),
});

/** A thinking block as content_block_start opens it (its signature comes later, in a signature_delta). */
export const ThinkingBlockStart = Type.Object({ type: Type.Literal("thinking"), thinking: Type.String(), signature: Type.Optional(Type.String()) });
export const TextDelta = Type.Object({ text: Type.String() });
export const InputJsonDelta = Type.Object({ partial_json: Type.String() });
export const ThinkingDelta = Type.Object({ thinking: Type.String() });
export const SignatureDelta = Type.Object({ signature: Type.String() });

// ---- checking ----------------------------------------------------------------------------------

/** A 400-worthy fault in a client's body: the member at fault and what is wrong, as Anthropic words it. */
export class WireError extends Error {
  constructor(
    readonly path: string,
    readonly detail: string,
  ) {
    super(path === "" ? detail : `${path}: ${detail}`);
  }
}

/** Pydantic's wording, which is what Anthropic's own 400s say (`max_tokens: Field required`). */
function wording(error: ValueError): string {
  const schema = error.schema as TSchema & { description?: string; const?: unknown; minimum?: number };
  switch (error.type) {
    case ValueErrorType.ObjectRequiredProperty:
      return "Field required";
    case ValueErrorType.String:
      return "Input should be a valid string";
    case ValueErrorType.Number:
      return "Input should be a valid number";
    case ValueErrorType.Integer:
      return "Input should be a valid integer";
    case ValueErrorType.Boolean:
      return "Input should be a valid boolean";
    case ValueErrorType.Array:
      return "Input should be a valid list";
    case ValueErrorType.Object:
      return "Input should be a valid dictionary";
    case ValueErrorType.Literal:
      return `Input should be ${JSON.stringify(schema.const)}`;
    case ValueErrorType.Union:
      return schema.description ? `Input should be ${schema.description}` : "Input does not match any allowed form";
    case ValueErrorType.IntegerMinimum:
    case ValueErrorType.NumberMinimum:
      return `Input should be greater than or equal to ${schema.minimum}`;
    case ValueErrorType.StringMinLength:
      return "String should have at least 1 character";
    default:
      return error.message;
  }
}

/** Asserts `value` has the schema's shape, or throws a WireError naming the member at fault under `at`. */
export function expectShape<T extends TSchema>(schema: T, value: unknown, at: string): asserts value is Static<T> {
  const check = checkerFor(schema);
  if (check.Check(value)) return;
  const first = check.Errors(value).First();
  throw first ? new WireError(joinPointer(at, first.path), wording(first)) : new WireError(at, "Input is not valid");
}

/** Non-throwing check for lenient upstream reading. */
export function matches<T extends TSchema>(schema: T, value: unknown): value is Static<T> {
  return checkerFor(schema).Check(value);
}

// ---- dropped members -----------------------------------------------------------------------------

/** Why a commonly sent member cannot cross protocols; anything else gets the generic reason. */
const DROP_REASONS: Readonly<Record<string, string>> = {
  cache_control: "prompt caching is Anthropic-only",
  citations: "citations are Anthropic-only",
  container: "containers are Anthropic-only",
  mcp_servers: "MCP servers are Anthropic-only",
  context_management: "context management is Anthropic-only",
  service_tier: "service tiers are Anthropic-only",
};

/** Drops and notes of one decode, with the reasons above. */
export class DropLog extends SharedDropLog {
  constructor() {
    super(DROP_REASONS);
  }
}
