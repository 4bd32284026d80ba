// Bedrock ConverseResponse <-> IR response, plus what the request and stream codecs share with it: the
// assistant content blocks, the stopReason table and the usage split.
// Response: {output: {message: {role, content}}, stopReason, usage, metrics: {latencyMs}, ...}
// (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html#API_runtime_Converse_ResponseSyntax).
import type { Decoded, WarningSink } from "../types.ts";
import { irError } from "../../ir/errors.ts";
import { ZERO_USAGE, inputTotal, mergeUsage, type IrFinishReason, type IrFinishUnified, type IrResponse, type IrUsage } from "../../ir/response.ts";
import type { IrAssistantPart } from "../../ir/request.ts";
import { ConverseResponse, DropLog, ReasoningTextBlock, TextMember, ToolUseBlock, WireError, expectShape, isObject, unionMember, type TokenUsage } from "./schema.ts";

// ---- stop reasons ---------------------------------------------------------------------------------

/** Every stopReason the SDK's StopReason enum lists, with its unified meaning. */
const STOP_REASONS: Readonly<Record<string, IrFinishUnified>> = {
  end_turn: "stop",
  stop_sequence: "stop",
  max_tokens: "length",
  model_context_window_exceeded: "length",
  tool_use: "tool_calls",
  guardrail_intervened: "content_filter",
  content_filtered: "content_filter",
  malformed_model_output: "error",
  malformed_tool_use: "error",
};

export function finishFromStopReason(stopReason: string | undefined): IrFinishReason {
  if (stopReason === undefined) return { unified: "other" };
  return { unified: STOP_REASONS[stopReason] ?? "other", raw: stopReason };
}

const FROM_UNIFIED: Readonly<Record<IrFinishUnified, string | undefined>> = {
  stop: "end_turn",
  length: "max_tokens",
  tool_calls: "tool_use",
  content_filter: "content_filtered",
  error: undefined,
  pause: undefined,
  other: undefined,
};

/** The stopReason for a finish; Bedrock's own word is kept when it came from Bedrock. */
export function stopReasonFromFinish(finish: IrFinishReason, warn: WarningSink): string {
  if (finish.stopSequence !== undefined) warn(`stop sequence ${JSON.stringify(finish.stopSequence)} not reported: Bedrock's stopReason does not say which one matched`);
  if (finish.raw !== undefined && STOP_REASONS[finish.raw] === finish.unified) return finish.raw;
  if (finish.unified === "stop" && finish.stopSequence !== undefined) return "stop_sequence";
  const mapped = FROM_UNIFIED[finish.unified];
  if (mapped) return mapped;
  warn(`finish reason ${finish.raw ?? finish.unified} has no Bedrock stopReason; sent end_turn`);
  return "end_turn";
}

// ---- usage ------------------------------------------------------------------------------------------

const count = (value: number | undefined) => (typeof value === "number" && Number.isFinite(value) ? value : undefined);

/**
 * The counts a TokenUsage states. With prompt caching, `inputTokens` is only the input neither read from
 * nor written to the cache (total input = inputTokens + cacheReadInputTokens + cacheWriteInputTokens,
 * https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html): the IR's split exactly.
 */
export function usageFromWire(usage: TokenUsage): Partial<IrUsage> {
  const input = count(usage.inputTokens);
  const read = count(usage.cacheReadInputTokens);
  const write = count(usage.cacheWriteInputTokens);
  const output = count(usage.outputTokens);
  return {
    ...(input !== undefined && { inputNoCache: input }),
    ...(read !== undefined && { inputCacheRead: read }),
    ...(write !== undefined && { inputCacheWrite: write }),
    ...(output !== undefined && { output }),
  };
}

/** A TokenUsage. Reasoning tokens are inside outputTokens (Converse reports no split); cache counts only when there are any. */
export function usageToWire(usage: IrUsage, warn: WarningSink): Record<string, number> {
  if (usage.outputReasoning > 0) warn("reasoning tokens not reported apart: Converse's usage has no reasoning count (they are in outputTokens)");
  return {
    inputTokens: usage.inputNoCache,
    outputTokens: usage.output,
    totalTokens: inputTotal(usage) + usage.output,
    ...(usage.inputCacheRead > 0 && { cacheReadInputTokens: usage.inputCacheRead }),
    ...(usage.inputCacheWrite > 0 && { cacheWriteInputTokens: usage.inputCacheWrite }),
  };
}

export function usageFromResponse(body: unknown): Partial<IrUsage> | undefined {
  const usage = isObject(body) ? body.usage : undefined;
  return isObject(usage) ? usageFromWire(usage as TokenUsage) : undefined;
}

// ---- assistant content blocks (response content, and assistant turns in a request) ------------------

/** Every ContentBlock member the SDK lists; a block with two of them set is malformed. */
export const CONTENT_MEMBERS = [
  "text",
  "image",
  "document",
  "video",
  "audio",
  "toolUse",
  "toolResult",
  "reasoningContent",
  "cachePoint",
  "guardContent",
  "citationsContent",
  "searchResult",
  "toolAddition",
  "toolRemoval",
] as const;

/** One assistant content block -> IR part; undefined (and a warning) for blocks the IR does not carry. */
export function decodeAssistantBlock(block: object, at: string, log: DropLog): IrAssistantPart | undefined {
  const kind = unionMember(block, CONTENT_MEMBERS, at);
  if ("other" in kind) {
    log.drop(`${kind.other} block`, at, "this content block type is not modelled by the gateway's IR");
    return undefined;
  }
  const path = `${at}.${kind.member}`;
  switch (kind.member) {
    case "text":
      expectShape(TextMember, kind.value, path);
      return { type: "text", text: kind.value };
    case "toolUse":
      expectShape(ToolUseBlock, kind.value, path);
      log.unknownMembers(kind.value, ToolUseBlock, path, ["type"]);
      // input is a JSON document (an object for every model that takes a JSON-schema tool).
      return { type: "tool_call", id: kind.value.toolUseId, name: kind.value.name, arguments: JSON.stringify(kind.value.input ?? {}) };
    case "reasoningContent":
      return decodeReasoning(kind.value, path, log);
    default:
      // citationsContent, image output, cachePoint, ...: nothing the IR's assistant turn holds.
      log.drop(`${kind.member} block`, at, "this content block type is not modelled by the gateway's IR");
      return undefined;
  }
}

function decodeReasoning(value: unknown, at: string, log: DropLog): IrAssistantPart | undefined {
  if (!isObject(value)) throw new WireError(at, "Member must be a structure");
  const kind = unionMember(value, ["reasoningText", "redactedContent"], at);
  if ("other" in kind) {
    log.drop(`${kind.other} reasoning`, at, "this reasoning form is not modelled by the gateway's IR");
    return undefined;
  }
  if (kind.member === "redactedContent") {
    expectShape(TextMember, kind.value, `${at}.redactedContent`);
    return { type: "reasoning", text: "", redactedData: kind.value };
  }
  expectShape(ReasoningTextBlock, kind.value, `${at}.reasoningText`);
  const { text, signature } = kind.value;
  return { type: "reasoning", text, ...(signature !== undefined && { signature }) };
}

/** A tool call's arguments as the `input` document Converse takes (an object, as tool schemas are). */
export function toolInput(args: string, warn: WarningSink): Record<string, unknown> {
  if (args.trim() === "") return {};
  try {
    const value: unknown = JSON.parse(args);
    if (isObject(value)) return value;
  } catch {
    // fall through: not JSON at all
  }
  warn(`tool call arguments are not a JSON object; sent input {} instead of ${JSON.stringify(args.slice(0, 80))}`);
  return {};
}

/**
 * One IR assistant part -> content block. `forRequest`: reasoning without a signature (another vendor's)
 * cannot go back to a model that verifies it, so it is dropped; in a response to a client it is shown as
 * reasoningText without a signature.
 */
export function encodeAssistantPart(part: IrAssistantPart, warn: WarningSink, forRequest: boolean): Record<string, unknown> | undefined {
  switch (part.type) {
    case "text":
      // Converse rejects blank text blocks ("The text field in the ContentBlock object ... is blank").
      return part.text === "" ? undefined : { text: part.text };
    case "tool_call":
      return { toolUse: { toolUseId: part.id, name: part.name, input: toolInput(part.arguments, warn) } };
    case "reasoning":
      if (part.redactedData !== undefined) return { reasoningContent: { redactedContent: part.redactedData } };
      if (part.signature) return { reasoningContent: { reasoningText: { text: part.text, signature: part.signature } } };
      if (!forRequest) return { reasoningContent: { reasoningText: { text: part.text } } };
      warn("reasoning without a signature (from another vendor) dropped: Bedrock's reasoning models accept only their own signed reasoning");
      return undefined;
  }
}

// ---- the response object -------------------------------------------------------------------------------

/**
 * A Converse response names neither an id nor the model: the id is made up here, and the model is left
 * empty (the adapter contract hands the decoder only the body).
 */
export function decodeResponse(body: unknown, now: () => number = Date.now, newId: () => string = () => `bedrock-${crypto.randomUUID()}`): Decoded<IrResponse> {
  const log = new DropLog();
  try {
    expectShape(ConverseResponse, body, "");
    const content: IrAssistantPart[] = [];
    body.output.message.content.forEach((block, i) => {
      const part = decodeAssistantBlock(block, `output.message.content[${i}]`, log);
      if (part) content.push(part);
    });
    const response: IrResponse = {
      id: newId(),
      model: "",
      created: Math.floor(now() / 1000),
      content,
      finishReason: finishFromStopReason(body.stopReason),
      usage: mergeUsage(ZERO_USAGE, body.usage ? usageFromWire(body.usage) : {}),
    };
    return { ok: true, value: response, warnings: log.list() };
  } catch (error) {
    if (!(error instanceof WireError)) throw error;
    // A malformed upstream body is the upstream's fault, not the caller's.
    return { ok: false, error: irError("api_error", `upstream returned a malformed Converse response: ${error.path || "(root)"}: ${error.detail}`, { status: 502, failure: "transient" }) };
  }
}

/**
 * IR response -> ConverseResponse. The IR keeps no latency, so metrics.latencyMs (a required member the
 * SDK reads) is 0.
 */
export function encodeResponse(response: IrResponse, warn: WarningSink): unknown {
  const content = response.content.map((part) => encodeAssistantPart(part, warn, false)).filter((block) => block !== undefined);
  return {
    output: { message: { role: "assistant", content } },
    stopReason: stopReasonFromFinish(response.finishReason, warn),
    usage: usageToWire(response.usage, warn),
    metrics: { latencyMs: 0 },
  };
}
