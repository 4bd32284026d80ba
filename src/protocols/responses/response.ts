// OpenAI Responses `response` object <-> IR response, plus what the stream codecs share with it: usage,
// the finish-reason mapping, output items and the response envelope.
//
// Usage (API reference, ResponseUsage): input_tokens INCLUDES the cached tokens
// (input_tokens_details.cached_tokens, and cache_write_tokens where reported) and output_tokens INCLUDES
// reasoning_tokens, as in Chat Completions; the IR splits input, so decoding subtracts and encoding adds.
// Finish (Response.status, incomplete_details.reason): completed is stop, or tool_calls when the output
// calls a function; incomplete for max_output_tokens is length, for content_filter content_filter.
import { inputTotal, irError, mergeUsage, ZERO_USAGE, type IrAssistantPart, type IrFinishReason, type IrFinishUnified, type IrRequest, type IrResponse, type IrUsage } from "../../ir/index.ts";
import type { Decoded, WarningSink } from "../types.ts";
import { check as openaiCheck } from "../openai/schema.ts";
import { irErrorFromWire } from "../openai/errors.ts";
import { decodeFailure } from "./errors.ts";
import { instructionsOf, settings } from "./request.ts";
import { check, type OutputItem, type WireUsage } from "./schema.ts";
import { jsonString } from "../json-text.ts";

type Json = Record<string, unknown>;

// ---- usage ----

const count = (n: number | null | undefined) => (typeof n === "number" && Number.isFinite(n) && n > 0 ? n : 0);

/** The counts a wire usage object states; an absent input or output count is left out (the stream may not know it yet). */
export function usageFromWire(usage: WireUsage): Partial<IrUsage> {
  const out: { -readonly [K in keyof IrUsage]?: number } = {};
  if (typeof usage.input_tokens === "number") {
    const read = count(usage.input_tokens_details?.cached_tokens);
    const write = count(usage.input_tokens_details?.cache_write_tokens);
    Object.assign(out, { inputNoCache: Math.max(0, count(usage.input_tokens) - read - write), inputCacheRead: read, inputCacheWrite: write });
  }
  if (typeof usage.output_tokens === "number") Object.assign(out, { output: count(usage.output_tokens), outputReasoning: count(usage.output_tokens_details?.reasoning_tokens) });
  return out;
}

export function usageToWire(usage: IrUsage): Json {
  const input = inputTotal(usage);
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: usage.inputCacheRead, cache_write_tokens: usage.inputCacheWrite },
    output_tokens: usage.output,
    output_tokens_details: { reasoning_tokens: usage.outputReasoning },
    total_tokens: input + usage.output,
  };
}

export function usageFromResponse(body: unknown): Partial<IrUsage> | undefined {
  const usage = (body as { usage?: unknown } | null)?.usage;
  return typeof usage === "object" && usage !== null ? usageFromWire(usage as WireUsage) : undefined;
}

// ---- finish ----

const INCOMPLETE: Readonly<Record<string, IrFinishUnified>> = {
  max_output_tokens: "length",
  // The API reference's own response.incomplete example says max_tokens.
  max_tokens: "length",
  content_filter: "content_filter",
};

export function finishFromWire(status: string | null | undefined, reason: string | null | undefined, calledFunction: boolean): IrFinishReason {
  if (status === "completed") return { unified: calledFunction ? "tool_calls" : "stop", raw: "completed" };
  if (status === "incomplete") return { unified: (reason && INCOMPLETE[reason]) || "other", raw: reason ?? "incomplete" };
  return status ? { unified: "other", raw: status } : { unified: "other" };
}

/** The status and incomplete_details of a finish; pause, error and other have no Responses word. */
export function statusFromFinish(finish: IrFinishReason, warn: WarningSink): { status: "completed" | "incomplete"; incomplete_details: { reason: string } | null } {
  if (finish.stopSequence !== undefined) warn(`stop sequence ${JSON.stringify(finish.stopSequence)} not reported: a Responses status does not say which one matched`);
  if (finish.unified === "length") return { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } };
  if (finish.unified === "content_filter") return { status: "incomplete", incomplete_details: { reason: "content_filter" } };
  if (finish.unified !== "stop" && finish.unified !== "tool_calls") warn(`finish reason ${finish.raw ?? finish.unified} has no Responses status; sent completed`);
  return { status: "completed", incomplete_details: null };
}

// ---- output items ----

/** Reasoning text is the raw content when given (open-weight models), else the summary parts. */
export function reasoningText(item: OutputItem): string {
  const raw = (item.content ?? []).filter((p) => p.type === "reasoning_text");
  return (raw.length > 0 ? raw : (item.summary ?? [])).map((p) => p.text ?? "").join("\n\n");
}

function decodeOutput(output: readonly OutputItem[], warn: WarningSink): IrAssistantPart[] {
  const parts: IrAssistantPart[] = [];
  output.forEach((item, i) => {
    if (item.type === "message") {
      for (const part of item.content ?? []) {
        // A refusal is what the model said; the IR has no refusal kind, so it is text.
        if (part.type === "output_text" || part.type === "refusal") parts.push({ type: "text", text: (part.type === "refusal" ? part.refusal : part.text) ?? "" });
        else warn(`output[${i}]: a ${part.type} content part is not modelled across protocols; dropped`);
      }
    } else if (item.type === "function_call") {
      parts.push({ type: "tool_call", id: item.call_id ?? item.id ?? "", name: item.name ?? "", arguments: item.arguments ?? "" });
    } else if (item.type === "reasoning") {
      if (item.encrypted_content) warn(`output[${i}].encrypted_content: encrypted reasoning is readable only by OpenAI; dropped`);
      // A reasoning item without summary or content (none was asked for) has nothing to carry.
      const text = reasoningText(item);
      if (text !== "") parts.push({ type: "reasoning", text });
    } else {
      warn(`output[${i}]: a ${item.type} item is not modelled across protocols; dropped`);
    }
  });
  return parts;
}

/** An output item id: the response's id under the item kind's prefix, so ids stay unique across responses. */
export const itemId = (prefix: string, responseId: string, index: number) => `${prefix}_${responseId.replace(/^resp_/, "")}_${index}`;

export const outputText = (text: string) => ({ type: "output_text", text, annotations: [] });
export const messageItem = (id: string, status: string, texts: readonly string[]) => ({ id, type: "message", status, role: "assistant", content: texts.map(outputText) });
/** JSON.stringify(outputText(text)) from the text's JSON: a stream's writer serialises a final text once. */
export const outputTextJson = (textJson: string) => `{"type":"output_text","text":${textJson},"annotations":[]}`;
/** JSON.stringify(messageItem(id, status, texts)) from the texts' JSON (outputTextJson). */
export const messageItemJson = (id: string, status: string, textsJson: readonly string[]) =>
  `{"id":${jsonString(id)},"type":"message","status":${jsonString(status)},"role":"assistant","content":[${textsJson.map(outputTextJson).join(",")}]}`;
export const functionCallItem = (id: string, status: string, callId: string, name: string, args: string) => ({ id, type: "function_call", status, call_id: callId, name, arguments: args });
export const reasoningItem = (id: string, text: string) => ({ id, type: "reasoning", summary: text === "" ? [] : [{ type: "summary_text", text }] });

/**
 * IR parts -> output items: consecutive text parts share one message. Reasoning is shown as a summary;
 * another vendor's signature or redacted reasoning cannot be handed to OpenAI and is reported.
 */
function encodeOutput(parts: readonly IrAssistantPart[], responseId: string, warn: WarningSink): Json[] {
  const items: Json[] = [];
  let message: ReturnType<typeof messageItem> | undefined;
  for (const part of parts) {
    if (part.type === "text") {
      if (message) message.content.push(outputText(part.text));
      else items.push((message = messageItem(itemId("msg", responseId, items.length), "completed", [part.text])));
      continue;
    }
    message = undefined;
    if (part.type === "tool_call") {
      items.push(functionCallItem(itemId("fc", responseId, items.length), "completed", part.id, part.name, part.arguments));
      continue;
    }
    warnReasoningLoss(part, warn);
    if (part.text !== "") items.push(reasoningItem(itemId("rs", responseId, items.length), part.text));
  }
  return items;
}

export function warnReasoningLoss(part: { signature?: string; redactedData?: string }, warn: WarningSink): void {
  if (part.redactedData !== undefined) warn("redacted reasoning has no Responses form; dropped");
  else if (part.signature) warn("reasoning signature has no Responses form (reasoning items carry OpenAI's own encrypted content); dropped");
}

// ---- the response object ----

export interface Envelope {
  readonly id: string;
  readonly model: string;
  readonly created: number;
  readonly status: string;
  readonly output: readonly unknown[];
  readonly usage: IrUsage | null;
  readonly incompleteDetails?: { reason: string } | null;
  readonly error?: { code: string; message: string } | null;
}

/**
 * The `response` object with every member the SDK's Response type names. The request's settings are
 * echoed when the request is known (streams); encodeResponse is not given it, so there they are the
 * API's defaults.
 */
export function responseObject(envelope: Envelope, request?: IrRequest): Json {
  const echo = request ? settings(request, () => {}) : {};
  return {
    id: envelope.id,
    object: "response",
    created_at: envelope.created,
    status: envelope.status,
    error: envelope.error ?? null,
    incomplete_details: envelope.incompleteDetails ?? null,
    ...echoBeforeModel(request, echo),
    model: envelope.model,
    output: envelope.output,
    ...echoAfterOutput(echo),
    usage: envelope.usage ? usageToWire(envelope.usage) : null,
    user: null,
    metadata: {},
  };
}

/** The echoed members between incomplete_details and model, in the object's order. */
const echoBeforeModel = (request: IrRequest | undefined, echo: Json) => ({
  instructions: request && request.system.length > 0 ? instructionsOf(request) : null,
  max_output_tokens: echo.max_output_tokens ?? null,
});

/** The echoed members between output and usage, in the object's order. */
const echoAfterOutput = (echo: Json) => ({
  parallel_tool_calls: echo.parallel_tool_calls ?? true,
  previous_response_id: null,
  reasoning: { effort: (echo.reasoning as { effort?: string } | undefined)?.effort ?? null, summary: null },
  store: false,
  temperature: echo.temperature ?? null,
  text: echo.text ?? { format: { type: "text" } },
  tool_choice: echo.tool_choice ?? "auto",
  tools: echo.tools ?? [],
  top_p: echo.top_p ?? null,
  truncation: "disabled",
});

/** An object's members as JSON text, without its braces. */
const membersJson = (members: object) => JSON.stringify(members).slice(1, -1);

/**
 * JSON.stringify(responseObject(...)) of a stream, as the text around the members that change from event
 * to event: status, error, incomplete_details, output and usage (six pieces around five values, same bytes).
 * Everything else, the request's echo most (a coding agent's tools run to tens of KB), is the same in every
 * event of the stream, so a stream serialises it once, member by member.
 */
export function responseFrame(head: { id: string; model: string; created: number }, request: IrRequest): readonly string[] {
  const echo = settings(request, () => {});
  return [
    `{"id":${jsonString(head.id)},"object":"response","created_at":${JSON.stringify(head.created)},"status":`,
    ',"error":',
    ',"incomplete_details":',
    `,${membersJson(echoBeforeModel(request, echo))},"model":${jsonString(head.model)},"output":`,
    `,${membersJson(echoAfterOutput(echo))},"usage":`,
    ',"user":null,"metadata":{}}',
  ];
}

const malformed = () => irError("api_error", "upstream answered with something that is not a response object", { status: 502, failure: "transient" });

/** Upstream `response` -> IR. A failed response, or an `{"error": ...}` body with status 200, is an error. */
export function decodeResponse(body: unknown): Decoded<IrResponse> {
  if (!check.response.Check(body) || !Array.isArray(body.output)) {
    return { ok: false, error: openaiCheck.errorBody.Check(body) ? irErrorFromWire(502, body) : malformed() };
  }
  if (body.status === "failed") return { ok: false, error: decodeFailure(body.error) };
  const warnings: string[] = [];
  const content = decodeOutput(body.output, (w) => warnings.push(w));
  return {
    ok: true,
    value: {
      id: body.id ?? "",
      model: body.model ?? "",
      created: body.created_at ?? 0,
      content,
      finishReason: finishFromWire(body.status, body.incomplete_details?.reason, content.some((p) => p.type === "tool_call")),
      usage: mergeUsage(ZERO_USAGE, usageFromWire(body.usage ?? {})),
    },
    warnings,
  };
}

export function encodeResponse(response: IrResponse, warn: WarningSink): unknown {
  const { status, incomplete_details } = statusFromFinish(response.finishReason, warn);
  const output = encodeOutput(response.content, response.id, warn);
  return responseObject({ id: response.id, model: response.model, created: response.created, status, output, usage: response.usage, incompleteDetails: incomplete_details });
}
