// OpenAI errors both ways, and the finish-reason mapping.
//
// Shape (API reference, ErrorResponse): {"error": {"message", "type", "param", "code"}}. The OpenAI SDK
// picks its exception class from the HTTP status alone (401 AuthenticationError, 403
// PermissionDeniedError, 404 NotFoundError, 429 RateLimitError, >=500 InternalServerError), so the
// statuses below are what make the client's own typed errors work; type and code follow
// shared/design/protocols.md.
import type { HeaderReader } from "../../transport/upstream.ts";
import { failureFromStatus, irError, kindFromStatus, type FailureClass, type IrError, type IrErrorKind, type IrFinishReason, type IrFinishUnified } from "../../ir/index.ts";
import { check } from "./schema.ts";
import type { WarningSink } from "../types.ts";

export interface WireError {
  readonly message: string;
  readonly type: string;
  readonly param: string | null;
  readonly code: string | null;
}

/** OpenAI `type` and default `code` per IR error kind (protocols.md, "Vendor-native errors"). */
const WIRE_TYPE: Record<IrErrorKind, { type: string; code: string | null }> = {
  invalid_request: { type: "invalid_request_error", code: null },
  authentication: { type: "invalid_request_error", code: "invalid_api_key" },
  permission: { type: "permission_error", code: null },
  not_found: { type: "invalid_request_error", code: "model_not_found" },
  request_too_large: { type: "invalid_request_error", code: "request_too_large" },
  rate_limit: { type: "rate_limit_error", code: "rate_limit_exceeded" },
  insufficient_quota: { type: "insufficient_quota", code: "insufficient_quota" },
  overloaded: { type: "server_error", code: null },
  timeout: { type: "server_error", code: null },
  api_error: { type: "server_error", code: null },
};

/** The `error` object of an IR error: the body of encodeError and of the in-stream error event. */
export function wireError(error: IrError): WireError {
  const wire = WIRE_TYPE[error.kind];
  // The table fixes the code where the spec names one (invalid_api_key, model_not_found,
  // insufficient_quota); elsewhere a code the IR carries (an upstream's own) is kept.
  const code = wire.code !== null && error.kind !== "rate_limit" ? wire.code : (error.code ?? wire.code);
  return { message: error.message, type: wire.type, param: error.param ?? null, code };
}

/** A gateway-generated (or relayed) error as OpenAI would send it. */
export function encodeError(error: IrError): Response {
  const headers: Record<string, string> = {};
  if (error.retryAfterSecs !== undefined && (error.status === 429 || error.status === 503)) {
    // Retry-After is whole seconds, at least 1 (API reference, TooManyRequests); never round down to 0.
    headers["retry-after"] = String(Math.max(1, Math.ceil(error.retryAfterSecs)));
  }
  return Response.json({ error: wireError(error) }, { status: error.status, headers });
}

/**
 * Seconds to wait, from `retry-after-ms` (what OpenAI sends and its SDK reads first) or `retry-after`
 * in seconds. The HTTP-date form of Retry-After is not read: this contract has no clock to subtract from.
 */
export function retryAfterFromHeaders(headers: HeaderReader): number | undefined {
  const ms = Number(headers.get("retry-after-ms") ?? Number.NaN);
  if (Number.isFinite(ms) && ms >= 0) return ms / 1000;
  const secs = Number(headers.get("retry-after") ?? Number.NaN);
  return Number.isFinite(secs) && secs >= 0 ? secs : undefined;
}

/**
 * Failure class of an upstream error. The code wins over the status: OpenAI reports an exhausted quota
 * as 429 (which alone would read as a rate limit) and an over-long prompt as a plain 400. Compatible
 * servers (vLLM, Ollama) send no code for the latter, so the message is checked too.
 */
export function failureClass(status: number, type: string | undefined, code: string | undefined, message: string): FailureClass {
  if (code === "context_length_exceeded" || /maximum context length/i.test(message)) return "context_length";
  if (code === "insufficient_quota" || type === "insufficient_quota") return "quota";
  return failureFromStatus(status);
}

/** An IR error from OpenAI's `error` object; `status` is the HTTP status (or 500 for an in-stream error). */
export function irErrorFromWire(status: number, body: unknown, retryAfterSecs?: number): IrError {
  const parsed = check.errorBody.Check(body) ? body.error : undefined;
  const message = parsed?.message ?? `upstream answered HTTP ${status}`;
  const type = parsed?.type ?? undefined;
  const code = parsed?.code === null || parsed?.code === undefined ? undefined : String(parsed.code);
  const failure = failureClass(status, type, code, message);
  const kind: IrErrorKind = failure === "quota" ? "insufficient_quota" : kindFromStatus(status);
  return irError(kind, message, {
    status,
    failure,
    ...(retryAfterSecs !== undefined ? { retryAfterSecs } : {}),
    ...(parsed?.param ? { param: parsed.param } : {}),
    ...(code !== undefined ? { code } : {}),
  });
}

/** An upstream HTTP error (status >= 400) with its body text. A body that is not JSON keeps its start. */
export function decodeError(status: number, body: string, headers: HeaderReader): IrError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = undefined;
  }
  const retryAfter = retryAfterFromHeaders(headers);
  if (check.errorBody.Check(parsed)) return irErrorFromWire(status, parsed, retryAfter);
  const text = body.trim().slice(0, 200);
  return irErrorFromWire(status, { error: { message: text === "" ? `upstream answered HTTP ${status}` : text } }, retryAfter);
}

/** Kind of an in-stream error: there is no HTTP status, so OpenAI's `type` decides. */
const STREAM_STATUS: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  permission_error: 403,
  not_found_error: 404,
  rate_limit_error: 429,
  insufficient_quota: 429,
};

/** `data: {"error": {...}}` in a stream -> IR error. Unknown types are server errors (transient). */
export function decodeStreamError(body: unknown): IrError {
  const type = check.errorBody.Check(body) ? (body.error.type ?? "") : "";
  return irErrorFromWire(STREAM_STATUS[type] ?? 500, body);
}

// ---- finish reasons ----

const FROM_WIRE: Record<string, IrFinishUnified> = {
  stop: "stop",
  length: "length",
  tool_calls: "tool_calls",
  content_filter: "content_filter",
  // Legacy (deprecated `functions`): the model called a function; it is a tool call in the IR.
  function_call: "tool_calls",
};

export function finishFromWire(raw: string | null | undefined): IrFinishReason {
  if (raw === null || raw === undefined) return { unified: "other" };
  return { unified: FROM_WIRE[raw] ?? "other", raw };
}

/**
 * IR -> OpenAI `finish_reason`, which has only five words. `pause` (Anthropic pause_turn), `error` and
 * `other` have no OpenAI word: they become `stop`, the one that claims nothing more than "it ended".
 * Tool calls are always sent as `tool_calls` (never the legacy `function_call`: we emit no functions).
 */
export function finishToWire(reason: IrFinishReason): "stop" | "length" | "tool_calls" | "content_filter" {
  switch (reason.unified) {
    case "length":
      return "length";
    case "tool_calls":
      return "tool_calls";
    case "content_filter":
      return "content_filter";
    default:
      return "stop";
  }
}

/** Says what finishToWire cannot: the word it substituted, or which stop sequence matched. */
export function warnFinishLoss(reason: IrFinishReason, warn: WarningSink): void {
  if (reason.unified === "pause" || reason.unified === "error" || reason.unified === "other") warn(`finish reason ${reason.raw ?? reason.unified} sent as stop`);
  if (reason.stopSequence !== undefined) warn(`stop sequence ${JSON.stringify(reason.stopSequence)} not reported: Chat Completions' finish_reason does not say which one matched`);
}
