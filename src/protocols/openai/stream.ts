// OpenAI streaming both ways (API reference, "The chat completion chunk object"; function-calling
// guide, "Streaming"): `data: {chat.completion.chunk}` events, then `data: [DONE]`.
//
// Decoder: upstream bytes -> SSE events (transport/sse.ts) -> IR parts, one chunk at a time. Encoder: IR
// parts -> SSE bytes, each part written the moment it arrives. All per-stream state lives in the closure
// of the create* call; nothing holds more than the current chunk and a few counters.
import { irError, mergeUsage, ZERO_USAGE, type IrFinishReason, type IrRequest, type IrStreamPart, type IrUsage } from "../../ir/index.ts";
import { SSE_END, sseHead, sseParser, sseText } from "../../transport/sse.ts";
import { writerTransform } from "../stream-writer.ts";
import type { StreamParser, StreamWriter, WarningSink, WireChunk } from "../types.ts";
import { decodeStreamError, finishFromWire, finishToWire, warnFinishLoss, wireError } from "./errors.ts";
import { usageFromWire, usageToWire } from "./response.ts";
import { check, type LenientMessage } from "./schema.ts";
import { aroundText, textAround, type TextAround } from "../json-text.ts";

// ---- decoder (upstream -> IR) ----

export function createStreamParser(): StreamParser {
  const steps = chunkDecoder();
  return sseParser<IrStreamPart>({ onEvent: (event) => steps.onEvent(event.data), onEnd: () => steps.onEnd() });
}

const truncated = () => irError("api_error", "the upstream stream ended before it finished", { status: 502, failure: "transient" });

/**
 * The decoding state machine for one stream. Text and reasoning are one open block at a time (a new
 * kind closes the previous one); tool calls are keyed by OpenAI's `tool_calls[].index` and stay open
 * until the finish chunk, since the IR allows several to interleave. The finish reason is held until
 * `[DONE]` so the usage chunk, which OpenAI sends after it, comes before the IR `finish` part.
 */
function chunkDecoder() {
  let started = false;
  let done = false;
  let blockCount = 0;
  let open: { kind: "text" | "reasoning"; id: string } | undefined;
  const tools = new Map<number, string>();
  let finish: IrFinishReason | undefined;

  function openBlock(kind: "text" | "reasoning", out: IrStreamPart[]): string {
    if (open?.kind === kind) return open.id;
    closeOpen(out);
    open = { kind, id: `${kind}-${blockCount++}` };
    out.push(kind === "text" ? { type: "text-start", id: open.id } : { type: "reasoning-start", id: open.id });
    return open.id;
  }
  function closeOpen(out: IrStreamPart[]): void {
    if (!open) return;
    out.push(open.kind === "text" ? { type: "text-end", id: open.id } : { type: "reasoning-end", id: open.id });
    open = undefined;
  }
  function closeAll(out: IrStreamPart[]): void {
    closeOpen(out);
    if (tools.size === 0) return;
    for (const index of [...tools.keys()].sort((a, b) => a - b)) out.push({ type: "tool-call-end", id: tools.get(index) ?? "" });
    tools.clear();
  }

  function onDelta(delta: LenientMessage, out: IrStreamPart[]): void {
    if (delta.reasoning_content) out.push({ type: "reasoning-delta", id: openBlock("reasoning", out), delta: delta.reasoning_content });
    // The first chunk's `content: ""` opens nothing: a block starts with its first character.
    if (delta.content) out.push({ type: "text-delta", id: openBlock("text", out), delta: delta.content });
    if (delta.refusal) out.push({ type: "text-delta", id: openBlock("text", out), delta: delta.refusal });
    for (const call of delta.tool_calls ?? []) {
      const index = call.index ?? 0;
      let id = tools.get(index);
      if (id === undefined) {
        closeOpen(out);
        id = `tool-${index}`;
        tools.set(index, id);
        // id and name arrive on a call's first delta (function-calling guide, "Streaming").
        out.push({ type: "tool-call-start", id, toolCallId: call.id ?? `call_${index}`, name: call.function?.name ?? "" });
      }
      const args = call.function?.arguments;
      if (args) out.push({ type: "tool-call-delta", id, argumentsDelta: args });
    }
  }

  function onChunk(chunk: unknown, out: IrStreamPart[]): void {
    if (!check.chunk.Check(chunk)) return; // lenient: an event we cannot read is skipped, not fatal
    if (!started) {
      started = true;
      out.push({ type: "start", id: chunk.id ?? "", model: chunk.model ?? "", created: chunk.created ?? 0 });
    }
    // Only choice 0 exists: the IR never asks for n > 1.
    const choice = chunk.choices?.find((c) => (c.index ?? 0) === 0);
    if (choice?.delta) onDelta(choice.delta, out);
    if (choice?.finish_reason) {
      closeAll(out);
      finish = finishFromWire(choice.finish_reason);
    }
    if (chunk.usage) out.push({ type: "usage", usage: usageFromWire(chunk.usage) });
  }

  function onEnd(): IrStreamPart[] {
    if (done) return [];
    done = true;
    const out: IrStreamPart[] = [];
    closeAll(out);
    out.push(finish ? { type: "finish", finishReason: finish } : { type: "error", error: truncated() });
    return out;
  }

  function onEvent(data: string): IrStreamPart[] {
    if (done) return [];
    if (data === "[DONE]") return onEnd();
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      done = true;
      return [{ type: "error", error: irError("api_error", "the upstream stream sent an event that is not JSON", { status: 502, failure: "transient" }) }];
    }
    if (check.errorBody.Check(parsed)) {
      done = true;
      return [{ type: "error", error: decodeStreamError(parsed) }];
    }
    const out: IrStreamPart[] = [];
    onChunk(parsed, out);
    return out;
  }

  return { onEvent, onEnd };
}

// ---- encoder (IR -> client) ----

/**
 * IR parts -> OpenAI SSE. The first chunk carries `delta: {role: "assistant", content: ""}`; tool calls get
 * OpenAI's own 0-based indices, allocated in the order their blocks start; the usage chunk (`choices: []`)
 * is sent only when the client asked for it (`stream_options.include_usage`), and then every other chunk
 * carries `usage: null`, as OpenAI's do. An IR `error` ends the stream with `data: {"error": ...}` and no
 * `[DONE]`, so the SDK raises instead of returning a silently short answer.
 */
export function createStreamEncoder(request: IrRequest, warn: WarningSink): TransformStream<IrStreamPart, Uint8Array> {
  return writerTransform((emit) => createStreamWriter(request, warn, emit));
}

export function createStreamWriter(request: IrRequest, warn: WarningSink, emit: (chunk: WireChunk) => void): StreamWriter {
  const includeUsage = request.includeUsage === true;
  let head: { id: string; object: "chat.completion.chunk"; created: number; model: string } | undefined;
  const toolIndex = new Map<string, number>();
  let usage: IrUsage = ZERO_USAGE;
  let ended = false;
  let warnedReasoning = false;

  const write = (payload: Record<string, unknown>) => sseText(JSON.stringify(payload));
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) =>
    write({ ...head, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }], ...(includeUsage ? { usage: null } : {}) });

  /**
   * A text delta's chunk as text around the delta's own JSON: the chunk's head, choice and usage members
   * are the same in every delta of the stream, so they are serialised once (the bytes are what `chunk`
   * writes: the same members in the same order).
   */
  let around: TextAround | undefined;
  const textChunk = (delta: string) => {
    around ??= textAround(
      `${sseHead()}${JSON.stringify({ ...head, choices: [{ index: 0, delta: { content: "" } }] }).slice(0, -6)}`,
      `},"logprobs":null,"finish_reason":null}]${includeUsage ? ',"usage":null' : ""}}${SSE_END}`,
    );
    return aroundText(around, delta);
  };

  /** The role chunk, written once; parts that come before a `start` (they should not) get one anyway. */
  function begin(out: string[], start?: { id: string; model: string; created: number }): void {
    if (head) return;
    head = { id: start?.id ?? "", object: "chat.completion.chunk", created: start?.created ?? 0, model: start?.model ?? request.model };
    out.push(chunk({ role: "assistant", content: "" }));
  }

  function finishStream(reason: IrFinishReason, out: string[]): void {
    warnFinishLoss(reason, warn);
    out.push(chunk({}, finishToWire(reason)));
    if (includeUsage) out.push(write({ ...head, choices: [], usage: usageToWire(usage) }));
    out.push(sseText("[DONE]"));
    ended = true;
  }

  function encode(part: IrStreamPart): string[] {
    const out: string[] = [];
    if (part.type === "error") {
      out.push(write({ error: wireError(part.error) }));
      ended = true;
      return out;
    }
    begin(out, part.type === "start" ? part : undefined);
    switch (part.type) {
      case "text-delta":
        out.push(textChunk(part.delta));
        break;
      case "reasoning-start":
        if (!warnedReasoning) warn("reasoning has no Chat Completions stream form; dropped");
        warnedReasoning = true;
        break;
      case "tool-call-start": {
        const index = toolIndex.size;
        toolIndex.set(part.id, index);
        out.push(chunk({ tool_calls: [{ index, id: part.toolCallId, type: "function", function: { name: part.name, arguments: "" } }] }));
        break;
      }
      case "tool-call-delta": {
        const index = toolIndex.get(part.id);
        if (index !== undefined) out.push(chunk({ tool_calls: [{ index, function: { arguments: part.argumentsDelta } }] }));
        break;
      }
      case "usage":
        usage = mergeUsage(usage, part.usage);
        break;
      case "finish":
        finishStream(part.finishReason, out);
        break;
      default:
        break; // start (handled by begin), block starts and ends: OpenAI has no framing for them
    }
    return out;
  }

  return {
    accept(part) {
      if (ended) return;
      for (const text of encode(part)) emit(text);
    },
    end() {
      // The IR stream stopped without finish or error: say so rather than end as if complete.
      if (!ended) emit(write({ error: wireError(truncated()) }));
      ended = true;
    },
  };
}
