// Bedrock ConverseStream both ways (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html):
// AWS event-stream frames (transport/eventstream.ts), each `:message-type: event` with `:event-type`
// naming a ConverseStreamOutput member and a JSON payload: messageStart, then per content block an
// optional contentBlockStart (tool use only), contentBlockDelta..., contentBlockStop, then messageStop
// and metadata (usage, metrics). A failure is a frame with `:message-type: exception`.
//
// Decoder: bytes -> frames -> IR parts in one pass; the finish is held until metadata (which follows
// messageStop) so usage precedes it. Encoder: IR parts -> frames, one content block open at a time
// (blocks that start while another is open wait, with only their own parts held), as Bedrock streams.
import { irError, mergeUsage, ZERO_USAGE, type IrError, type IrFinishReason, type IrRequest, type IrStreamPart, type IrUsage } from "../../ir/index.ts";
import { encodeEventStreamMessage, EventStreamError, EventStreamReader, type EventStreamMessage } from "../../transport/eventstream.ts";
import { writerTransform } from "../stream-writer.ts";
import { Made } from "../../transport/push-parser.ts";
import type { StreamParser, StreamWriter, WarningSink } from "../types.ts";
import { decodeStreamException, streamException } from "./errors.ts";
import { finishFromStopReason, stopReasonFromFinish, usageFromWire, usageToWire } from "./response.ts";
import {
  ContentBlockDeltaEvent,
  ContentBlockStartEvent,
  ContentBlockStopEvent,
  MessageStopEvent,
  MetadataEvent,
  ToolUseBlockDelta,
  ToolUseBlockStart,
  isObject,
  matches,
  type TokenUsage,
} from "./schema.ts";
import { blockSequence, type BlockPart } from "../block-sequence.ts";

export const EVENTSTREAM_HEADERS = { "content-type": "application/vnd.amazon.eventstream" } as const;

// ---- decoder (upstream -> IR) --------------------------------------------------------------------

const utf8 = new TextDecoder();
const transient = (message: string) => irError("api_error", message, { status: 502, failure: "transient" });
const blockId = (index: number) => `block-${index}`;

export function createStreamParser(now: () => number = Date.now, newId: () => string = () => `bedrock-${crypto.randomUUID()}`): StreamParser {
  const frames = new EventStreamReader();
  const steps = frameDecoder(now, newId);
  const framingFailed = (error: unknown) => {
    if (!(error instanceof EventStreamError)) throw error;
    return steps.fail(transient(`upstream sent a malformed event stream: ${error.message}`));
  };
  const made = new Made<IrStreamPart>();
  const onMessage = (message: EventStreamMessage) => made.add(steps.onMessage(message));
  return {
    push(chunk) {
      if (!steps.done()) {
        try {
          frames.push(chunk, onMessage);
        } catch (error) {
          made.add(framingFailed(error));
        }
      }
      return made.take();
    },
    end() {
      try {
        frames.end();
        return steps.onEnd();
      } catch (error) {
        return steps.done() ? [] : framingFailed(error);
      }
    },
  };
}

type BlockKind = "text" | "reasoning" | "tool" | "skip";

/** The decoding state of one stream: the kind of each open block, the held finish. */
function frameDecoder(now: () => number, newId: () => string) {
  let done = false;
  let started = false;
  let finish: IrFinishReason | undefined;
  const kinds = new Map<number, BlockKind>();

  const fail = (error: IrError): IrStreamPart[] => {
    if (done) return [];
    done = true;
    return [{ type: "error", error }];
  };
  /** The start part, once, before whatever comes first (a stream without messageStart still gets one). */
  const head = (): IrStreamPart[] => {
    if (started) return [];
    started = true;
    return [{ type: "start", id: newId(), model: "", created: Math.floor(now() / 1000) }];
  };
  /** `parts` after the start part, if none went out yet (no copy once one has: a delta's parts come as they are). */
  const headed = (parts: IrStreamPart[]): IrStreamPart[] => (started ? parts : [...head(), ...parts]);

  function onMessage(message: EventStreamMessage): IrStreamPart[] {
    if (done) return [];
    const type = message.headers[":message-type"];
    const text = utf8.decode(message.payload);
    if (type === "exception") return fail(decodeStreamException(String(message.headers[":exception-type"] ?? "internalServerException"), text));
    if (type === "error") return fail(transient(`upstream stream error ${String(message.headers[":error-code"] ?? "")}: ${String(message.headers[":error-message"] ?? "")}`.trim()));
    const event = String(message.headers[":event-type"] ?? "");
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      return fail(transient(`upstream sent a malformed ${event || "unnamed"} event`));
    }
    const malformed = () => fail(transient(`upstream sent a malformed ${event} event`));
    switch (event) {
      case "messageStart":
        return head();
      case "contentBlockStart":
        return matches(ContentBlockStartEvent, data) ? headed(onBlockStart(data.contentBlockIndex, data.start)) : malformed();
      case "contentBlockDelta":
        return matches(ContentBlockDeltaEvent, data) ? headed(onBlockDelta(data.contentBlockIndex, data.delta)) : malformed();
      case "contentBlockStop":
        return matches(ContentBlockStopEvent, data) ? onBlockStop(data.contentBlockIndex) : malformed();
      case "messageStop":
        if (!matches(MessageStopEvent, data)) return malformed();
        finish = finishFromStopReason(data.stopReason);
        return head();
      case "metadata":
        if (!matches(MetadataEvent, data)) return malformed();
        return [...head(), ...usagePart(data.usage), ...finished()];
      default:
        // Event types added later: the SDK skips members it does not know, and so does this.
        return [];
    }
  }

  function onBlockStart(index: number, start: Record<string, unknown>): IrStreamPart[] {
    if (matches(ToolUseBlockStart, start.toolUse)) {
      kinds.set(index, "tool");
      return [{ type: "tool-call-start", id: blockId(index), toolCallId: start.toolUse.toolUseId, name: start.toolUse.name }];
    }
    // image and toolResult blocks (generated images, server-side tool results): not in the IR.
    kinds.set(index, "skip");
    return [];
  }

  /** Text and reasoning blocks have no contentBlockStart: their first delta opens them. */
  function onBlockDelta(index: number, delta: Record<string, unknown>): IrStreamPart[] {
    const id = blockId(index);
    const kind = kinds.get(index);
    if (kind === "skip") return [];
    if (typeof delta.text === "string") {
      const open: IrStreamPart[] = kind === undefined ? [{ type: "text-start", id }] : [];
      kinds.set(index, kind ?? "text");
      return kind === undefined || kind === "text" ? [...open, { type: "text-delta", id, delta: delta.text }] : [];
    }
    if (isObject(delta.reasoningContent)) {
      const reasoning = delta.reasoningContent;
      if (kind === undefined) {
        kinds.set(index, "reasoning");
        if (typeof reasoning.redactedContent === "string") return [{ type: "reasoning-start", id, redactedData: reasoning.redactedContent }];
        return [{ type: "reasoning-start", id }, ...reasoningDelta(id, reasoning)];
      }
      return kind === "reasoning" ? reasoningDelta(id, reasoning) : [];
    }
    if (kind === "tool" && matches(ToolUseBlockDelta, delta.toolUse)) return [{ type: "tool-call-delta", id, argumentsDelta: delta.toolUse.input }];
    // citation and image deltas, toolResult deltas: not in the IR.
    return [];
  }

  function reasoningDelta(id: string, reasoning: Record<string, unknown>): IrStreamPart[] {
    if (typeof reasoning.text === "string") return [{ type: "reasoning-delta", id, delta: reasoning.text }];
    if (typeof reasoning.signature === "string") return [{ type: "reasoning-signature", id, signature: reasoning.signature }];
    return [];
  }

  function onBlockStop(index: number): IrStreamPart[] {
    const kind = kinds.get(index);
    kinds.delete(index);
    const id = blockId(index);
    if (kind === "text") return [{ type: "text-end", id }];
    if (kind === "reasoning") return [{ type: "reasoning-end", id }];
    if (kind === "tool") return [{ type: "tool-call-end", id }];
    return [];
  }

  function usagePart(usage: TokenUsage | undefined): IrStreamPart[] {
    const counts = usage ? usageFromWire(usage) : {};
    return Object.keys(counts).length > 0 ? [{ type: "usage", usage: counts }] : [];
  }

  function finished(): IrStreamPart[] {
    if (!finish) return [];
    done = true;
    return [{ type: "finish", finishReason: finish }];
  }

  /** At the end: a held finish (no metadata came) goes out; a stream cut before messageStop says so. */
  function onEnd(): IrStreamPart[] {
    if (done) return [];
    return finish ? finished() : fail(transient("the upstream stream ended before messageStop"));
  }

  return { onMessage, onEnd, fail, done: () => done };
}

// ---- encoder (IR -> client) ----------------------------------------------------------------------

type Emit = (event: string, payload: object) => void;
const utf8Out = new TextEncoder();

export function createStreamEncoder(request: IrRequest, warn: WarningSink): TransformStream<IrStreamPart, Uint8Array> {
  return writerTransform((emit) => createStreamWriter(request, warn, emit));
}

/** One frame as Bedrock writes it: `:event-type`, `:content-type`, `:message-type` headers, a JSON payload. */
export const eventFrame = (event: string, payload: object) =>
  encodeEventStreamMessage({ ":event-type": event, ":content-type": "application/json", ":message-type": "event" }, utf8Out.encode(JSON.stringify(payload)));

export const exceptionFrame = (error: IrError) => {
  const { type, body } = streamException(error);
  return encodeEventStreamMessage({ ":exception-type": type, ":content-type": "application/json", ":message-type": "exception" }, utf8Out.encode(JSON.stringify(body)));
};

export function createStreamWriter(_request: IrRequest, warn: WarningSink, emit: (bytes: Uint8Array) => void, now: () => number = Date.now): StreamWriter {
  const began = now();
  let started = false;
  let ended = false;
  let usage: IrUsage = ZERO_USAGE;
  const frame: Emit = (event, payload) => emit(eventFrame(event, payload));
  const blocks = blockWriter(frame, warn);

  const announce = () => {
    if (started) return;
    started = true;
    frame("messageStart", { role: "assistant" });
  };

  function accept(part: IrStreamPart): void {
    if (ended) return;
    switch (part.type) {
      case "start":
        return announce();
      case "usage":
        usage = mergeUsage(usage, part.usage);
        return;
      case "finish":
        announce();
        blocks.closeAll();
        frame("messageStop", { stopReason: stopReasonFromFinish(part.finishReason, warn) });
        // The IR carries no upstream latency; the stream's own duration stands in for it.
        frame("metadata", { usage: usageToWire(usage, warn), metrics: { latencyMs: Math.max(0, now() - began) } });
        ended = true;
        return;
      case "error":
        ended = true;
        emit(exceptionFrame(part.error));
        return;
      default:
        announce();
        blocks.route(part);
    }
  }

  /** The IR stream stopped with neither finish nor error: end with an exception frame, never a silent cut. */
  function end(): void {
    if (!ended) accept({ type: "error", error: irError("api_error", "the stream ended before the message was complete", { status: 502 }) });
  }

  return { accept, end };
}


/**
 * Content blocks onto the wire, one open at a time, with contentBlockIndex allocated in opening order. A
 * block that starts while another is open waits with its own parts (only those) until the open one ends.
 */
function blockWriter(frame: Emit, warn: WarningSink) {
  let nextIndex = 0;
  let open: { id: string; index: number; redacted: boolean } | undefined;

  const openBlock = (id: string, redacted = false) => (open = { id, index: nextIndex++, redacted });
  const delta = (delta: object) => open && frame("contentBlockDelta", { contentBlockIndex: open.index, delta });
  function closeBlock(): void {
    if (open) frame("contentBlockStop", { contentBlockIndex: open.index });
    open = undefined;
  }

  function write(part: BlockPart): void {
    switch (part.type) {
      case "text-start":
        openBlock(part.id);
        return;
      case "reasoning-start":
        openBlock(part.id, part.redactedData !== undefined);
        if (part.redactedData !== undefined) delta({ reasoningContent: { redactedContent: part.redactedData } });
        return;
      case "tool-call-start": {
        const { index } = openBlock(part.id);
        frame("contentBlockStart", { contentBlockIndex: index, start: { toolUse: { toolUseId: part.toolCallId, name: part.name } } });
        return;
      }
      case "text-delta":
        delta({ text: part.delta });
        return;
      case "reasoning-delta":
        if (!open?.redacted) delta({ reasoningContent: { text: part.delta } });
        return;
      case "reasoning-signature":
        if (!open?.redacted) delta({ reasoningContent: { signature: part.signature } });
        return;
      case "tool-call-delta":
        delta({ toolUse: { input: part.argumentsDelta } });
        return;
      default:
        closeBlock();
    }
  }

  return blockSequence({ openId: () => open?.id, write, closeBlock }, warn);
}
