// GenerateContentResponse <-> IR response, plus what the request and stream codecs share with it: the
// model's parts (text, thoughts, function calls and their thought signatures), the finishReason table
// and the usage split.
//
// Thought signatures: Gemini puts an opaque `thoughtSignature` on a thought part, on the first
// functionCall of a step, or on the last text part, and wants each echoed back on the same part
// (https://ai.google.dev/gemini-api/docs/thought-signatures). The IR carries signatures only on
// reasoning parts, so a signature on a non-thought part becomes a reasoning part of empty text next to
// it: before a tool call, after a text. Encoding puts it back on that part.
import type { Decoded, WarningSink } from "../types.ts";
import { inputTotal, irError, mergeUsage, ZERO_USAGE, type IrFinishReason, type IrFinishUnified, type IrResponse, type IrUsage } from "../../ir/index.ts";
import type { IrAssistantPart } from "../../ir/request.ts";
import { DropLog, FunctionCall, GenerateContentResponse, PartFlags, WireError, checkPartFlags, expectShape, isObject, type Json, type UsageMetadata } from "./schema.ts";

// ---- finish reasons -------------------------------------------------------------------------------

/** Every Candidate.finishReason the SDK's FinishReason enum lists, with its unified meaning. */
const FINISH: Readonly<Record<string, IrFinishUnified>> = {
  STOP: "stop",
  MAX_TOKENS: "length",
  SAFETY: "content_filter",
  RECITATION: "content_filter",
  BLOCKLIST: "content_filter",
  PROHIBITED_CONTENT: "content_filter",
  SPII: "content_filter",
  IMAGE_SAFETY: "content_filter",
  IMAGE_PROHIBITED_CONTENT: "content_filter",
  IMAGE_RECITATION: "content_filter",
  MALFORMED_FUNCTION_CALL: "error",
  UNEXPECTED_TOOL_CALL: "error",
  TOO_MANY_TOOL_CALLS: "error",
  LANGUAGE: "other",
  OTHER: "other",
  IMAGE_OTHER: "other",
  NO_IMAGE: "other",
  FINISH_REASON_UNSPECIFIED: "other",
};

/** Gemini ends a turn of function calls with STOP; the IR (like every other protocol) calls it tool_calls. */
export function finishFromWire(raw: string | undefined, calledTools: boolean): IrFinishReason {
  if (raw === undefined) return { unified: "other" };
  const unified = FINISH[raw] ?? "other";
  return { unified: unified === "stop" && calledTools ? "tool_calls" : unified, raw };
}

const FROM_UNIFIED: Readonly<Partial<Record<IrFinishUnified, string>>> = { stop: "STOP", length: "MAX_TOKENS", tool_calls: "STOP", content_filter: "SAFETY", other: "OTHER" };

/** The finishReason for a finish; Gemini's own word is kept when it came from Gemini. */
export function finishToWire(finish: IrFinishReason, warn: WarningSink): string {
  if (finish.stopSequence !== undefined) warn(`stop sequence ${JSON.stringify(finish.stopSequence)} not reported: Gemini's STOP does not say which one matched`);
  const known = finish.raw === undefined ? undefined : FINISH[finish.raw];
  if (known !== undefined && (known === finish.unified || (finish.unified === "tool_calls" && known === "stop"))) return finish.raw as string;
  const mapped = FROM_UNIFIED[finish.unified];
  if (mapped) return mapped;
  warn(`finish reason ${finish.raw ?? finish.unified} has no Gemini finishReason; sent OTHER`);
  return "OTHER";
}

// ---- usage ------------------------------------------------------------------------------------------

const count = (value: number | null | undefined) => (typeof value === "number" && Number.isFinite(value) ? value : undefined);

/**
 * The counts a usageMetadata states. promptTokenCount includes cachedContentTokenCount; tool-use prompt
 * tokens and thoughts are counted apart from prompt and candidates (totalTokenCount is the sum of all
 * four, per the SDK's GenerateContentResponseUsageMetadata), so they are added to input and output.
 */
export function usageFromWire(usage: UsageMetadata): Partial<IrUsage> {
  const prompt = count(usage.promptTokenCount);
  const cached = count(usage.cachedContentTokenCount);
  const toolUse = count(usage.toolUsePromptTokenCount);
  const candidates = count(usage.candidatesTokenCount);
  const thoughts = count(usage.thoughtsTokenCount);
  const hasInput = prompt !== undefined || toolUse !== undefined;
  const hasOutput = candidates !== undefined || thoughts !== undefined;
  return {
    ...(hasInput && { inputNoCache: Math.max(0, (prompt ?? 0) - (cached ?? 0)) + (toolUse ?? 0) }),
    ...(cached !== undefined && { inputCacheRead: cached }),
    ...(hasOutput && { output: (candidates ?? 0) + (thoughts ?? 0) }),
    ...(thoughts !== undefined && { outputReasoning: thoughts }),
  };
}

/** A usageMetadata. Cache writes have no member of their own; they stay inside promptTokenCount. */
export function usageToWire(usage: IrUsage, warn: WarningSink): Json {
  if (usage.inputCacheWrite > 0) warn("cache-write tokens counted in promptTokenCount: Gemini's usageMetadata has no cache-write count");
  const input = inputTotal(usage);
  return {
    promptTokenCount: input,
    candidatesTokenCount: usage.output - usage.outputReasoning,
    totalTokenCount: input + usage.output,
    ...(usage.inputCacheRead > 0 && { cachedContentTokenCount: usage.inputCacheRead }),
    ...(usage.outputReasoning > 0 && { thoughtsTokenCount: usage.outputReasoning }),
  };
}

export function usageFromResponse(body: unknown): Partial<IrUsage> | undefined {
  const usage = isObject(body) ? body.usageMetadata : undefined;
  return isObject(usage) ? usageFromWire(usage as UsageMetadata) : undefined;
}

// ---- model parts (response content, and model turns in a request) ----------------------------------

/** The IR id of a function call: its own `id`, or one the caller makes up (Gemini 2.x sends none). */
export type CallIdFor = (call: { name: string; id?: string }) => string;

const MODEL_PART_MEMBERS = ["text", "thought", "thoughtSignature", "functionCall"];

/**
 * The signature Google documents for history the model did not produce (another vendor's turns):
 * Gemini 3 answers 400 when a step's first functionCall comes back without any signature
 * (https://ai.google.dev/gemini-api/docs/thought-signatures, FAQ). It signs nothing, so decoding drops it
 * (another vendor would reject it as a signature of its own).
 */
export const FOREIGN_SIGNATURE = "skip_thought_signature_validator";

/** A part's thought signature, if it is a real one. */
export function signatureOf(part: Json): string | undefined {
  const signature = part.thoughtSignature;
  return typeof signature === "string" && signature !== "" && signature !== FOREIGN_SIGNATURE ? signature : undefined;
}

/**
 * Another vendor's signed reasoning shown to a Gemini client (an Anthropic thinking block and its
 * signature). Gemini clients drop thought text from their history but echo a `thoughtSignature`
 * verbatim, and that vendor verifies the signature against the text: so both travel inside the
 * signature, which Gemini clients treat as opaque, and come back whole on the next turn.
 */
const CARRIER_PREFIX = "gw-thought.1.";
export const carriedSignature = (text: string, signature: string): string => CARRIER_PREFIX + Buffer.from(JSON.stringify([text, signature])).toString("base64url");

function carried(signature: string): { text: string; signature: string } | undefined {
  if (!signature.startsWith(CARRIER_PREFIX)) return undefined;
  try {
    const value: unknown = JSON.parse(Buffer.from(signature.slice(CARRIER_PREFIX.length), "base64url").toString("utf8"));
    if (Array.isArray(value) && typeof value[0] === "string" && typeof value[1] === "string") return { text: value[0], signature: value[1] };
  } catch {
    // not ours after all: kept as the opaque signature it is
  }
  return undefined;
}

const signatureOnly = (signature: string): IrAssistantPart => {
  const whole = carried(signature);
  return whole ? { type: "reasoning", ...whole } : { type: "reasoning", text: "", signature };
};

/** One model part -> IR parts (none, and a warning, for parts the IR does not carry). */
export function decodeModelPart(part: Json, at: string, log: DropLog, callId: CallIdFor): IrAssistantPart[] {
  checkPartFlags(part, at);
  const signature = signatureOf(part);
  if (part.functionCall !== undefined) {
    expectShape(FunctionCall, part.functionCall, `${at}.functionCall`);
    const call = part.functionCall;
    log.unknownMembers(part, PartFlags, at, MODEL_PART_MEMBERS);
    const toolCall: IrAssistantPart = { type: "tool_call", id: callId(call), name: call.name, arguments: JSON.stringify(call.args ?? {}) };
    return signature ? [signatureOnly(signature), toolCall] : [toolCall];
  }
  if (part.text !== undefined) {
    if (typeof part.text !== "string") throw new WireError(`${at}.text`, `Invalid value at '${at}.text' (TYPE_STRING), ${JSON.stringify(part.text)}`);
    log.unknownMembers(part, PartFlags, at, MODEL_PART_MEMBERS);
    if (part.thought === true) {
      const whole = signature === undefined ? undefined : carried(signature);
      return [whole ? { type: "reasoning", ...whole } : { type: "reasoning", text: part.text, ...(signature && { signature }) }];
    }
    const text: IrAssistantPart[] = part.text === "" ? [] : [{ type: "text", text: part.text }];
    return signature ? [...text, signatureOnly(signature)] : text;
  }
  const kind = Object.keys(part).find((key) => !MODEL_PART_MEMBERS.includes(key));
  if (kind === undefined) return signature ? [signatureOnly(signature)] : [];
  // executableCode, codeExecutionResult (the code execution tool), inlineData (generated images), ...
  log.drop(`${kind} part`, at, "this part type is not modelled by the gateway's IR");
  return [];
}

/**
 * A model turn's parts -> IR parts. A thought streamed in pieces (and its signature on an empty thought
 * part of its own, as the gateway streams Anthropic's signature) is one thought again, so the vendor
 * that signed it can verify it.
 */
export function decodeModelParts(parts: readonly unknown[], at: string, log: DropLog, callId: CallIdFor): IrAssistantPart[] {
  const out: IrAssistantPart[] = [];
  parts.forEach((raw, i) => {
    const part = raw as Json;
    const decoded = decodeModelPart(part, `${at}[${i}]`, log, callId);
    const [only] = decoded;
    const last = out.at(-1);
    if (part.thought === true && decoded.length === 1 && only?.type === "reasoning" && last?.type === "reasoning" && last.text !== "" && !last.signature && !last.redactedData) {
      out[out.length - 1] = { type: "reasoning", text: last.text + only.text, ...(only.signature && { signature: only.signature }) };
      return;
    }
    out.push(...decoded);
  });
  return out;
}

/** A tool call's arguments as the `args` object Gemini requires. */
function argsObject(args: string, warn: WarningSink): Json {
  if (args.trim() === "") return {};
  try {
    const value: unknown = JSON.parse(args);
    if (isObject(value)) return value;
  } catch {
    // fall through: not JSON at all
  }
  warn(`tool call arguments are not a JSON object; sent args {} instead of ${JSON.stringify(args.slice(0, 80))}`);
  return {};
}

/** An IR tool call as a functionCall part (the IR's id goes along so the caller can answer by id). */
export function functionCallPart(id: string, name: string, args: string, warn: WarningSink): Json {
  return { functionCall: { id, name, args: argsObject(args, warn) } };
}

/**
 * IR assistant parts -> model parts. `forRequest` (history for a Gemini upstream): reasoning text
 * without a signature (another vendor's) cannot go back as a thought and is dropped; shown to a client
 * it is a thought part like any other. A signature-only reasoning part goes back on the tool call after
 * it, else on the text before it, else on an empty text part, as Gemini itself streams it.
 */
export function encodeModelParts(content: readonly IrAssistantPart[], warn: WarningSink, forRequest: boolean): Json[] {
  const out: Json[] = [];
  let pending: string | undefined;
  content.forEach((part, i) => {
    switch (part.type) {
      case "text":
        if (part.text !== "") out.push({ text: part.text });
        return;
      case "tool_call":
        out.push({ ...functionCallPart(part.id, part.name, part.arguments, warn), ...(pending && { thoughtSignature: pending }) });
        pending = undefined;
        return;
      case "reasoning": {
        if (part.redactedData !== undefined) return warn("redacted reasoning dropped: Gemini has no form for it");
        if (part.text === "") {
          if (!part.signature) return;
          const last = out.at(-1);
          if (content[i + 1]?.type === "tool_call") pending = part.signature;
          else if (last && typeof last.text === "string" && last.thought === undefined && last.thoughtSignature === undefined) last.thoughtSignature = part.signature;
          else out.push({ text: "", thoughtSignature: part.signature });
          return;
        }
        if (forRequest && !part.signature) return warn("reasoning without a thought signature (from another vendor) dropped: Gemini takes back only its own signed thoughts");
        if (!forRequest && part.signature) {
          // Shown to a client: the thought for display, the text and signature carried to come back.
          out.push({ text: part.text, thought: true });
          const carrier = carriedSignature(part.text, part.signature);
          if (content[i + 1]?.type === "tool_call") pending = carrier;
          else out.push({ text: "", thought: true, thoughtSignature: carrier });
          return;
        }
        out.push({ text: part.text, thought: true, ...(part.signature && { thoughtSignature: part.signature }) });
      }
    }
  });
  return out;
}

// ---- the response object -------------------------------------------------------------------------------

export function decodeResponse(body: unknown, now: () => number = Date.now): Decoded<IrResponse> {
  const log = new DropLog();
  try {
    expectShape(GenerateContentResponse, body, "");
    const [first, ...others] = body.candidates ?? [];
    if (others.length > 0) log.drop("candidates", "candidates[1]", `the IR carries one candidate; ${others.length} more dropped`);
    let calls = 0;
    const callId: CallIdFor = (call) => call.id ?? `call_${calls++}`;
    const content = decodeModelParts(first?.content?.parts ?? [], "candidates[0].content.parts", log, callId);
    const blocked = body.promptFeedback?.blockReason;
    const finishReason: IrFinishReason = first
      ? finishFromWire(first.finishReason, content.some((part) => part.type === "tool_call"))
      : blocked !== undefined
        ? { unified: "content_filter", raw: blocked }
        : { unified: "other" };
    const response: IrResponse = {
      id: body.responseId ?? "",
      model: body.modelVersion ?? "",
      created: Math.floor(now() / 1000),
      content,
      finishReason,
      usage: mergeUsage(ZERO_USAGE, body.usageMetadata ? usageFromWire(body.usageMetadata) : {}),
    };
    return { ok: true, value: response, warnings: log.list() };
  } catch (error) {
    if (!(error instanceof WireError)) throw error;
    // A malformed upstream body is the upstream's fault, not the caller's.
    return { ok: false, error: irError("api_error", `upstream returned a malformed response: ${error.message}`, { status: 502, failure: "transient" }) };
  }
}

/** The candidate (one: index 0) with its parts; a candidate with no parts (blocked) has no content. */
export function candidateOf(parts: readonly Json[], finishReason?: string): Json {
  return { ...(parts.length > 0 && { content: { parts, role: "model" } }), ...(finishReason !== undefined && { finishReason }), index: 0 };
}

export function encodeResponse(response: IrResponse, warn: WarningSink): Json {
  return {
    candidates: [candidateOf(encodeModelParts(response.content, warn, false), finishToWire(response.finishReason, warn))],
    usageMetadata: usageToWire(response.usage, warn),
    modelVersion: response.model,
    responseId: response.id,
  };
}
