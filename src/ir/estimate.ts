// The one token estimate, for when an upstream reports no usage (or none yet): about 4 characters per
// token, the rule of thumb OpenAI and Anthropic both give for English text. It is a stand-in, never a
// count: a stream the upstream did not meter is charged this rather than zero (docs/operations.md,
// "Stream usage and estimates"), and an Anthropic client's message_start shows it until the real figure.
import type { IrRequest } from "./request.ts";
import type { IrStreamPart } from "./stream.ts";
import { inputTotal, type IrResponse, type IrUsage } from "./response.ts";

export const CHARS_PER_TOKEN = 4;

/** The warning logged with each estimated charge (one line per request; the ledger row looks like any other). */
export const ESTIMATE_WARNING = "usage estimated: the upstream reported none for this request";

/** Tokens for `size` characters (or bytes) of text: 0 for none, else at least 1. */
export const estimateTokens = (size: number): number => (size > 0 ? Math.ceil(size / CHARS_PER_TOKEN) : 0);

/**
 * Characters of what the model reads in an IR request: instructions, messages, tool definitions.
 * Media is not counted (an image costs the vendor a fixed budget, not its base64 length).
 */
export function requestTextSize(request: IrRequest): number {
  let size = 0;
  for (const part of request.system) size += part.text.length;
  for (const message of request.messages) {
    for (const part of message.content) {
      if (part.type === "text" || part.type === "reasoning") size += part.text.length;
      else if (part.type === "tool_call") size += part.name.length + part.arguments.length;
      else if (part.type === "tool_result") for (const inner of part.content) if (inner.type === "text") size += inner.text.length;
    }
  }
  for (const tool of request.tools) size += tool.name.length + (tool.description?.length ?? 0) + JSON.stringify(tool.parameters).length;
  return size;
}

/**
 * `usage` with what the upstream left at zero estimated: the input from `inputSize` characters of
 * request, the output from `outputSize` characters of answer. `estimated` says whether anything was.
 * `inputSize` may be a function, called only when the input is estimated: measuring a request walks
 * its messages and serialises its tools' schemas (~12 µs for a coding agent's 70 KB of tools), which
 * an upstream that reports its usage never needs.
 */
export function withEstimate(usage: IrUsage, inputSize: number | (() => number), outputSize: number): { usage: IrUsage; estimated: boolean } {
  const input = inputTotal(usage) === 0 ? estimateTokens(typeof inputSize === "number" ? inputSize : inputSize()) : 0;
  const output = usage.output === 0 ? estimateTokens(outputSize) : 0;
  if (input === 0 && output === 0) return { usage, estimated: false };
  return { usage: { ...usage, inputNoCache: usage.inputNoCache + input, output: usage.output + output }, estimated: true };
}

/** Characters of answer a stream part carries (text, reasoning, tool arguments), for an output estimate. */
export function answerSize(part: IrStreamPart): number {
  if (part.type === "text-delta" || part.type === "reasoning-delta") return part.delta.length;
  if (part.type === "tool-call-delta") return part.argumentsDelta.length;
  return 0;
}

/** Characters of answer in a whole response (text, reasoning, tool arguments), as answerSize counts a stream's. */
export function responseTextSize(response: IrResponse): number {
  let size = 0;
  for (const part of response.content) size += part.type === "tool_call" ? part.arguments.length : part.text.length;
  return size;
}
