// A streamed response as a sequence of IR parts. Blocks (text, reasoning, a tool call) are keyed by a
// string id unique within the stream; each has start, deltas, end, and blocks may interleave (OpenAI
// streams several tool calls at once). Encoders allocate their own wire indices from the ids.
import type { IrFinishReason, IrUsage } from "./response.ts";
import type { IrError } from "./errors.ts";

export type IrStreamPart =
  /** First part of every stream. */
  | { readonly type: "start"; readonly id: string; readonly model: string; readonly created: number }
  | { readonly type: "text-start"; readonly id: string }
  | { readonly type: "text-delta"; readonly id: string; readonly delta: string }
  | { readonly type: "text-end"; readonly id: string }
  | { readonly type: "reasoning-start"; readonly id: string; readonly redactedData?: string }
  | { readonly type: "reasoning-delta"; readonly id: string; readonly delta: string }
  | { readonly type: "reasoning-signature"; readonly id: string; readonly signature: string }
  | { readonly type: "reasoning-end"; readonly id: string }
  | { readonly type: "tool-call-start"; readonly id: string; readonly toolCallId: string; readonly name: string }
  | { readonly type: "tool-call-delta"; readonly id: string; readonly argumentsDelta: string }
  | { readonly type: "tool-call-end"; readonly id: string }
  /** Counts known so far; later values win member by member. May come at the start and the end. */
  | { readonly type: "usage"; readonly usage: Partial<IrUsage> }
  /** The last part of a stream that ended well. */
  | { readonly type: "finish"; readonly finishReason: IrFinishReason }
  /** The last part of a stream that failed after it began. */
  | { readonly type: "error"; readonly error: IrError };
