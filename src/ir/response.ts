// A whole (non-streamed) response in the IR, plus the usage and finish-reason types both it and the
// stream carry.
import type { IrAssistantPart } from "./request.ts";

/**
 * Token counts split the way billing needs them. Input is split into uncached, cache-read and
 * cache-write (Anthropic reports them apart; OpenAI's prompt_tokens includes cached tokens, which the
 * OpenAI decoder subtracts). Reasoning tokens are part of output.
 */
export interface IrUsage {
  readonly inputNoCache: number;
  readonly inputCacheRead: number;
  readonly inputCacheWrite: number;
  readonly output: number;
  readonly outputReasoning: number;
}

export const ZERO_USAGE: IrUsage = Object.freeze({ inputNoCache: 0, inputCacheRead: 0, inputCacheWrite: 0, output: 0, outputReasoning: 0 });

export const inputTotal = (u: IrUsage) => u.inputNoCache + u.inputCacheRead + u.inputCacheWrite;

/** Later counts win member by member (Anthropic sends input at message_start and output at the end). */
export function mergeUsage(base: IrUsage, update: Partial<IrUsage>): IrUsage {
  return {
    inputNoCache: update.inputNoCache ?? base.inputNoCache,
    inputCacheRead: update.inputCacheRead ?? base.inputCacheRead,
    inputCacheWrite: update.inputCacheWrite ?? base.inputCacheWrite,
    output: update.output ?? base.output,
    outputReasoning: update.outputReasoning ?? base.outputReasoning,
  };
}

/** Why generation stopped: the unified value every encoder maps from, and the vendor's own word. */
export type IrFinishUnified = "stop" | "length" | "tool_calls" | "content_filter" | "pause" | "error" | "other";
export interface IrFinishReason {
  readonly unified: IrFinishUnified;
  readonly raw?: string;
  /** Anthropic `stop_sequence`: which stop sequence matched. */
  readonly stopSequence?: string;
}

export interface IrResponse {
  readonly id: string;
  /** The model as the upstream named it (same-protocol routes pass it through unchanged, so do we). */
  readonly model: string;
  /** Unix seconds. */
  readonly created: number;
  readonly content: readonly IrAssistantPart[];
  readonly finishReason: IrFinishReason;
  readonly usage: IrUsage;
}
