// OpenAI `chat.completion` object <-> IR response, and usage both ways.
//
// Usage: OpenAI's prompt_tokens INCLUDES the cached tokens (prompt_tokens_details.cached_tokens) and
// completion_tokens INCLUDES reasoning tokens (completion_tokens_details.reasoning_tokens). The IR splits
// input into uncached / cache read / cache write, so decoding subtracts and encoding adds back.
import { inputTotal, irError, type IrAssistantPart, type IrResponse, type IrUsage } from "../../ir/index.ts";
import type { Decoded, WarningSink } from "../types.ts";
import { finishFromWire, finishToWire, irErrorFromWire, warnFinishLoss } from "./errors.ts";
import { check, type LenientMessage, type WireUsage } from "./schema.ts";

const count = (n: number | null | undefined) => (typeof n === "number" && Number.isFinite(n) && n > 0 ? n : 0);

/** OpenAI usage -> IR usage. Cache writes are reported by some models (cache_write_tokens); both are inside prompt_tokens. */
export function usageFromWire(usage: WireUsage): IrUsage {
  const prompt = count(usage.prompt_tokens);
  const cacheRead = count(usage.prompt_tokens_details?.cached_tokens);
  const cacheWrite = count(usage.prompt_tokens_details?.cache_write_tokens);
  return {
    inputNoCache: Math.max(0, prompt - cacheRead - cacheWrite),
    inputCacheRead: cacheRead,
    inputCacheWrite: cacheWrite,
    output: count(usage.completion_tokens),
    outputReasoning: count(usage.completion_tokens_details?.reasoning_tokens),
  };
}

/** IR usage -> OpenAI usage (the same object in a response and in the stream's usage chunk). */
export function usageToWire(usage: IrUsage): Record<string, unknown> {
  const prompt = inputTotal(usage);
  const details: Record<string, number> = { cached_tokens: usage.inputCacheRead };
  if (usage.inputCacheWrite > 0) details.cache_write_tokens = usage.inputCacheWrite;
  return {
    prompt_tokens: prompt,
    completion_tokens: usage.output,
    total_tokens: prompt + usage.output,
    prompt_tokens_details: details,
    completion_tokens_details: { reasoning_tokens: usage.outputReasoning },
  };
}

/** The assistant parts of a `message` (or a whole-turn `delta`): reasoning first, as it was produced. */
export function partsFromMessage(message: LenientMessage): IrAssistantPart[] {
  const parts: IrAssistantPart[] = [];
  if (message.reasoning_content) parts.push({ type: "reasoning", text: message.reasoning_content });
  if (message.content) parts.push({ type: "text", text: message.content });
  // A refusal is what the model said instead of an answer; the IR has no refusal kind, so it is text.
  if (message.refusal) parts.push({ type: "text", text: message.refusal });
  for (const call of message.tool_calls ?? []) {
    // Custom (free-text) tool calls cannot come back: the IR only ever sends function tools.
    if (call.type === "function" || call.type === undefined || call.type === null) {
      parts.push({ type: "tool_call", id: call.id ?? "", name: call.function?.name ?? "", arguments: call.function?.arguments ?? "" });
    }
  }
  return parts;
}

/** Upstream `chat.completion` -> IR. An `{"error": ...}` body with status 200 is still an error. */
export function decodeResponse(body: unknown): Decoded<IrResponse> {
  if (check.errorBody.Check(body)) return { ok: false, error: irErrorFromWire(502, body) };
  if (!check.completion.Check(body)) {
    return { ok: false, error: irError("api_error", "upstream answered with something that is not a chat.completion", { status: 502, failure: "transient" }) };
  }
  const choice = body.choices[0];
  if (!choice) return { ok: false, error: irError("api_error", "upstream answered with no choices", { status: 502, failure: "transient" }) };
  const warnings = body.choices.length > 1 ? [`upstream returned ${body.choices.length} choices; only the first is kept`] : [];
  return {
    ok: true,
    value: {
      id: body.id ?? "",
      model: body.model ?? "",
      created: body.created ?? 0,
      content: partsFromMessage(choice.message ?? {}),
      finishReason: finishFromWire(choice.finish_reason),
      usage: usageFromWire(body.usage ?? {}),
    },
    warnings,
  };
}

/** IR -> `chat.completion`. Reasoning has no place in OpenAI's message object and is reported. */
export function encodeResponse(response: IrResponse, warn: WarningSink): Record<string, unknown> {
  const texts: string[] = [];
  const toolCalls: Record<string, unknown>[] = [];
  for (const part of response.content) {
    if (part.type === "text") texts.push(part.text);
    else if (part.type === "tool_call") toolCalls.push({ id: part.id, type: "function", function: { name: part.name, arguments: part.arguments } });
    else warn("reasoning has no Chat Completions response form; dropped");
  }
  warnFinishLoss(response.finishReason, warn);
  const message: Record<string, unknown> = { role: "assistant", content: texts.length > 0 ? texts.join("") : null, refusal: null };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  return {
    id: response.id,
    object: "chat.completion",
    created: response.created,
    model: response.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishToWire(response.finishReason) }],
    usage: usageToWire(response.usage),
  };
}

/**
 * Usage of a non-streamed body, for metering same-protocol routes (undefined when there is none). Read
 * member by member (usageFromWire counts only finite non-negative numbers), as the other protocols read
 * theirs: a schema check of the object cost every metered request ~0.2 µs under load for nothing it adds.
 */
export function usageFromResponse(body: unknown): Partial<IrUsage> | undefined {
  const usage = typeof body === "object" && body !== null ? (body as { usage?: unknown }).usage : undefined;
  return typeof usage === "object" && usage !== null && !Array.isArray(usage) ? usageFromWire(usage as WireUsage) : undefined;
}
