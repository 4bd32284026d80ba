// Cohere chat response <-> IR response, plus what the request and stream codecs share with it: the
// assistant message (content, tool_plan, tool_calls), the finish_reason table and the usage split.
import type { Decoded, WarningSink } from "../types.ts";
import { irError } from "../../ir/errors.ts";
import { ZERO_USAGE, inputTotal, mergeUsage, type IrFinishReason, type IrFinishUnified, type IrResponse, type IrUsage } from "../../ir/response.ts";
import type { IrAssistantPart } from "../../ir/request.ts";
import { BlockHead, ChatResponse, DropLog, ResponseMessage, TextBlock, ThinkingBlock, ToolCall, WireError, expectShape, type WireUsage } from "./schema.ts";

// ---- finish reasons -------------------------------------------------------------------------------

/** Every finish_reason the reference documents (ChatFinishReason), with its unified meaning. */
const FINISH_REASONS: Readonly<Record<string, IrFinishUnified>> = {
  COMPLETE: "stop",
  STOP_SEQUENCE: "stop",
  MAX_TOKENS: "length",
  TOOL_CALL: "tool_calls",
  ERROR: "error",
  TIMEOUT: "error",
};

export function finishFromWire(reason: string | null | undefined): IrFinishReason {
  if (reason === null || reason === undefined) return { unified: "other" };
  return { unified: FINISH_REASONS[reason] ?? "other", raw: reason };
}

const FROM_UNIFIED: Readonly<Record<IrFinishUnified, string | undefined>> = {
  stop: "COMPLETE",
  length: "MAX_TOKENS",
  tool_calls: "TOOL_CALL",
  error: "ERROR",
  content_filter: undefined,
  pause: undefined,
  other: undefined,
};

/** The finish_reason for a finish; Cohere's own word is kept when it came from Cohere. */
export function finishToWire(finish: IrFinishReason, warn: WarningSink): string {
  if (finish.stopSequence !== undefined) warn(`stop sequence ${JSON.stringify(finish.stopSequence)} not reported: Cohere's finish_reason does not say which one matched`);
  if (finish.raw !== undefined && FINISH_REASONS[finish.raw] === finish.unified) return finish.raw;
  if (finish.unified === "stop" && finish.stopSequence !== undefined) return "STOP_SEQUENCE";
  const mapped = FROM_UNIFIED[finish.unified];
  if (mapped) return mapped;
  warn(`finish reason ${finish.raw ?? finish.unified} has no Cohere finish_reason; sent COMPLETE`);
  return "COMPLETE";
}

// ---- usage ------------------------------------------------------------------------------------------

const count = (value: number | null | undefined) => (typeof value === "number" && Number.isFinite(value) ? value : undefined);

/**
 * The counts a wire usage object states. `tokens` is what the model read and wrote; `billed_units` is
 * what Cohere charged (it leaves out the prompt template), used only when `tokens` is missing.
 * `cached_tokens` are prompt tokens that hit the cache, so they are part of the input count.
 */
export function usageFromWire(usage: WireUsage): Partial<IrUsage> {
  const input = count(usage.tokens?.input_tokens) ?? count(usage.billed_units?.input_tokens);
  const output = count(usage.tokens?.output_tokens) ?? count(usage.billed_units?.output_tokens);
  const cached = count(usage.cached_tokens);
  return {
    ...(input !== undefined && { inputNoCache: Math.max(0, input - (cached ?? 0)) }),
    ...(cached !== undefined && { inputCacheRead: cached }),
    ...(output !== undefined && { output }),
  };
}

/**
 * A wire usage object. The gateway knows one count per direction, so `billed_units` and `tokens` carry
 * the same numbers (clients read either). Reasoning tokens are inside output_tokens: Cohere has no split.
 */
export function usageToWire(usage: IrUsage, warn: WarningSink): Record<string, unknown> {
  if (usage.inputCacheWrite > 0) warn("cache-write tokens counted as input_tokens: Cohere's usage has no cache-write count");
  if (usage.outputReasoning > 0) warn("reasoning tokens not reported apart: Cohere's usage has no reasoning count (they are in output_tokens)");
  const counts = { input_tokens: inputTotal(usage), output_tokens: usage.output };
  return { billed_units: counts, tokens: { ...counts }, ...(usage.inputCacheRead > 0 && { cached_tokens: usage.inputCacheRead }) };
}

export function usageFromResponse(body: unknown): Partial<IrUsage> | undefined {
  const usage = (body as { usage?: unknown } | null)?.usage;
  return typeof usage === "object" && usage !== null ? usageFromWire(usage as WireUsage) : undefined;
}

// ---- the assistant message (response message, and assistant turns in a request) ----------------------

interface WireAssistant {
  readonly content?: unknown;
  readonly tool_plan?: string | null;
  readonly tool_calls?: readonly object[] | null;
}

/**
 * An assistant message -> IR parts, in the order the model produced them: content (thinking, text), the
 * tool plan (what Cohere writes before calling tools: in an answer reasoning, not answer text, so a client
 * that joins text onto a forced tool call's input never sees it there; in a request's history text, which
 * every vendor takes in an assistant turn where unsigned reasoning would be dropped), then the tool calls.
 */
export function decodeAssistant(message: WireAssistant, at: string, log: DropLog, plan: "reasoning" | "text" = "reasoning"): IrAssistantPart[] {
  const parts: IrAssistantPart[] = [];
  const content = message.content;
  if (typeof content === "string") {
    if (content !== "") parts.push({ type: "text", text: content });
  } else if (Array.isArray(content)) {
    content.forEach((block, i) => {
      const path = `${at}.content[${i}]`;
      expectShape(BlockHead, block, path);
      if (block.type === "text") {
        expectShape(TextBlock, block, path);
        log.unknownMembers(block, TextBlock, path);
        parts.push({ type: "text", text: block.text });
      } else if (block.type === "thinking") {
        expectShape(ThinkingBlock, block, path);
        parts.push({ type: "reasoning", text: block.thinking });
      } else {
        log.drop(`${block.type} block`, path, "this content block type is not modelled by the gateway's IR");
      }
    });
  } else if (content !== undefined && content !== null) {
    throw new WireError(`${at}.content`, "expected a string or a list of content blocks");
  }
  if (message.tool_plan) parts.push({ type: plan, text: message.tool_plan });
  (message.tool_calls ?? []).forEach((call, i) => {
    const path = `${at}.tool_calls[${i}]`;
    expectShape(ToolCall, call, path);
    log.unknownMembers(call, ToolCall, path);
    parts.push({ type: "tool_call", id: call.id, name: call.function.name, arguments: call.function.arguments ?? "" });
  });
  return parts;
}

/** Warns about each distinct text once (a signature on every turn is one warning). */
export function onceEach(warn: WarningSink): WarningSink {
  const said = new Set<string>();
  return (warning) => {
    if (said.has(warning)) return;
    said.add(warning);
    warn(warning);
  };
}

/**
 * IR assistant parts -> the members of a Cohere assistant message. With tool calls, the text goes in
 * `tool_plan`, where Cohere itself writes it; without, in `content`. Reasoning is `thinking` content,
 * without the signature or redacted data other vendors attach (Cohere has no field for either).
 */
export function encodeAssistant(parts: readonly IrAssistantPart[], warn: WarningSink): { content: Record<string, unknown>[]; tool_plan?: string; tool_calls?: Record<string, unknown>[] } {
  const calls = parts.flatMap((part) => (part.type === "tool_call" ? [{ id: part.id, type: "function", function: { name: part.name, arguments: part.arguments } }] : []));
  const texts: string[] = [];
  const content: Record<string, unknown>[] = [];
  for (const part of parts) {
    if (part.type === "text") {
      if (part.text === "") continue;
      if (calls.length > 0) texts.push(part.text);
      else content.push({ type: "text", text: part.text });
    } else if (part.type === "reasoning") {
      if (part.redactedData !== undefined) {
        warn("redacted reasoning dropped: Cohere has no field for another vendor's redacted thinking");
        continue;
      }
      if (part.signature) warn("reasoning signature dropped: Cohere's thinking content has no signature");
      content.push({ type: "thinking", thinking: part.text });
    }
  }
  return { content, ...(texts.length > 0 && { tool_plan: texts.join("\n") }), ...(calls.length > 0 && { tool_calls: calls }) };
}

// ---- the chat response ----------------------------------------------------------------------------

/**
 * A Cohere chat response -> IR. Cohere names no model in its answer and the contract passes none, so the
 * IR model is left empty; `created` is the decode time (Cohere sends no timestamp).
 */
export function decodeResponse(body: unknown, now: () => number = Date.now): Decoded<IrResponse> {
  const log = new DropLog();
  try {
    expectShape(ChatResponse, body, "");
    log.unknownMembers(body, ChatResponse, "");
    log.unknownMembers(body.message, ResponseMessage, "message");
    const response: IrResponse = {
      id: body.id,
      model: "",
      created: Math.floor(now() / 1000),
      content: decodeAssistant(body.message, "message", log),
      finishReason: finishFromWire(body.finish_reason),
      usage: mergeUsage(ZERO_USAGE, body.usage ? usageFromWire(body.usage) : {}),
    };
    return { ok: true, value: response, warnings: log.list() };
  } catch (error) {
    if (!(error instanceof WireError)) throw error;
    // A malformed upstream body is the upstream's fault, not the caller's.
    return { ok: false, error: irError("api_error", `upstream returned a malformed chat response: ${error.message}`, { status: 502, failure: "transient" }) };
  }
}

export function encodeResponse(response: IrResponse, warn: WarningSink): unknown {
  const once = onceEach(warn);
  const { content, ...rest } = encodeAssistant(response.content, once);
  return {
    id: response.id,
    finish_reason: finishToWire(response.finishReason, once),
    message: { role: "assistant", ...(content.length > 0 && { content }), ...rest },
    usage: usageToWire(response.usage, once),
  };
}
