// Gemini streaming both ways (https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent).
// Every chunk is a whole GenerateContentResponse: with `?alt=sse` each is one `data: <json>` event,
// without it the chunks are the elements of one JSON array written as they come. Parts arrive whole:
// text and thought parts are deltas, a functionCall comes complete in one chunk. The last chunk carries
// the finishReason; usageMetadata rides along (the last one counts). An error after the stream began is
// a final `{"error": {...}}` chunk.
//
// Decoder: upstream bytes -> chunks -> IR parts. Encoder: IR parts -> chunks -> bytes, one chunk per IR
// delta, a tool call's arguments held until it ends (Gemini has no partial arguments). All per-stream
// state lives in the closures.
import { irError, mergeUsage, ZERO_USAGE, type IrError, type IrRequest, type IrStreamPart, type IrUsage } from "../../ir/index.ts";
import { Made } from "../../transport/push-parser.ts";
import { sseParser } from "../../transport/sse.ts";
import { writerTransform } from "../stream-writer.ts";
import type { StreamParser, StreamWriter, WarningSink, WireChunk } from "../types.ts";
import { decodeStreamError, errorBody } from "./errors.ts";
import { candidateOf, carriedSignature, finishFromWire, finishToWire, functionCallPart, signatureOf, usageFromWire, usageToWire } from "./response.ts";
import { GenerateContentResponse, isObject, matches, type Json } from "./schema.ts";
import { jsonString } from "../json-text.ts";

// ---- decoder (upstream -> IR) --------------------------------------------------------------------

const malformed = () => irError("api_error", "upstream sent a malformed stream chunk", { status: 502, failure: "transient" });

/** The decoding state machine of one stream: the open text or thought block, the held finish. */
function chunkDecoder(now: () => number) {
  let started = false;
  let done = false;
  let finishRaw: string | undefined;
  let blocked: string | undefined;
  let calledTools = false;
  let blocks = 0;
  let callCount = 0;
  let open: { id: string; kind: "text" | "reasoning" } | undefined;
  let lastUsage = "";
  let out: IrStreamPart[] = [];

  const nextId = () => `block-${blocks++}`;
  function close(): void {
    if (open) out.push({ type: open.kind === "text" ? "text-end" : "reasoning-end", id: open.id });
    open = undefined;
  }
  function openBlock(kind: "text" | "reasoning"): string {
    if (open?.kind === kind) return open.id;
    close();
    open = { id: nextId(), kind };
    out.push({ type: kind === "text" ? "text-start" : "reasoning-start", id: open.id });
    return open.id;
  }
  /** A signature on a non-thought part: a reasoning block of its own (see response.ts). */
  function signatureBlock(signature: string): void {
    close();
    const id = nextId();
    out.push({ type: "reasoning-start", id }, { type: "reasoning-signature", id, signature }, { type: "reasoning-end", id });
  }

  function onPart(part: Json): void {
    const signature = signatureOf(part);
    const call = part.functionCall;
    if (isObject(call) && typeof call.name === "string") {
      close();
      if (signature) signatureBlock(signature);
      const id = nextId();
      calledTools = true;
      out.push({ type: "tool-call-start", id, toolCallId: typeof call.id === "string" ? call.id : `call_${callCount++}`, name: call.name });
      out.push({ type: "tool-call-delta", id, argumentsDelta: JSON.stringify(isObject(call.args) ? call.args : {}) }, { type: "tool-call-end", id });
      return;
    }
    if (typeof part.text === "string" && part.thought === true) {
      const id = openBlock("reasoning");
      if (part.text !== "") out.push({ type: "reasoning-delta", id, delta: part.text });
      if (signature) out.push({ type: "reasoning-signature", id, signature });
      return;
    }
    if (typeof part.text === "string" && part.text !== "") out.push({ type: "text-delta", id: openBlock("text"), delta: part.text });
    // Other parts (executableCode, inlineData, ...) are not in the IR; a stream has no warning channel.
    if (signature) signatureBlock(signature);
  }

  function onChunk(data: unknown): IrStreamPart[] {
    if (done) return [];
    out = [];
    if (isObject(data) && data.error !== undefined) {
      done = true;
      return [{ type: "error", error: decodeStreamError(data) }];
    }
    if (!matches(GenerateContentResponse, data)) return fail(malformed());
    if (!started) {
      started = true;
      out.push({ type: "start", id: data.responseId ?? "", model: data.modelVersion ?? "", created: Math.floor(now() / 1000) });
    }
    const candidate = data.candidates?.find((c) => (c.index ?? 0) === 0);
    for (const part of candidate?.content?.parts ?? []) onPart(part as Json);
    if (candidate?.finishReason !== undefined) finishRaw = candidate.finishReason;
    if (data.promptFeedback?.blockReason !== undefined) blocked = data.promptFeedback.blockReason;
    const usage = data.usageMetadata ? usageFromWire(data.usageMetadata) : {};
    const key = JSON.stringify(usage);
    if (key !== "{}" && key !== lastUsage) {
      lastUsage = key;
      out.push({ type: "usage", usage });
    }
    return out;
  }

  function fail(error: IrError): IrStreamPart[] {
    done = true;
    return [...out, { type: "error", error }];
  }

  /** Gemini has no end event: the finish is known at the end of the bytes, after the last usage. */
  function onEnd(): IrStreamPart[] {
    if (done) return [];
    out = [];
    if (finishRaw === undefined && blocked === undefined) return fail(irError("api_error", "the upstream stream ended before a finishReason", { status: 502, failure: "transient" }));
    done = true;
    close();
    const finishReason = finishRaw !== undefined ? finishFromWire(finishRaw, calledTools) : { unified: "content_filter" as const, raw: blocked };
    return [...out, { type: "finish", finishReason }];
  }

  return { onChunk, onEnd };
}

/** The upstream's `?alt=sse` form (the gateway always asks for it). */
export function createStreamParser(now: () => number = Date.now): StreamParser {
  const steps = chunkDecoder(now);
  return sseParser<IrStreamPart>({
    onEvent: (event) => {
      let data: unknown;
      try {
        data = JSON.parse(event.data);
      } catch {
        data = undefined;
      }
      return steps.onChunk(data);
    },
    onEnd: () => steps.onEnd(),
  });
}

/**
 * The JSON-array form, for metering a same-protocol `:streamGenerateContent` without alt=sse. A scanner
 * cuts each element out as it completes (strings and escapes tracked, so braces inside text do not
 * count). A segment that starts mid-array (the tail the meter keeps) resumes at the next `{` that opens
 * a line: elements are separated by `,\r\n`, a JSON string cannot hold a raw line break, and a
 * pretty-printed element indents everything nested in it.
 */
export function createArrayStreamParser(now: () => number = Date.now): StreamParser {
  const steps = chunkDecoder(now);
  const text = new TextDecoder();
  let state: "before" | "between" | "element" | "resync" | "after" = "before";
  let element = "";
  let depth = 0;
  let inString = false;
  let escaped = false;
  let previous = "";
  const emitted = new Made<IrStreamPart>();

  function scan(chunk: string): void {
    for (const c of chunk) {
      if (state === "element") {
        element += c;
        if (inString) {
          if (escaped) escaped = false;
          else if (c === "\\") escaped = true;
          else if (c === '"') inString = false;
        } else if (c === '"') inString = true;
        else if (c === "{" || c === "[") depth += 1;
        else if ((c === "}" || c === "]") && --depth === 0) {
          let data: unknown;
          try {
            data = JSON.parse(element);
          } catch {
            data = undefined;
          }
          emitted.add(steps.onChunk(data));
          state = "between";
        }
      } else if (state === "resync") {
        if (previous === "\n" && c === "{") {
          state = "element";
          element = c;
          depth = 1;
        }
        previous = c;
      } else if (state === "before" || state === "between") {
        if (c === " " || c === "\n" || c === "\r" || c === "\t" || c === ",") continue;
        if (state === "before" && c === "[") state = "between";
        else if (c === "{") {
          state = "element";
          element = c;
          depth = 1;
        } else if (c === "]" && state === "between") state = "after";
        else state = "resync";
      }
    }
  }

  return {
    push(chunk) {
      scan(text.decode(chunk, { stream: true }));
      return emitted.take();
    },
    end() {
      scan(text.decode());
      emitted.add(steps.onEnd());
      return emitted.take();
    },
  };
}

// ---- encoder (IR -> client) ----------------------------------------------------------------------

/** How chunks go on the wire: SSE events, or the elements of one JSON array. */
interface Framing {
  /** One chunk, as JSON. */
  chunk(json: string): void;
  /** No chunk follows (the array's `]`). */
  close(): void;
}

function sseFraming(emit: (chunk: WireChunk) => void): Framing {
  // Google separates events with CRLF pairs; the SDK's reader splits on \r\n\r\n as well as \n\n.
  return { chunk: (json) => emit(`data: ${json}\r\n\r\n`), close: () => {} };
}

function arrayFraming(emit: (chunk: WireChunk) => void): Framing {
  let first = true;
  let closed = false;
  return {
    chunk(json) {
      emit(`${first ? "[" : ",\r\n"}${json}`);
      first = false;
    },
    close() {
      if (!closed) emit(first ? "[]" : "]");
      closed = true;
    },
  };
}

/** The state of one client stream: head, usage so far, held tool calls and a signature waiting for its part. */
function chunkWriter(request: IrRequest, warn: WarningSink, frame: Framing): StreamWriter {
  let head = { id: "", model: request.model };
  let usage: IrUsage = ZERO_USAGE;
  let ended = false;
  let pendingSignature: string | undefined;
  /** Thought text so far, per reasoning block: it travels inside the signature (carriedSignature). */
  const thoughts = new Map<string, string>();
  const redacted = new Set<string>();
  const calls = new Map<string, { toolCallId: string; name: string; args: string }>();

  const chunk = (parts: Json[], last?: { finishReason: string }) =>
    frame.chunk(
      JSON.stringify({
        candidates: [candidateOf(parts, last?.finishReason)],
        ...(last && { usageMetadata: usageToWire(usage, warn) }),
        modelVersion: head.model,
        responseId: head.id,
      }),
    );
  /**
   * A text delta's chunk as text around the text's own JSON: the bytes `chunk([{ text }])` writes, its
   * fixed members serialised once per stream (again if a start part names another head).
   */
  let textAfter: string | undefined;
  const textChunk = (text: string) => {
    textAfter ??= `}],"role":"model"},"index":0}],${JSON.stringify({ modelVersion: head.model, responseId: head.id }).slice(1)}`;
    frame.chunk(`{"candidates":[{"content":{"parts":[{"text":${jsonString(text)}${textAfter}`);
  };
  const takeSignature = () => {
    const signature = pendingSignature;
    pendingSignature = undefined;
    return signature === undefined ? {} : { thoughtSignature: signature };
  };
  /** A signature-only reasoning block not followed by a tool call goes out on an empty text part, as Gemini streams it. */
  const flushSignature = () => {
    if (pendingSignature !== undefined) chunk([{ text: "", ...takeSignature() }]);
  };
  function emitCall(id: string): void {
    const call = calls.get(id);
    if (!call) return;
    calls.delete(id);
    chunk([{ ...functionCallPart(call.toolCallId, call.name, call.args, warn), ...takeSignature() }]);
  }
  function finish(finishReason: string): void {
    if (calls.size > 0) warn("stream finished with tool calls still open; sent them as they were");
    for (const id of [...calls.keys()]) emitCall(id);
    chunk(pendingSignature === undefined ? [] : [{ text: "", ...takeSignature() }], { finishReason });
  }
  function stop(): void {
    ended = true;
    frame.close();
  }

  function accept(part: IrStreamPart): void {
    if (ended) return;
    switch (part.type) {
      case "start":
        head = { id: part.id, model: part.model };
        textAfter = undefined;
        return;
      case "usage":
        usage = mergeUsage(usage, part.usage);
        return;
      case "text-start":
        return flushSignature();
      case "reasoning-start":
        flushSignature();
        if (part.redactedData === undefined) return;
        redacted.add(part.id);
        return warn("redacted reasoning dropped: Gemini has no form for it");
      case "text-delta":
        return part.delta === "" ? undefined : textChunk(part.delta);
      case "reasoning-delta":
        if (redacted.has(part.id) || part.delta === "") return;
        thoughts.set(part.id, (thoughts.get(part.id) ?? "") + part.delta);
        return chunk([{ text: part.delta, thought: true }]);
      case "reasoning-signature":
        if (redacted.has(part.id)) return;
        // Goes on the tool call that follows (Gemini clients echo that one), else on an empty part.
        pendingSignature = thoughts.has(part.id) ? carriedSignature(thoughts.get(part.id)!, part.signature) : part.signature;
        return;
      case "tool-call-start":
        calls.set(part.id, { toolCallId: part.toolCallId, name: part.name, args: "" });
        return;
      case "tool-call-delta": {
        const call = calls.get(part.id);
        if (call) call.args += part.argumentsDelta;
        return;
      }
      case "tool-call-end":
        return emitCall(part.id);
      case "text-end":
      case "reasoning-end":
        return;
      case "finish":
        finish(finishToWire(part.finishReason, warn));
        return stop();
      case "error":
        frame.chunk(JSON.stringify(errorBody(part.error)));
        return stop();
    }
  }

  /** The IR stream stopped with neither finish nor error: end with an error chunk, never a silent cut. */
  function end(): void {
    if (!ended) accept({ type: "error", error: irError("api_error", "the stream ended before the response was complete", { status: 502 }) });
  }

  return { accept, end };
}

/** SSE (`:streamGenerateContent?alt=sse`, what the official SDK asks for). */
export function createStreamWriter(request: IrRequest, warn: WarningSink, emit: (chunk: WireChunk) => void): StreamWriter {
  return chunkWriter(request, warn, sseFraming(emit));
}

export function createStreamEncoder(request: IrRequest, warn: WarningSink): TransformStream<IrStreamPart, Uint8Array> {
  return writerTransform((emit) => createStreamWriter(request, warn, emit));
}

/** The same chunks as one streamed JSON array, for clients that call `:streamGenerateContent` without alt=sse. */
export function createArrayStreamWriter(request: IrRequest, warn: WarningSink, emit: (chunk: WireChunk) => void): StreamWriter {
  return chunkWriter(request, warn, arrayFraming(emit));
}

export function createArrayStreamEncoder(request: IrRequest, warn: WarningSink): TransformStream<IrStreamPart, Uint8Array> {
  return writerTransform((emit) => createArrayStreamWriter(request, warn, emit));
}
