// TypeBox schemas of the Bedrock Converse wire shapes this adapter reads: the request body a client sends
// (POST /model/{modelId}/converse and /converse-stream), the response and stream events an upstream
// returns, and the error body. Member names follow the API reference
// (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html and the types it
// links) and the official SDK's types (@aws-sdk/client-bedrock-runtime dist-types/models/models_0.d.ts).
//
// Converse's content blocks, sources, tool choices and stream deltas are unions written as an object
// with exactly one member set ({"text": ...}, {"toolUse": {...}}); unionMember() tells them apart, so a
// 400 names the member at fault. Blobs (image bytes, redacted reasoning) are base64 strings in JSON.
// Every object is open: a member the IR does not model is dropped with a warning (DropLog).
import { Type, type Static, type TSchema } from "@sinclair/typebox";
import { checkerFor, joinPointer } from "../checkers.ts";
import { DropLog as SharedDropLog } from "../drop-log.ts";
import { ValueErrorType, type ValueError } from "@sinclair/typebox/errors";

/** An enum as AWS's validation message names it: `[user, assistant]`. */
const Choice = (values: readonly string[]) => Type.Union(values.map((v) => Type.Literal(v)), { description: `[${values.join(", ")}]` });
const Any = Type.Unknown();

// ---- client request ----------------------------------------------------------------------------

export const Message = Type.Object({ role: Choice(["user", "assistant"]), content: Type.Array(Type.Object({})) });

export const InferenceConfiguration = Type.Object({
  maxTokens: Type.Optional(Type.Integer({ minimum: 1 })),
  temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  topP: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  stopSequences: Type.Optional(Type.Array(Type.String())),
});

export const ToolConfiguration = Type.Object({ tools: Type.Array(Type.Object({})), toolChoice: Type.Optional(Type.Object({})) });

export const ToolSpecification = Type.Object({
  name: Type.String({ minLength: 1 }),
  description: Type.Optional(Type.String()),
  inputSchema: Type.Object({ json: Type.Object({}) }),
  strict: Type.Optional(Type.Boolean()),
});

export const JsonSchemaDefinition = Type.Object({ schema: Type.String(), name: Type.Optional(Type.String()), description: Type.Optional(Type.String()) });
export const OutputConfig = Type.Object({
  textFormat: Type.Optional(Type.Object({ type: Choice(["json_schema"]), structure: Type.Object({}) })),
  effort: Type.Optional(Type.String()),
});

export const RequestBody = Type.Object({
  messages: Type.Optional(Type.Array(Type.Object({}))),
  system: Type.Optional(Type.Array(Type.Object({}))),
  inferenceConfig: Type.Optional(InferenceConfiguration),
  toolConfig: Type.Optional(ToolConfiguration),
  additionalModelRequestFields: Type.Optional(Any),
  outputConfig: Type.Optional(OutputConfig),
});
export type RequestBody = Static<typeof RequestBody>;

export const TextMember = Type.String();
export const ImageBlock = Type.Object({ format: Type.String(), source: Type.Object({}) });
export const DocumentBlock = Type.Object({ format: Type.Optional(Type.String()), name: Type.String(), source: Type.Object({}) });
export const ToolUseBlock = Type.Object({ toolUseId: Type.String({ minLength: 1 }), name: Type.String({ minLength: 1 }), input: Any });
export const ToolResultBlock = Type.Object({ toolUseId: Type.String({ minLength: 1 }), content: Type.Array(Type.Object({})), status: Type.Optional(Choice(["success", "error"])) });
export const ReasoningTextBlock = Type.Object({ text: Type.String(), signature: Type.Optional(Type.String()) });
export const SpecificToolChoice = Type.Object({ name: Type.String({ minLength: 1 }) });

// ---- upstream output (lenient: only what we read) ----------------------------------------------

const Count = Type.Optional(Type.Number());
export const TokenUsage = Type.Object({ inputTokens: Count, outputTokens: Count, totalTokens: Count, cacheReadInputTokens: Count, cacheWriteInputTokens: Count });
export type TokenUsage = Static<typeof TokenUsage>;

export const ConverseResponse = Type.Object({
  output: Type.Object({ message: Type.Object({ role: Type.Optional(Type.String()), content: Type.Array(Type.Object({})) }) }),
  stopReason: Type.Optional(Type.String()),
  usage: Type.Optional(TokenUsage),
});

export const MessageStartEvent = Type.Object({ role: Type.Optional(Type.String()) });
export const ContentBlockStartEvent = Type.Object({ contentBlockIndex: Type.Integer({ minimum: 0 }), start: Type.Object({}) });
export const ContentBlockDeltaEvent = Type.Object({ contentBlockIndex: Type.Integer({ minimum: 0 }), delta: Type.Object({}) });
export const ContentBlockStopEvent = Type.Object({ contentBlockIndex: Type.Integer({ minimum: 0 }) });
export const MessageStopEvent = Type.Object({ stopReason: Type.Optional(Type.String()) });
export const MetadataEvent = Type.Object({ usage: Type.Optional(TokenUsage) });
export const ToolUseBlockStart = Type.Object({ toolUseId: Type.String(), name: Type.String() });
export const ToolUseBlockDelta = Type.Object({ input: Type.String() });

/** `{"message": ...}`; AWS's own front door (auth, throttling) sometimes writes `Message`. */
/** `type` is not AWS's: the member a gateway adds for a spent budget (errors.ts). */
export const ErrorBody = Type.Object({ message: Type.Optional(Type.String()), Message: Type.Optional(Type.String()), type: Type.Optional(Type.String()) });

// ---- unions ---------------------------------------------------------------------------------------

/**
 * The one member set in a Converse union object, among `known`. An object naming none of them is an
 * unknown kind (`other`, for a warning); one naming two is the caller's error.
 */
export function unionMember<K extends string>(value: object, known: readonly K[], at: string): { member: K; value: unknown } | { other: string } {
  const set = Object.entries(value).filter(([, v]) => v !== undefined && v !== null);
  const hits = set.filter(([k]) => (known as readonly string[]).includes(k));
  if (hits.length > 1) throw new WireError(at, `Member must have exactly one of [${hits.map(([k]) => k).join(", ")}] set`);
  const [hit] = hits;
  if (hit) return { member: hit[0] as K, value: hit[1] };
  return { other: set[0]?.[0] ?? "(empty)" };
}

// ---- checking ----------------------------------------------------------------------------------

/**
 * A 400-worthy fault in a client's body. `path` is the house form (`messages[0].content[1].text`); the
 * message is AWS's validation wording, whose paths count from 1 and mark list items with `member`
 * (`1 validation error detected: Value at 'messages.1.member.role' failed to satisfy constraint: ...`).
 */
export class WireError extends Error {
  constructor(
    readonly path: string,
    readonly detail: string,
  ) {
    super(`1 validation error detected: Value at '${awsPath(path)}' failed to satisfy constraint: ${detail}`);
  }
}

/** `messages[0].content[2].text` -> `messages.1.member.content.3.member.text`. */
const awsPath = (path: string) => path.replace(/\[(\d+)\]/g, (_, i: string) => `.${Number(i) + 1}.member`).replace(/^\./, "");

/** AWS's constraint wording (Smithy validation messages). */
function wording(error: ValueError): string {
  const schema = error.schema as TSchema & { description?: string; minimum?: number; maximum?: number; minLength?: number };
  switch (error.type) {
    case ValueErrorType.ObjectRequiredProperty:
      return "Member must not be null";
    case ValueErrorType.String:
      return "Member must be a string";
    case ValueErrorType.Number:
      return "Member must be a number";
    case ValueErrorType.Integer:
      return "Member must be an integer";
    case ValueErrorType.Boolean:
      return "Member must be a boolean";
    case ValueErrorType.Array:
      return "Member must be a list";
    case ValueErrorType.Object:
      return "Member must be a structure";
    case ValueErrorType.Union:
      return schema.description ? `Member must satisfy enum value set: ${schema.description}` : "Member must be one of the allowed forms";
    case ValueErrorType.IntegerMinimum:
    case ValueErrorType.NumberMinimum:
      return `Member must have value greater than or equal to ${schema.minimum}`;
    case ValueErrorType.NumberMaximum:
      return `Member must have value less than or equal to ${schema.maximum}`;
    case ValueErrorType.StringMinLength:
      return `Member must have length greater than or equal to ${schema.minLength}`;
    default:
      return error.message;
  }
}

/** Asserts `value` has the schema's shape, or throws a WireError naming the member at fault under `at`. */
export function expectShape<T extends TSchema>(schema: T, value: unknown, at: string): asserts value is Static<T> {
  const check = checkerFor(schema);
  if (check.Check(value)) return;
  const first = check.Errors(value).First();
  throw first ? new WireError(joinPointer(at, first.path), wording(first)) : new WireError(at, "Member is not valid");
}

/** Non-throwing check for lenient upstream reading. */
export function matches<T extends TSchema>(schema: T, value: unknown): value is Static<T> {
  return checkerFor(schema).Check(value);
}

export const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

// ---- dropped members -----------------------------------------------------------------------------

/** Why a commonly sent member cannot cross protocols; anything else gets the generic reason. */
const DROP_REASONS: Readonly<Record<string, string>> = {
  guardrailConfig: "guardrails are Bedrock-only",
  performanceConfig: "latency-optimized inference is Bedrock-only",
  serviceTier: "service tiers are Bedrock-only",
  promptVariables: "Prompt management is Bedrock-only",
  requestMetadata: "invocation-log metadata is Bedrock-only",
  additionalModelResponseFieldPaths: "model-specific response fields are Bedrock-only",
  cachePoint: "prompt caching checkpoints are Bedrock-only",
  guardContent: "guardrail content is Bedrock-only",
  citations: "citations are not modelled by the gateway's IR",
  context: "document context for citations is not modelled by the gateway's IR",
};

/** Drops and notes of one decode, with the reasons above. */
export class DropLog extends SharedDropLog {
  constructor() {
    super(DROP_REASONS);
  }
}
