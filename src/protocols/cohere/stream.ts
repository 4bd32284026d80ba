// Cohere chat streaming both ways (https://docs.cohere.com/reference/chat-stream, the "Streaming" and
// "Streaming for tool use" guides): SSE events `event: <type>` + `data: {"type": <type>, ...}`:
// message-start; per content block (text or thinking) content-start, content-delta..., content-end;
// tool-plan-delta; per tool call tool-call-start, tool-call-delta..., tool-call-end; citation-start /
// citation-end; message-end with the finish_reason and usage (or an `error`).
//
// Decoder: upstream bytes -> SSE events (transport/sse.ts) -> IR parts, event by event. Encoder: IR parts
// -> SSE bytes. Cohere's streams open one block at a time; the IR lets blocks interleave (an OpenAI
// upstream streams several tool calls at once), so a block that starts while another is open waits,
// and only its own parts are held, until the open block ends. All per-stream state lives in closures.
import { irError, mergeUsage, ZERO_USAGE, type IrError, type IrRequest, type IrStreamPart, type IrUsage } from "../../ir/index.ts";
import { sseParser, sseText, type SseEvent } from "../../transport/sse.ts";
import { writerTransform } from "../stream-writer.ts";
import type { StreamParser, StreamWriter, WarningSink, WireChunk } from "../types.ts";
import { streamError } from "./errors.ts";
import { finishFromWire, finishToWire, onceEach, usageFromWire, usageToWire } from "./response.ts";
import { ContentDeltaEvent, ContentStartEvent, IndexedEvent, MessageEndEvent, MessageStartEvent, ToolCallDeltaEvent, ToolCallStartEvent, ToolPlanDeltaEvent, matches, type WireUsage } from "./schema.ts";
import { blockSequence, type BlockPart } from "../block-sequence.ts";

// ---- decoder (upstream -> IR) --------------------------------------------------------------------

export function createStreamParser(now: () => number = Date.now): StreamParser {
  const steps = eventDecoder(now);
  return sseParser<IrStreamPart>({ onEvent: (event) => steps.onEvent(event), onEnd: () => steps.onEnd() });
}

const malformed = (what: string) => irError("api_error", `upstream sent a malformed ${what} event`, { status: 502, failure: "transient" });
/** IR block ids: content blocks and tool calls are indexed apart on the wire (both start at 0). */
const contentId = (index: number) => `content-${index}`;
const toolId = (index: number) => `tool-${index}`;
const PLAN_ID = "tool-plan";

/** The decoding state machine of one stream: the kind of each open content block, and the tool plan. */
function eventDecoder(now: () => number) {
  let done = false;
  let planOpen = false;
  const kinds = new Map<number, "text" | "reasoning">();

  const fail = (error: IrError): IrStreamPart[] => {
    done = true;
    return [{ type: "error", error }];
  };
  /**
   * The tool plan is reasoning, not answer text (clients that glue text onto a forced tool call's input
   * would break): a reasoning block that ends where the next block (or the message) begins.
   */
  const closePlan = (): IrStreamPart[] => {
    if (!planOpen) return [];
    planOpen = false;
    return [{ type: "reasoning-end", id: PLAN_ID }];
  };

  function onEvent(event: SseEvent): IrStreamPart[] {
    // The OpenAPI spec names "[DONE]" as the stream's terminator; the SDK stops there, so do we.
    if (done || event.data.trim() === "[DONE]") return [];
    let data: unknown;
    try {
      data = JSON.parse(event.data);
    } catch {
      return fail(malformed(event.event ?? "unnamed"));
    }
    // `type` in the data is what the SDK reads; the `event:` line names the same thing.
    const type = (data as { type?: unknown } | null)?.type ?? event.event;
    switch (type) {
      case "message-start":
        if (!matches(MessageStartEvent, data)) return fail(malformed("message-start"));
        return [{ type: "start", id: data.id ?? "", model: "", created: Math.floor(now() / 1000) }];
      case "content-start": {
        if (!matches(ContentStartEvent, data)) return fail(malformed("content-start"));
        const content = data.delta.message.content;
        const id = contentId(data.index);
        const thinking = content.type === "thinking";
        kinds.set(data.index, thinking ? "reasoning" : "text");
        const initial = (thinking ? content.thinking : content.text) ?? "";
        const start: IrStreamPart = thinking ? { type: "reasoning-start", id } : { type: "text-start", id };
        const delta: IrStreamPart[] = initial === "" ? [] : [thinking ? { type: "reasoning-delta", id, delta: initial } : { type: "text-delta", id, delta: initial }];
        return [...closePlan(), start, ...delta];
      }
      case "content-delta": {
        if (!matches(ContentDeltaEvent, data)) return fail(malformed("content-delta"));
        const { text, thinking } = data.delta.message.content;
        const id = contentId(data.index);
        if (kinds.get(data.index) === "reasoning" && typeof thinking === "string") return [{ type: "reasoning-delta", id, delta: thinking }];
        if (kinds.get(data.index) === "text" && typeof text === "string") return [{ type: "text-delta", id, delta: text }];
        return [];
      }
      case "content-end": {
        if (!matches(IndexedEvent, data)) return fail(malformed("content-end"));
        const kind = kinds.get(data.index);
        kinds.delete(data.index);
        if (kind === undefined) return [];
        return [{ type: kind === "text" ? "text-end" : "reasoning-end", id: contentId(data.index) }];
      }
      case "tool-plan-delta": {
        if (!matches(ToolPlanDeltaEvent, data)) return fail(malformed("tool-plan-delta"));
        const opening: IrStreamPart[] = planOpen ? [] : [{ type: "reasoning-start", id: PLAN_ID }];
        planOpen = true;
        return [...opening, { type: "reasoning-delta", id: PLAN_ID, delta: data.delta.message.tool_plan }];
      }
      case "tool-call-start": {
        if (!matches(ToolCallStartEvent, data)) return fail(malformed("tool-call-start"));
        const call = data.delta.message.tool_calls;
        const id = toolId(data.index);
        const args = call.function.arguments ?? "";
        return [...closePlan(), { type: "tool-call-start", id, toolCallId: call.id, name: call.function.name }, ...(args === "" ? [] : [{ type: "tool-call-delta" as const, id, argumentsDelta: args }])];
      }
      case "tool-call-delta":
        if (!matches(ToolCallDeltaEvent, data)) return fail(malformed("tool-call-delta"));
        return [{ type: "tool-call-delta", id: toolId(data.index), argumentsDelta: data.delta.message.tool_calls.function.arguments }];
      case "tool-call-end":
        if (!matches(IndexedEvent, data)) return fail(malformed("tool-call-end"));
        return [{ type: "tool-call-end", id: toolId(data.index) }];
      case "message-end":
        return matches(MessageEndEvent, data) ? onMessageEnd(data.delta ?? {}) : fail(malformed("message-end"));
      default:
        // citation-start / citation-end (Cohere-only citations), debug, and event types added later.
        return [];
    }
  }

  function onMessageEnd(delta: { finish_reason?: string | null; usage?: WireUsage | null; error?: string | null }): IrStreamPart[] {
    const counts = delta.usage ? usageFromWire(delta.usage) : {};
    const parts: IrStreamPart[] = [...closePlan(), ...(Object.keys(counts).length > 0 ? [{ type: "usage" as const, usage: counts }] : [])];
    // A generation that failed after it began ends with `delta.error`: the client gets its in-stream error.
    if (delta.error) return [...parts, ...fail(streamError(delta.error))];
    done = true;
    return [...parts, { type: "finish", finishReason: finishFromWire(delta.finish_reason) }];
  }

  /** A stream that stops before message-end was cut short: say so. */
  function onEnd(): IrStreamPart[] {
    return done ? [] : fail(irError("api_error", "the upstream stream ended before message-end", { status: 502, failure: "transient" }));
  }

  return { onEvent, onEnd };
}

// ---- encoder (IR -> client) ----------------------------------------------------------------------

type Emit = (data: { type: string } & Record<string, unknown>) => void;

export function createStreamEncoder(request: IrRequest, warn: WarningSink): TransformStream<IrStreamPart, Uint8Array> {
  return writerTransform((emit) => createStreamWriter(request, warn, emit));
}

export function createStreamWriter(_request: IrRequest, warn: WarningSink, emit: (chunk: WireChunk) => void): StreamWriter {
  return messageWriter(onceEach(warn), (data) => emit(sseText(JSON.stringify(data), data.type)));
}

/** The state of one client stream: whether message-start went out, the usage so far, the blocks. */
function messageWriter(warn: WarningSink, emit: Emit) {
  let started = false;
  let ended = false;
  let usage: IrUsage = ZERO_USAGE;
  const blocks = blockWriter(emit, warn);

  /** message-start carries no usage, so it goes out as soon as the id is known. */
  function begin(id: string): void {
    if (started) return;
    started = true;
    emit({ type: "message-start", id, delta: { message: { role: "assistant" } } });
  }

  function accept(part: IrStreamPart): void {
    if (ended) return;
    switch (part.type) {
      case "start":
        return begin(part.id);
      case "usage":
        usage = mergeUsage(usage, part.usage);
        return;
      case "finish":
        begin(crypto.randomUUID());
        blocks.closeAll();
        emit({ type: "message-end", delta: { finish_reason: finishToWire(part.finishReason, warn), usage: usageToWire(usage, warn) } });
        ended = true;
        return;
      case "error":
        // Cohere has no error event: a failed generation ends with message-end carrying `delta.error`.
        begin(crypto.randomUUID());
        emit({ type: "message-end", delta: { finish_reason: "ERROR", error: part.error.message, usage: usageToWire(usage, warn) } });
        ended = true;
        return;
      default:
        begin(crypto.randomUUID());
        blocks.route(part);
    }
  }

  /** The IR stream stopped with neither finish nor error: end with an error, never a silent cut. */
  function end(): void {
    if (!ended) accept({ type: "error", error: irError("api_error", "the stream ended before the message was complete", { status: 502 }) });
  }

  return { accept, end };
}


/**
 * Blocks onto the wire, one open at a time. Content blocks (text, thinking) and tool calls are numbered
 * apart, each from 0 in opening order, as Cohere numbers them. A block that starts while another is open
 * waits with its own parts (only those) until the open one ends.
 */
function blockWriter(emit: Emit, warn: WarningSink) {
  let nextContent = 0;
  let nextTool = 0;
  let open: { id: string; kind: "text" | "thinking" | "tool" | "skip"; index: number } | undefined;

  const message = (message: object) => ({ message });
  function openContent(id: string, kind: "text" | "thinking"): void {
    open = { id, kind, index: nextContent++ };
    emit({ type: "content-start", index: open.index, delta: message({ content: kind === "text" ? { type: "text", text: "" } : { type: "thinking", thinking: "" } }) });
  }
  function closeBlock(): void {
    if (open?.kind === "text" || open?.kind === "thinking") emit({ type: "content-end", index: open.index });
    else if (open?.kind === "tool") emit({ type: "tool-call-end", index: open.index });
    open = undefined;
  }

  function write(part: BlockPart): void {
    switch (part.type) {
      case "text-start":
        return openContent(part.id, "text");
      case "reasoning-start":
        if (part.redactedData === undefined) return openContent(part.id, "thinking");
        warn("redacted reasoning dropped: Cohere has no field for another vendor's redacted thinking");
        open = { id: part.id, kind: "skip", index: -1 };
        return;
      case "tool-call-start":
        open = { id: part.id, kind: "tool", index: nextTool++ };
        emit({ type: "tool-call-start", index: open.index, delta: message({ tool_calls: { id: part.toolCallId, type: "function", function: { name: part.name, arguments: "" } } }) });
        return;
      case "text-delta":
        if (open?.kind === "text") emit({ type: "content-delta", index: open.index, delta: message({ content: { text: part.delta } }) });
        return;
      case "reasoning-delta":
        if (open?.kind === "thinking") emit({ type: "content-delta", index: open.index, delta: message({ content: { thinking: part.delta } }) });
        return;
      case "reasoning-signature":
        if (open?.kind === "thinking") warn("reasoning signature dropped: Cohere's thinking content has no signature");
        return;
      case "tool-call-delta":
        if (open?.kind === "tool") emit({ type: "tool-call-delta", index: open.index, delta: message({ tool_calls: { function: { arguments: part.argumentsDelta } } }) });
        return;
      default:
        return closeBlock();
    }
  }

  return blockSequence({ openId: () => open?.id, write, closeBlock }, warn);
}
