// The intermediate representation of a request: the modelled subset every protocol decodes into and
// encodes from (shared/design/protocols.md, "What the IR must carry"). Shaped after the Vercel AI SDK's
// provider spec: typed parts, tool results as their own role, JSON arguments kept as text.
//
// Anything a protocol has that is not here cannot cross protocols; an encoder that drops or clamps
// something reports it as a warning, and same-protocol routes never go through the IR at all.

/** Where an image or document's bytes are. */
export type IrMediaSource = { readonly kind: "url"; readonly url: string } | { readonly kind: "base64"; readonly mediaType: string; readonly data: string };

export interface IrTextPart {
  readonly type: "text";
  readonly text: string;
}

export interface IrImagePart {
  readonly type: "image";
  readonly source: IrMediaSource;
}

export interface IrDocumentPart {
  readonly type: "document";
  readonly source: IrMediaSource;
  readonly title?: string;
}

/** Model reasoning ("thinking"). `signature` lets a vendor verify it when echoed back next turn. */
export interface IrReasoningPart {
  readonly type: "reasoning";
  readonly text: string;
  readonly signature?: string;
  /** Opaque redacted reasoning (Anthropic `redacted_thinking.data`): carried only to the same vendor. */
  readonly redactedData?: string;
}

export interface IrToolCallPart {
  readonly type: "tool_call";
  readonly id: string;
  readonly name: string;
  /** The arguments as JSON text, exactly as the model produced them (may be partial JSON nowhere). */
  readonly arguments: string;
}

export interface IrToolResultPart {
  readonly type: "tool_result";
  readonly toolCallId: string;
  readonly content: readonly (IrTextPart | IrImagePart)[];
  readonly isError?: boolean;
}

export type IrUserPart = IrTextPart | IrImagePart | IrDocumentPart;
export type IrAssistantPart = IrTextPart | IrReasoningPart | IrToolCallPart;

export type IrMessage =
  | { readonly role: "user"; readonly content: readonly IrUserPart[] }
  | { readonly role: "assistant"; readonly content: readonly IrAssistantPart[] }
  /** Results of the previous assistant turn's tool calls, in call order. */
  | { readonly role: "tool"; readonly content: readonly IrToolResultPart[] };

export interface IrTool {
  readonly name: string;
  readonly description?: string;
  /** JSON Schema of the arguments object. */
  readonly parameters: Readonly<Record<string, unknown>>;
  readonly strict?: boolean;
}

export type IrToolChoice =
  | { readonly type: "auto" }
  | { readonly type: "none" }
  | { readonly type: "required" }
  | { readonly type: "tool"; readonly name: string };

export type IrResponseFormat =
  | { readonly type: "text" }
  | { readonly type: "json" }
  | { readonly type: "json_schema"; readonly name?: string; readonly description?: string; readonly schema: Readonly<Record<string, unknown>>; readonly strict?: boolean };

/** The largest output-token cap the gateway passes on: a signed 32-bit integer, what vendors' APIs take. */
export const MAX_TOKENS_LIMIT = 2 ** 31 - 1;

/** True for an output-token cap the gateway may send upstream (or none). -5 and 1e300 once went up as they came. */
export const maxTokensValid = (value: number | undefined): boolean => value === undefined || (Number.isInteger(value) && value >= 1 && value <= MAX_TOKENS_LIMIT);

export interface IrSampling {
  readonly temperature?: number;
  readonly topP?: number;
  readonly topK?: number;
  /** Output token cap (OpenAI max_completion_tokens / max_tokens, Anthropic max_tokens). */
  readonly maxTokens?: number;
  readonly stop?: readonly string[];
  readonly seed?: number;
  readonly frequencyPenalty?: number;
  readonly presencePenalty?: number;
}

export interface IrReasoning {
  /** OpenAI-style effort; mapped to a budget where the target takes tokens. */
  readonly effort?: "minimal" | "low" | "medium" | "high";
  /** Anthropic-style budget; mapped to an effort where the target takes words. */
  readonly budgetTokens?: number;
}

export interface IrRequest {
  /** The model the client named: the pool. Egress substitutes the lane's upstream model. */
  readonly model: string;
  /** System / developer instructions, in order. */
  readonly system: readonly IrTextPart[];
  readonly messages: readonly IrMessage[];
  readonly tools: readonly IrTool[];
  readonly toolChoice?: IrToolChoice;
  readonly parallelToolCalls?: boolean;
  readonly sampling: IrSampling;
  readonly responseFormat?: IrResponseFormat;
  readonly reasoning?: IrReasoning;
  readonly stream: boolean;
  /** The client asked for usage in the stream (OpenAI `stream_options.include_usage`). */
  readonly includeUsage?: boolean;
  /** End-user id for the vendor's abuse tracking (OpenAI `user`, Anthropic `metadata.user_id`). */
  readonly user?: string;
}
