// Responses streaming both ways (API reference, https://platform.openai.com/docs/api-reference/responses-streaming):
// typed SSE events, `event: <type>` + `data: {"type": <type>, "sequence_number": n, ...}`. A stream opens
// with response.created and response.in_progress; each output item (message, function_call, reasoning)
// is announced by response.output_item.added, filled by its own deltas and closed by
// response.output_item.done; the stream ends with response.completed, response.incomplete or
// response.failed (or an `error` event).
//
// Decoder: upstream bytes -> SSE events (transport/sse.ts) -> IR parts, event by event. Encoder: IR parts
// -> SSE bytes, written the moment each part arrives. Output items may interleave on the wire (every
// event names its output_index), so IR blocks map onto items one to one, except that consecutive text
// blocks share one message item. All per-stream state lives in the closures.
import { irError, mergeUsage, ZERO_USAGE, type IrError, type IrFinishReason, type IrRequest, type IrStreamPart, type IrUsage } from "../../ir/index.ts";
import { SSE_END, sseHead, sseParser, sseText, type SseEvent } from "../../transport/sse.ts";
import { writerTransform } from "../stream-writer.ts";
import type { StreamParser, StreamWriter, WarningSink, WireChunk } from "../types.ts";
import { decodeFailure, failureOf } from "./errors.ts";
import { finishFromWire, functionCallItem, itemId, messageItemJson, outputTextJson, reasoningItem, reasoningText, responseFrame, statusFromFinish, usageFromWire, usageToWire, warnReasoningLoss } from "./response.ts";
import { check, type OutputItem, type StreamEvent } from "./schema.ts";
import { aroundText, jsonString, textAround, type TextAround } from "../json-text.ts";

// ---- decoder (upstream -> IR) ----

export function createStreamParser(): StreamParser {
  const steps = eventDecoder();
  return sseParser<IrStreamPart>({ onEvent: (event) => steps.onEvent(event), onEnd: () => steps.onEnd() });
}

const upstreamFault = (message: string) => irError("api_error", message, { status: 502, failure: "transient" });

/** An open IR block; `sent` is the text or arguments passed on so far, to check against the `.done` event. */
type Block = { readonly kind: "text" | "reasoning" | "tool"; readonly id: string; sent: string };

/**
 * The decoding state machine of one stream: the open IR block of each output item (text blocks per
 * content part) and whether a function was called (completed then means tool_calls). Events before
 * response.created are still read: the same-protocol usage tap decodes a stream's tail on its own.
 */
function eventDecoder() {
  let started = false;
  let done = false;
  let calledFunction = false;
  const blocks = new Map<string, Block>();
  const key = (event: StreamEvent, content?: boolean) => `${event.output_index ?? event.item_id ?? 0}${content ? `:${event.content_index ?? 0}` : ""}`;

  function open(out: IrStreamPart[], at: string, kind: Block["kind"], item?: OutputItem): Block {
    const found = blocks.get(at);
    if (found) return found;
    const block: Block = { kind, id: `item-${at}`, sent: "" };
    blocks.set(at, block);
    if (kind === "text") out.push({ type: "text-start", id: block.id });
    else if (kind === "reasoning") out.push({ type: "reasoning-start", id: block.id });
    else out.push({ type: "tool-call-start", id: block.id, toolCallId: item?.call_id ?? item?.id ?? "", name: item?.name ?? "" });
    return block;
  }
  function close(out: IrStreamPart[], at: string): void {
    const block = blocks.get(at);
    if (!block) return;
    blocks.delete(at);
    out.push({ type: block.kind === "text" ? "text-end" : block.kind === "reasoning" ? "reasoning-end" : "tool-call-end", id: block.id });
  }
  /** Closes an item's blocks: the item's own, and its text parts (`<index>:<content index>`). */
  function closeItem(out: IrStreamPart[], at: string): void {
    for (const k of [...blocks.keys()]) if (k === at || k.startsWith(`${at}:`)) close(out, k);
  }
  const closeAll = (out: IrStreamPart[]) => [...blocks.keys()].forEach((k) => close(out, k));

  function send(out: IrStreamPart[], block: Block, delta: string): void {
    if (delta === "") return;
    block.sent += delta;
    out.push(block.kind === "tool" ? { type: "tool-call-delta", id: block.id, argumentsDelta: delta } : { type: block.kind === "text" ? "text-delta" : "reasoning-delta", id: block.id, delta });
  }
  /**
   * A `.done` event repeats the whole text: what the deltas left out (a server that sends it only whole,
   * or an elided example) is passed on; a whole that does not extend what was sent is left alone.
   */
  function complete(out: IrStreamPart[], block: Block | undefined, whole: string | null | undefined): void {
    if (block && whole && whole.startsWith(block.sent)) send(out, block, whole.slice(block.sent.length));
  }

  function onItemAdded(event: StreamEvent, out: IrStreamPart[]): void {
    const item = event.item;
    if (item?.type === "function_call") {
      calledFunction = true;
      send(out, open(out, key(event), "tool", item), item.arguments ?? "");
    } else if (item?.type === "reasoning") {
      send(out, open(out, key(event), "reasoning"), reasoningText(item));
    }
    // message: its blocks open per content part; other item kinds (built-in tool calls) are not modelled.
  }

  function finish(response: StreamEvent["response"], out: IrStreamPart[]): void {
    done = true;
    closeAll(out);
    if (response?.usage) out.push({ type: "usage", usage: usageFromWire(response.usage) });
    const called = calledFunction || (response?.output ?? []).some((item) => item.type === "function_call");
    out.push({ type: "finish", finishReason: finishFromWire(response?.status, response?.incomplete_details?.reason, called) });
  }

  function fail(error: IrError): IrStreamPart[] {
    done = true;
    return [{ type: "error", error }];
  }

  function onData(event: StreamEvent, out: IrStreamPart[]): void {
    switch (event.type) {
      case "response.created":
      case "response.in_progress":
      case "response.queued":
        if (!started && event.response) out.push({ type: "start", id: event.response.id ?? "", model: event.response.model ?? "", created: event.response.created_at ?? 0 });
        started = true;
        return;
      case "response.output_item.added":
        return onItemAdded(event, out);
      case "response.content_part.added":
        if (event.part?.type === "output_text" || event.part?.type === "refusal") {
          const text = (event.part as { text?: unknown }).text;
          send(out, open(out, key(event, true), "text"), typeof text === "string" ? text : "");
        }
        return;
      case "response.output_text.delta":
      case "response.refusal.delta":
        return send(out, open(out, key(event, true), "text"), event.delta ?? "");
      case "response.output_text.done":
        return complete(out, blocks.get(key(event, true)), event.text);
      case "response.content_part.done":
        if (blocks.get(key(event, true))?.kind === "text") close(out, key(event, true));
        return;
      case "response.reasoning_summary_part.added": {
        // Summary parts join with a blank line, as a whole response's reasoning does (response.ts).
        const block = blocks.get(key(event));
        if (block?.kind === "reasoning" && (event.summary_index ?? 0) > 0) send(out, block, "\n\n");
        return;
      }
      case "response.reasoning_summary_text.delta":
      case "response.reasoning_text.delta":
        return send(out, open(out, key(event), "reasoning"), event.delta ?? "");
      case "response.function_call_arguments.delta": {
        const block = blocks.get(key(event));
        if (block?.kind === "tool") send(out, block, event.delta ?? "");
        return;
      }
      case "response.function_call_arguments.done": {
        const block = blocks.get(key(event));
        return complete(out, block?.kind === "tool" ? block : undefined, event.arguments);
      }
      case "response.output_item.done":
        return closeItem(out, key(event));
      case "response.completed":
      case "response.incomplete":
        return finish(event.response, out);
      case "response.failed":
        out.push(...fail(decodeFailure(event.response?.error)));
        return;
      case "error":
        out.push(...fail(decodeFailure(event)));
        return;
      default:
      // refusal.done, annotations, reasoning summary .done events (their parts were joined), built-in
      // tool progress, and event types added later: nothing the IR carries.
    }
  }

  function onEvent(event: SseEvent): IrStreamPart[] {
    if (done) return [];
    let data: unknown;
    try {
      data = JSON.parse(event.data);
    } catch {
      return fail(upstreamFault("the upstream stream sent an event that is not JSON"));
    }
    if (!check.event.Check(data)) return fail(upstreamFault(`upstream sent a malformed ${event.event ?? "unnamed"} event`));
    const out: IrStreamPart[] = [];
    onData(data, out);
    return out;
  }

  function onEnd(): IrStreamPart[] {
    if (done) return [];
    done = true;
    const out: IrStreamPart[] = [];
    closeAll(out);
    out.push({ type: "error", error: upstreamFault("the upstream stream ended before response.completed") });
    return out;
  }

  return { onEvent, onEnd };
}

// ---- encoder (IR -> client) ----

export function createStreamEncoder(request: IrRequest, warn: WarningSink): TransformStream<IrStreamPart, Uint8Array> {
  return writerTransform((emit) => createStreamWriter(request, warn, emit));
}

type Item =
  | { kind: "message"; id: string; index: number; texts: string[]; textJson: string[]; openParts: number; closed: boolean }
  | { kind: "function_call"; id: string; index: number; callId: string; name: string; args: string; closed: boolean }
  | { kind: "reasoning"; id: string; index: number; text: string; partOpen: boolean; closed: boolean };
/** Where an IR block went: its item, its content index, and its delta events' fixed text (deltaTemplate), made on the first delta. */
type Placed = { item: Item; contentIndex: number; template?: TextAround };

const EMPTY_OUTPUT_TEXT = outputTextJson('""');
const json = (value: object | null | undefined) => (value == null ? "null" : JSON.stringify(value));

/**
 * The state of one client stream: the response head, every output item by output_index (with what it
 * holds so far: the done events and the final response repeat it whole), and where each IR block went.
 */
export function createStreamWriter(request: IrRequest, warn: WarningSink, emitText: (chunk: WireChunk) => void): StreamWriter {
  let sequence = 0;
  let head: { id: string; model: string; created: number } | undefined;
  let usage: IrUsage = ZERO_USAGE;
  let ended = false;
  let warnedSignature = false;
  const items: Item[] = [];
  /** Each closed item's JSON by output_index: written in its done event, and again in the final response's output. */
  const finalItems: string[] = [];
  const placed = new Map<string, Placed>();

  // The event's members serialised around `data`'s own (the bytes of JSON.stringify({type, ...data,
  // sequence_number})): spreading data into a new object per event was a copy of every member.
  const emit = (type: string, data: Record<string, unknown>) => {
    const members = JSON.stringify(data);
    emitMembers(type, members.length > 2 ? members.slice(1, -1) : "");
  };
  /** An event from its members' JSON text (no braces), for members already serialised (an item, a text). */
  const emitMembers = (type: string, members: string) => emitText(sseText(`{"type":"${type}",${members === "" ? "" : `${members},`}"sequence_number":${sequence++}}`, type));
  /**
   * A delta event as text around the delta's own JSON: its other members are the same for every delta of
   * one item, so they are serialised once per item (the bytes are what `emit` writes: same members, same order).
   */
  const deltaTemplate = (type: string, where: Record<string, unknown>, after: string): TextAround => textAround(`${sseHead(type)}${JSON.stringify({ type, ...where, delta: "" }).slice(0, -3)}`, `${after},"sequence_number":`);
  const emitDelta = (around: TextAround, delta: string) => emitText(`${aroundText(around, delta)}${sequence++}}${SSE_END}`);
  /**
   * The response object a stream event carries, as JSON text: its fixed members serialised once, the first
   * time (responseFrame), and the members that change written between them (the same bytes as
   * JSON.stringify of the whole object).
   */
  let frame: readonly string[] | undefined;
  const responseText = (status: string, extra: { usage?: IrUsage; incompleteDetails?: { reason: string } | null; error?: { code: string; message: string } } = {}) => {
    frame ??= responseFrame({ id: head?.id ?? "", model: head?.model ?? request.model, created: head?.created ?? 0 }, request);
    const output = `[${finalItems.filter((i) => i !== undefined).join(",")}]`;
    // Most members are null until the last event: written as such, not each through JSON.stringify.
    const changing = [jsonString(status), json(extra.error), json(extra.incompleteDetails), output, extra.usage ? JSON.stringify(usageToWire(extra.usage)) : "null"];
    let text = frame[0]!;
    for (let i = 0; i < changing.length; i++) text += changing[i]! + frame[i + 1]!;
    return text;
  };
  const responseEvent = (type: string, response: string) => emitText(sseText(`{"type":"${type}","response":${response},"sequence_number":${sequence++}}`, type));

  function begin(start?: { id: string; model: string; created: number }): void {
    if (head) return;
    head = start ?? { id: "resp_gateway", model: request.model, created: 0 };
    // The two events carry the same response: serialised once (the bytes are what `emit` writes).
    const response = responseText("in_progress");
    for (const type of ["response.created", "response.in_progress"]) responseEvent(type, response);
  }

  /** `announced`: the item's JSON as it opens. */
  function addItem(item: Item, announced: string): void {
    items.push(item);
    emitMembers("response.output_item.added", `"output_index":${item.index},"item":${announced}`);
  }
  /** `final`: the item's JSON, serialised once for its done event and the final response. */
  function doneItem(item: Item, final: string): void {
    item.closed = true;
    finalItems[item.index] = final;
    emitMembers("response.output_item.done", `"output_index":${item.index},"item":${final}`);
  }
  const closeMessage = (m: Extract<Item, { kind: "message" }>) => doneItem(m, messageItemJson(m.id, "completed", m.textJson));
  /** A message whose parts are all done is closed once another item starts (until then more text may join it). */
  function closeIdleMessages(): void {
    for (const item of items) if (item.kind === "message" && !item.closed && item.openParts === 0) closeMessage(item);
  }
  const nextId = (prefix: string) => itemId(prefix, head?.id ?? "", items.length);

  function textStart(id: string): void {
    const last = items.at(-1);
    let message = last?.kind === "message" && !last.closed && last.openParts === 0 ? last : undefined;
    if (!message) {
      closeIdleMessages();
      message = { kind: "message", id: nextId("msg"), index: items.length, texts: [], textJson: [], openParts: 0, closed: false };
      addItem(message, messageItemJson(message.id, "in_progress", []));
    }
    const contentIndex = message.texts.push("") - 1;
    message.openParts += 1;
    placed.set(id, { item: message, contentIndex });
    emitMembers("response.content_part.added", `"item_id":${jsonString(message.id)},"output_index":${message.index},"content_index":${contentIndex},"part":${EMPTY_OUTPUT_TEXT}`);
  }

  function blockStart(part: Extract<IrStreamPart, { type: "tool-call-start" | "reasoning-start" }>): void {
    closeIdleMessages();
    if (part.type === "tool-call-start") {
      const item: Item = { kind: "function_call", id: nextId("fc"), index: items.length, callId: part.toolCallId, name: part.name, args: "", closed: false };
      placed.set(part.id, { item, contentIndex: 0 });
      return addItem(item, JSON.stringify(functionCallItem(item.id, "in_progress", item.callId, item.name, "")));
    }
    if (part.redactedData !== undefined) return warnReasoningLoss(part, warn);
    const item: Item = { kind: "reasoning", id: nextId("rs"), index: items.length, text: "", partOpen: false, closed: false };
    placed.set(part.id, { item, contentIndex: 0 });
    addItem(item, JSON.stringify(reasoningItem(item.id, "")));
  }

  function delta(id: string, text: string): void {
    const at = placed.get(id);
    if (!at) return;
    const { item, contentIndex } = at;
    if (item.kind === "message") {
      item.texts[contentIndex] += text;
      emitDelta((at.template ??= deltaTemplate("response.output_text.delta", { item_id: item.id, output_index: item.index, content_index: contentIndex }, ',"logprobs":[]')), text);
    } else if (item.kind === "function_call") {
      item.args += text;
      emitDelta((at.template ??= deltaTemplate("response.function_call_arguments.delta", { item_id: item.id, output_index: item.index }, "")), text);
    } else {
      const where = { item_id: item.id, output_index: item.index };
      if (!item.partOpen) emit("response.reasoning_summary_part.added", { ...where, summary_index: 0, part: { type: "summary_text", text: "" } });
      item.partOpen = true;
      item.text += text;
      emit("response.reasoning_summary_text.delta", { ...where, summary_index: 0, delta: text });
    }
  }

  function blockEnd(id: string): void {
    const at = placed.get(id);
    if (!at) return;
    placed.delete(id);
    const { item, contentIndex } = at;
    if (item.kind === "message") {
      // The whole text is in three events and the final response: its JSON is written once for all of them.
      const text = (item.textJson[contentIndex] = jsonString(item.texts[contentIndex] ?? ""));
      const members = `"item_id":${jsonString(item.id)},"output_index":${item.index},"content_index":${contentIndex}`;
      emitMembers("response.output_text.done", `${members},"text":${text},"logprobs":[]`);
      emitMembers("response.content_part.done", `${members},"part":${outputTextJson(text)}`);
      item.openParts -= 1;
      if (item.openParts === 0 && items.at(-1) !== item) closeMessage(item);
      return;
    }
    const where = { item_id: item.id, output_index: item.index };
    if (item.kind === "function_call") {
      emit("response.function_call_arguments.done", { ...where, name: item.name, arguments: item.args });
      doneItem(item, JSON.stringify(functionCallItem(item.id, "completed", item.callId, item.name, item.args)));
    } else {
      if (item.partOpen) {
        emit("response.reasoning_summary_text.done", { ...where, summary_index: 0, text: item.text });
        emit("response.reasoning_summary_part.done", { ...where, summary_index: 0, part: { type: "summary_text", text: item.text } });
      }
      doneItem(item, JSON.stringify(reasoningItem(item.id, item.text)));
    }
  }

  function finish(reason: IrFinishReason): void {
    if (placed.size > 0) warn("stream finished with output items still open; closed them");
    for (const id of [...placed.keys()]) blockEnd(id);
    closeIdleMessages();
    const { status, incomplete_details } = statusFromFinish(reason, warn);
    responseEvent(status === "completed" ? "response.completed" : "response.incomplete", responseText(status, { usage, incompleteDetails: incomplete_details }));
  }

  function accept(part: IrStreamPart): void {
    if (ended) return;
    if (part.type === "error") {
      ended = true;
      begin();
      responseEvent("response.failed", responseText("failed", { error: failureOf(part.error, warn) }));
      return;
    }
    begin(part.type === "start" ? part : undefined);
    switch (part.type) {
      case "text-start":
        return textStart(part.id);
      case "tool-call-start":
      case "reasoning-start":
        return blockStart(part);
      case "text-delta":
      case "reasoning-delta":
        return delta(part.id, part.delta);
      case "tool-call-delta":
        return delta(part.id, part.argumentsDelta);
      case "reasoning-signature":
        if (!warnedSignature) warnReasoningLoss(part, warn);
        warnedSignature = true;
        return;
      case "text-end":
      case "tool-call-end":
      case "reasoning-end":
        return blockEnd(part.id);
      case "usage":
        usage = mergeUsage(usage, part.usage);
        return;
      case "finish":
        ended = true;
        return finish(part.finishReason);
      default:
      // start: handled by begin
    }
  }

  return {
    accept,
    /** The IR stream stopped with neither finish nor error: fail the response, never end it as if complete. */
    end() {
      if (!ended) accept({ type: "error", error: irError("api_error", "the stream ended before the response was complete", { status: 502 }) });
    },
  };
}
