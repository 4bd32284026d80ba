// Anthropic streaming both ways (https://platform.claude.com/docs/en/build-with-claude/streaming):
// `event: <name>` + `data: <json>` SSE: message_start, then per content block content_block_start,
// content_block_delta..., content_block_stop, then message_delta and message_stop; ping anywhere; error.
//
// Decoder: upstream bytes -> SSE events (transport/sse.ts) -> IR parts, event by event. Encoder: IR parts
// -> SSE bytes. Anthropic has one open content block at a time; the IR lets blocks interleave (an OpenAI
// upstream streams several tool calls at once), so a block that starts while another is open waits, and
// only its own parts are held, until the open block ends. All per-stream state lives in the closures.
import { estimateTokens, requestTextSize } from "../../ir/estimate.ts";
import { inputTotal, irError, mergeUsage, ZERO_USAGE, type IrError, type IrFinishReason, type IrRequest, type IrStreamPart, type IrUsage } from "../../ir/index.ts";
import { SSE_END, sseHead, sseParser, sseText, type SseEvent } from "../../transport/sse.ts";
import { writerTransform } from "../stream-writer.ts";
import type { StreamParser, StreamWriter, WarningSink, WireChunk } from "../types.ts";
import { decodeStreamError, errorBody } from "./errors.ts";
import { finishFromStopReason, stopReasonFromFinish, usageFromWire, usageToWire } from "./response.ts";
import {
  ContentBlockDeltaEvent,
  ContentBlockStartEvent,
  ContentBlockStopEvent,
  InputJsonDelta,
  MessageDeltaEvent,
  MessageStartEvent,
  RedactedThinkingBlock,
  SignatureDelta,
  TextBlock,
  TextDelta,
  ThinkingBlockStart,
  ThinkingDelta,
  ToolUseBlock,
  matches,
  type WireUsage,
} from "./schema.ts";
import { blockSequence, type BlockPart } from "../block-sequence.ts";
import { aroundText, textAround, type TextAround } from "../json-text.ts";

// ---- decoder (upstream -> IR) --------------------------------------------------------------------

export function createStreamParser(now: () => number = Date.now): StreamParser {
  const steps = eventDecoder(now);
  return sseParser<IrStreamPart>({ onEvent: (event) => steps.onEvent(event), onEnd: () => steps.onEnd() });
}

type BlockKind = "text" | "reasoning" | "tool" | "skip";
const malformed = (what: string) => irError("api_error", `upstream sent a malformed ${what} event`, { status: 502, failure: "transient" });
const blockId = (index: number) => `block-${index}`;

const TEXT_DELTA_HEAD = '{"type":"content_block_delta","index":';
const TEXT_DELTA_MID = ',"delta":{"type":"text_delta","text":"';
const TEXT_DELTA_TAIL = '"}}';
const BLOCK_INDEX = /^(?:0|[1-9]\d{0,8})$/;
/** What JSON would read differently from the text as written: escapes, quotes (the string would end there), and controls (not JSON). */
const NOT_PLAIN = /["\\\u0000-\u001f]/;

/**
 * A text delta event as Anthropic writes it (members in its order, no spaces) whose text has nothing JSON
 * reads differently from its characters: its index and text by slicing, the same values JSON.parse and the
 * schema check give. Most of a stream's events are these; slicing costs about what JSON.parse does, and
 * what it saves is the parsed objects and their two schema checks (docs/performance.md, fifth round). Any
 * other layout, or a text with an escape, goes the general way (undefined).
 */
export function plainTextDelta(data: string): { index: number; text: string } | undefined {
  if (!data.startsWith(TEXT_DELTA_HEAD) || !data.endsWith(TEXT_DELTA_TAIL)) return undefined;
  const mid = data.indexOf(TEXT_DELTA_MID, TEXT_DELTA_HEAD.length);
  const from = mid + TEXT_DELTA_MID.length;
  const to = data.length - TEXT_DELTA_TAIL.length;
  // The text's closing quote must not be the one that opened it (`..."text":"}}` is not JSON).
  if (mid < 0 || from > to) return undefined;
  const index = data.slice(TEXT_DELTA_HEAD.length, mid);
  const text = data.slice(from, to);
  if (!BLOCK_INDEX.test(index) || NOT_PLAIN.test(text)) return undefined;
  return { index: Number(index), text };
}

/** The decoding state machine of one stream: the kind and IR id of each open wire block, and the held finish. */
function eventDecoder(now: () => number) {
  let done = false;
  let finish: IrFinishReason = { unified: "other" };
  /** Each open wire block's kind and IR id, by index: the id is made once per block, not per delta. */
  const blocks = new Map<number, { readonly kind: BlockKind; readonly id: string }>();

  const fail = (error: IrError): IrStreamPart[] => {
    done = true;
    return [{ type: "error", error }];
  };

  function onEvent(event: SseEvent): IrStreamPart[] {
    if (done) return [];
    const plain = event.event === "content_block_delta" ? plainTextDelta(event.data) : undefined;
    if (plain !== undefined) return onTextDelta(plain.index, plain.text);
    let data: unknown;
    try {
      data = JSON.parse(event.data);
    } catch {
      return fail(malformed(event.event ?? "unnamed"));
    }
    switch (event.event ?? (data as { type?: unknown } | null)?.type) {
      case "message_start":
        return matches(MessageStartEvent, data) ? onMessageStart(data) : fail(malformed("message_start"));
      case "content_block_start":
        return matches(ContentBlockStartEvent, data) ? onBlockStart(data.index, data.content_block) : fail(malformed("content_block_start"));
      case "content_block_delta":
        return matches(ContentBlockDeltaEvent, data) ? onBlockDelta(data.index, data.delta) : fail(malformed("content_block_delta"));
      case "content_block_stop":
        return matches(ContentBlockStopEvent, data) ? onBlockStop(data.index) : fail(malformed("content_block_stop"));
      case "message_delta":
        if (!matches(MessageDeltaEvent, data)) return fail(malformed("message_delta"));
        finish = finishFromStopReason(data.delta.stop_reason, data.delta.stop_sequence);
        return usagePart(data.usage);
      case "message_stop":
        done = true;
        return [{ type: "finish", finishReason: finish }];
      case "error":
        return fail(decodeStreamError(data));
      default:
        // ping, and event types added later: the streaming docs ask clients to ignore unknown events.
        return [];
    }
  }

  function onMessageStart(data: { message: { id: string; model: string; usage?: WireUsage } }): IrStreamPart[] {
    return [{ type: "start", id: data.message.id, model: data.message.model, created: Math.floor(now() / 1000) }, ...usagePart(data.message.usage)];
  }

  function onBlockStart(index: number, block: { type: string }): IrStreamPart[] {
    const id = blockId(index);
    const open = (kind: BlockKind) => blocks.set(index, { kind, id });
    if (matches(TextBlock, block)) {
      open("text");
      return [{ type: "text-start", id }, ...(block.text === "" ? [] : [{ type: "text-delta" as const, id, delta: block.text }])];
    }
    if (matches(ThinkingBlockStart, block)) {
      open("reasoning");
      const parts: IrStreamPart[] = [{ type: "reasoning-start", id }];
      if (block.thinking !== "") parts.push({ type: "reasoning-delta", id, delta: block.thinking });
      if (block.signature) parts.push({ type: "reasoning-signature", id, signature: block.signature });
      return parts;
    }
    if (matches(RedactedThinkingBlock, block)) {
      open("reasoning");
      return [{ type: "reasoning-start", id, redactedData: block.data }];
    }
    if (matches(ToolUseBlock, block)) {
      open("tool");
      const input = Object.keys(block.input).length > 0 ? [{ type: "tool-call-delta" as const, id, argumentsDelta: JSON.stringify(block.input) }] : [];
      return [{ type: "tool-call-start", id, toolCallId: block.id, name: block.name }, ...input];
    }
    // server_tool_use, web_search_tool_result, ...: Anthropic-side blocks the IR does not carry.
    open("skip");
    return [];
  }

  /** A text_delta, into whichever block is open at its index (as the wire gives it; a skipped block's are dropped). */
  function onTextDelta(index: number, text: string): IrStreamPart[] {
    const open = blocks.get(index);
    return open === undefined || open.kind === "skip" ? [] : [{ type: "text-delta", id: open.id, delta: text }];
  }

  function onBlockDelta(index: number, delta: { type: string }): IrStreamPart[] {
    const open = blocks.get(index);
    if (open === undefined || open.kind === "skip") return [];
    const id = open.id;
    if (delta.type === "text_delta" && matches(TextDelta, delta)) return onTextDelta(index, delta.text);
    if (delta.type === "input_json_delta" && matches(InputJsonDelta, delta)) return [{ type: "tool-call-delta", id, argumentsDelta: delta.partial_json }];
    if (delta.type === "thinking_delta" && matches(ThinkingDelta, delta)) return [{ type: "reasoning-delta", id, delta: delta.thinking }];
    if (delta.type === "signature_delta" && matches(SignatureDelta, delta)) return [{ type: "reasoning-signature", id, signature: delta.signature }];
    return []; // citations_delta and later delta types
  }

  function onBlockStop(index: number): IrStreamPart[] {
    const open = blocks.get(index);
    blocks.delete(index);
    if (open === undefined) return [];
    const { kind, id } = open;
    if (kind === "text") return [{ type: "text-end", id }];
    if (kind === "reasoning") return [{ type: "reasoning-end", id }];
    if (kind === "tool") return [{ type: "tool-call-end", id }];
    return [];
  }

  function usagePart(usage: WireUsage | undefined): IrStreamPart[] {
    const counts = usage ? usageFromWire(usage) : {};
    return Object.keys(counts).length > 0 ? [{ type: "usage", usage: counts }] : [];
  }

  /** A stream that stops before message_stop (or an error event) was cut short: say so. */
  function onEnd(): IrStreamPart[] {
    return done ? [] : fail(irError("api_error", "the upstream stream ended before message_stop", { status: 502, failure: "transient" }));
  }

  return { onEvent, onEnd };
}

// ---- encoder (IR -> client) ----------------------------------------------------------------------

type Emit = (event: string, data: object) => void;
/** An event whose data is already JSON. */
type EmitJson = (event: string, json: string) => void;

export function createStreamEncoder(request: IrRequest, warn: WarningSink): TransformStream<IrStreamPart, Uint8Array> {
  return writerTransform((emit) => createStreamWriter(request, warn, emit));
}

export function createStreamWriter(request: IrRequest, warn: WarningSink, emit: (chunk: WireChunk) => void): StreamWriter {
  return messageWriter(request, warn, emit);
}

/** The state of one client stream: the message head, usage so far, the open block and the waiting ones. */
function messageWriter(request: IrRequest, warn: WarningSink, emitText: (text: string) => void) {
  const emitJson: EmitJson = (event, json) => emitText(sseText(json, event));
  let head: { id: string; model: string } | undefined;
  let usage: IrUsage = ZERO_USAGE;
  let announced: IrUsage | undefined;
  let ended = false;
  const emit: Emit = (event, data) => emitJson(event, JSON.stringify(data));
  const blocks = blockWriter(emitJson, emitText, warn);

  /**
   * message_start waits for the first block (or the end) so it carries the usage known by then. Anthropic
   * always fills input_tokens there and clients read it there alone (LangChain JS): an upstream that
   * reports input only at the end (OpenAI) has it estimated from the request until then.
   */
  function announce(): void {
    if (announced) return;
    announced = inputTotal(usage) > 0 ? usage : { ...usage, inputNoCache: estimateTokens(requestTextSize(request)) };
    const message = { id: head?.id ?? "msg_gateway", type: "message", role: "assistant", content: [], model: head?.model ?? request.model, stop_reason: null, stop_sequence: null };
    emit("message_start", { type: "message_start", message: { ...message, usage: usageToWire(announced) } });
  }

  /**
   * Output always; input counts only when they changed after message_start (an OpenAI upstream reports
   * them at the end, replacing the estimate). An upstream that never reports input leaves the estimate.
   */
  function deltaUsage(): Record<string, unknown> {
    const wire = usageToWire(usage);
    const inputChanged = announced !== undefined && inputTotal(usage) > 0 && (announced.inputNoCache !== usage.inputNoCache || announced.inputCacheRead !== usage.inputCacheRead || announced.inputCacheWrite !== usage.inputCacheWrite);
    const { output_tokens, output_tokens_details, ...input } = wire;
    return { ...(inputChanged && input), output_tokens, ...(output_tokens_details !== undefined && { output_tokens_details }) };
  }

  function accept(part: IrStreamPart): void {
    if (ended) return;
    switch (part.type) {
      case "start":
        head = { id: part.id, model: part.model };
        return;
      case "usage":
        usage = mergeUsage(usage, part.usage);
        return;
      case "finish":
        announce();
        blocks.closeAll();
        emit("message_delta", { type: "message_delta", delta: { stop_reason: stopReasonFromFinish(part.finishReason, warn), stop_sequence: part.finishReason.stopSequence ?? null }, usage: deltaUsage() });
        emit("message_stop", { type: "message_stop" });
        ended = true;
        return;
      case "error":
        ended = true;
        emit("error", errorBody(part.error));
        return;
      default:
        announce();
        blocks.route(part);
    }
  }

  /** The IR stream stopped with neither finish nor error: end with an error event, never a silent cut. */
  function end(): void {
    if (!ended) accept({ type: "error", error: irError("api_error", "the stream ended before the message was complete", { status: 502 }) });
  }

  return { accept, end };
}


/**
 * Content blocks onto the wire, one open at a time, with wire indices allocated in opening order. A
 * block that starts while another is open waits with its own parts (only those) until the open one ends.
 */
function blockWriter(emitJson: EmitJson, emitText: (text: string) => void, warn: WarningSink) {
  const emit: Emit = (event, data) => emitJson(event, JSON.stringify(data));
  let nextIndex = 0;
  /**
   * `index` is unset while a thinking block after the answer's content waits to see whether it has text.
   * `textAround`: a text delta's event around its text, the same for every delta of the block (textDelta).
   */
  let open: { id: string; index?: number; redacted: boolean; block: object; textAround?: TextAround } | undefined;
  /** A text or tool block went out: thinking after it is shown only if it has text (trailingSignature). */
  let afterContent = false;
  /** A bare signature after content, shown only if a tool call follows (Gemini signs the call's step). */
  let heldSignature: string | undefined;

  function start(): void {
    if (!open || open.index !== undefined) return;
    open.index = nextIndex++;
    emit("content_block_start", { type: "content_block_start", index: open.index, content_block: open.block });
  }
  function openBlock(id: string, block: object, options: { redacted?: boolean; defer?: boolean } = {}): void {
    open = { id, redacted: options.redacted ?? false, block };
    if (!options.defer) start();
  }
  function delta(delta: object): void {
    start();
    if (open) emit("content_block_delta", { type: "content_block_delta", index: open.index, delta });
  }
  /** A text delta's event as text around the text's own JSON: the bytes `delta` writes, its fixed members serialised once per block. */
  function textDelta(text: string): void {
    start();
    if (!open) return;
    open.textAround ??= textAround(`${sseHead("content_block_delta")}{"type":"content_block_delta","index":${open.index},"delta":{"type":"text_delta","text":`, `}}${SSE_END}`);
    emitText(aroundText(open.textAround, text));
  }
  function closeBlock(): void {
    if (open?.index !== undefined) emit("content_block_stop", { type: "content_block_stop", index: open.index });
    open = undefined;
  }
  function dropHeld(): void {
    if (heldSignature === undefined) return;
    heldSignature = undefined;
    warn("a signature after the answer's content dropped: Anthropic clients take thinking only ahead of content");
  }

  function write(part: BlockPart): void {
    switch (part.type) {
      case "text-start":
        afterContent = true;
        dropHeld();
        return openBlock(part.id, { type: "text", text: "" });
      case "reasoning-start":
        if (part.redactedData !== undefined) return openBlock(part.id, { type: "redacted_thinking", data: part.redactedData }, { redacted: true });
        return openBlock(part.id, { type: "thinking", thinking: "", signature: "" }, { defer: afterContent });
      case "tool-call-start":
        afterContent = true;
        if (heldSignature !== undefined) {
          openBlock(`${part.id}-signature`, { type: "thinking", thinking: "", signature: "" });
          delta({ type: "signature_delta", signature: heldSignature });
          closeBlock();
          heldSignature = undefined;
        }
        return openBlock(part.id, { type: "tool_use", id: part.toolCallId, name: part.name, input: {} });
      case "text-delta":
        return textDelta(part.delta);
      case "reasoning-delta":
        return open?.redacted ? undefined : delta({ type: "thinking_delta", thinking: part.delta });
      case "reasoning-signature":
        if (open?.redacted) return;
        if (open?.index === undefined) {
          heldSignature = part.signature;
          return;
        }
        return delta({ type: "signature_delta", signature: part.signature });
      case "tool-call-delta":
        return delta({ type: "input_json_delta", partial_json: part.argumentsDelta });
      default:
        return closeBlock();
    }
  }

  const sequence = blockSequence({ openId: () => open?.id, write, closeBlock }, warn);
  return {
    route: sequence.route,
    closeAll(): void {
      sequence.closeAll();
      dropHeld();
    },
  };
}
