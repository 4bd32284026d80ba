// Anthropic `message` object <-> IR response, plus what the request and stream codecs share with it: the
// assistant content blocks, the stop_reason table and the usage split.
import type { Decoded, WarningSink } from "../types.ts";
import { irError } from "../../ir/errors.ts";
import { ZERO_USAGE, mergeUsage, type IrFinishReason, type IrFinishUnified, type IrResponse, type IrUsage } from "../../ir/response.ts";
import type { IrAssistantPart } from "../../ir/request.ts";
import {
  DropLog,
  MessageBody,
  RedactedThinkingBlock,
  TextBlock,
  ThinkingBlock,
  ToolUseBlock,
  WireError,
  expectShape,
  type WireUsage,
} from "./schema.ts";

// ---- stop reasons ---------------------------------------------------------------------------------

/** Every stop_reason the API documents (SDK StopReason), with its unified meaning. */
const STOP_REASONS: Readonly<Record<string, IrFinishUnified>> = {
  end_turn: "stop",
  stop_sequence: "stop",
  max_tokens: "length",
  model_context_window_exceeded: "length",
  tool_use: "tool_calls",
  pause_turn: "pause",
  refusal: "content_filter",
};

export function finishFromStopReason(stopReason: string | null | undefined, stopSequence?: string | null): IrFinishReason {
  if (stopReason === null || stopReason === undefined) return { unified: "other" };
  return {
    unified: STOP_REASONS[stopReason] ?? "other",
    raw: stopReason,
    ...(typeof stopSequence === "string" && { stopSequence }),
  };
}

const FROM_UNIFIED: Readonly<Record<IrFinishUnified, string | undefined>> = {
  stop: "end_turn",
  length: "max_tokens",
  tool_calls: "tool_use",
  content_filter: "refusal",
  pause: "pause_turn",
  error: undefined,
  other: undefined,
};

/** The stop_reason for a finish; Anthropic's own word is kept when it came from Anthropic. */
export function stopReasonFromFinish(finish: IrFinishReason, warn: WarningSink): string {
  if (finish.raw !== undefined && STOP_REASONS[finish.raw] === finish.unified) return finish.raw;
  if (finish.unified === "stop" && finish.stopSequence !== undefined) return "stop_sequence";
  const mapped = FROM_UNIFIED[finish.unified];
  if (mapped) return mapped;
  warn(`finish reason ${finish.raw ?? finish.unified} has no Anthropic stop_reason; sent end_turn`);
  return "end_turn";
}

// ---- usage ------------------------------------------------------------------------------------------

const count = (value: number | null | undefined) => (typeof value === "number" && Number.isFinite(value) ? value : undefined);

/**
 * The counts a wire usage object states. `input_tokens` excludes cache reads and writes (the total input
 * is the sum of the three), which is exactly the IR's split; absent or null members are left out.
 */
export function usageFromWire(usage: WireUsage): Partial<IrUsage> {
  // Members set one by one: five conditional spreads cost an object copy each, on every usage event.
  const out: { -readonly [K in keyof IrUsage]?: number } = {};
  const input = count(usage.input_tokens);
  if (input !== undefined) out.inputNoCache = input;
  const read = count(usage.cache_read_input_tokens);
  if (read !== undefined) out.inputCacheRead = read;
  const write = count(usage.cache_creation_input_tokens);
  if (write !== undefined) out.inputCacheWrite = write;
  const output = count(usage.output_tokens);
  if (output !== undefined) out.output = output;
  const reasoning = count(usage.output_tokens_details?.thinking_tokens);
  if (reasoning !== undefined) out.outputReasoning = reasoning;
  return out;
}

/** A wire usage object. Reasoning tokens go in `output_tokens_details` only when there are any. */
export function usageToWire(usage: IrUsage): Record<string, unknown> {
  return {
    input_tokens: usage.inputNoCache,
    cache_creation_input_tokens: usage.inputCacheWrite,
    cache_read_input_tokens: usage.inputCacheRead,
    output_tokens: usage.output,
    ...(usage.outputReasoning > 0 && { output_tokens_details: { thinking_tokens: usage.outputReasoning } }),
  };
}

export function usageFromResponse(body: unknown): Partial<IrUsage> | undefined {
  const usage = (body as { usage?: unknown } | null)?.usage;
  return typeof usage === "object" && usage !== null ? usageFromWire(usage as WireUsage) : undefined;
}

// ---- assistant content blocks (response content, and assistant turns in a request) ------------------

/** One assistant block -> IR part; undefined (and a warning) for blocks the IR does not carry. */
export function decodeAssistantBlock(block: { type: string }, at: string, log: DropLog): IrAssistantPart | undefined {
  switch (block.type) {
    case "text":
      expectShape(TextBlock, block, at);
      log.unknownMembers(block, TextBlock, at);
      return { type: "text", text: block.text };
    case "tool_use":
      expectShape(ToolUseBlock, block, at);
      log.unknownMembers(block, ToolUseBlock, at, ["caller"]);
      return { type: "tool_call", id: block.id, name: block.name, arguments: JSON.stringify(block.input) };
    case "thinking":
      expectShape(ThinkingBlock, block, at);
      return { type: "reasoning", text: block.thinking, signature: block.signature };
    case "redacted_thinking":
      expectShape(RedactedThinkingBlock, block, at);
      return { type: "reasoning", text: "", redactedData: block.data };
    default:
      // server_tool_use, web_search_tool_result, container_upload, ...: Anthropic-side machinery.
      log.drop(`${block.type} block`, at, "this content block type is not modelled by the gateway's IR");
      return undefined;
  }
}

/** A tool call's arguments as the `input` object Anthropic requires. */
function toolInput(args: string, warn: WarningSink): Record<string, unknown> {
  if (args.trim() === "") return {};
  try {
    const value: unknown = JSON.parse(args);
    if (typeof value === "object" && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // fall through: not JSON at all
  }
  warn(`tool call arguments are not a JSON object; sent input {} instead of ${JSON.stringify(args.slice(0, 80))}`);
  return {};
}

/**
 * One IR assistant part -> block. `forRequest`: reasoning without a signature (another vendor's) cannot
 * be sent back to Anthropic, which verifies it, so it is dropped; in a response to a client it is shown
 * as a thinking block with an empty signature.
 */
export function encodeAssistantPart(part: IrAssistantPart, warn: WarningSink, forRequest: boolean): Record<string, unknown> | undefined {
  switch (part.type) {
    case "text":
      // Anthropic rejects empty text blocks; an empty one says nothing.
      return part.text === "" ? undefined : { type: "text", text: part.text };
    case "tool_call":
      return { type: "tool_use", id: part.id, name: part.name, input: toolInput(part.arguments, warn) };
    case "reasoning":
      if (part.redactedData !== undefined) return { type: "redacted_thinking", data: part.redactedData };
      if (part.signature) return { type: "thinking", thinking: part.text, signature: part.signature };
      if (!forRequest) return { type: "thinking", thinking: part.text, signature: "" };
      warn("reasoning without a signature (from another vendor) dropped: Anthropic accepts only its own signed thinking");
      return undefined;
  }
}

/**
 * A signature with no thought after the answer's content and not ahead of a tool call (Gemini signs its
 * last text part): Anthropic puts thinking only ahead of content, and clients read the last block as the
 * answer, so it is not shown. Gemini does not require that signature back (it does the call's).
 */
export function trailingSignature(part: IrAssistantPart, before: readonly IrAssistantPart[], after: readonly IrAssistantPart[], warn: WarningSink): boolean {
  if (part.type !== "reasoning" || part.text !== "" || part.redactedData !== undefined || !before.some((p) => p.type !== "reasoning")) return false;
  if (after[0]?.type === "tool_call") return false;
  warn("a signature after the answer's content dropped: Anthropic clients take thinking only ahead of content");
  return true;
}

// ---- the message object -------------------------------------------------------------------------------

export function decodeResponse(body: unknown, now: () => number = Date.now): Decoded<IrResponse> {
  const log = new DropLog();
  try {
    expectShape(MessageBody, body, "");
    const content: IrAssistantPart[] = [];
    body.content.forEach((block, i) => {
      const part = decodeAssistantBlock(block, `content[${i}]`, log);
      if (part) content.push(part);
    });
    const response: IrResponse = {
      id: body.id,
      model: body.model,
      created: Math.floor(now() / 1000),
      content,
      finishReason: finishFromStopReason(body.stop_reason, body.stop_sequence),
      usage: mergeUsage(ZERO_USAGE, usageFromWire(body.usage)),
    };
    return { ok: true, value: response, warnings: log.list() };
  } catch (error) {
    if (!(error instanceof WireError)) throw error;
    // A malformed upstream body is the upstream's fault, not the caller's.
    return { ok: false, error: irError("api_error", `upstream returned a malformed message: ${error.message}`, { status: 502, failure: "transient" }) };
  }
}

export function encodeResponse(response: IrResponse, warn: WarningSink): unknown {
  const content = response.content.filter((part, i) => !trailingSignature(part, response.content.slice(0, i), response.content.slice(i + 1), warn)).map((part) => encodeAssistantPart(part, warn, false)).filter((block) => block !== undefined);
  return {
    id: response.id,
    type: "message",
    role: "assistant",
    model: response.model,
    content,
    stop_reason: stopReasonFromFinish(response.finishReason, warn),
    stop_sequence: response.finishReason.stopSequence ?? null,
    usage: usageToWire(response.usage),
  };
}
