// Gemini errors both ways: google.rpc.Status as JSON, `{"error": {"code", "message", "status",
// "details"}}` (https://ai.google.dev/gemini-api/docs/troubleshooting, "backend error codes"). Gateway
// errors use the statuses of shared/design/protocols.md, so the official SDK raises its ApiError with the
// HTTP code; upstream errors are classified so routing knows whether to relay, fail over or bench a lane.
import type { HeaderReader } from "../../transport/upstream.ts";
import { failureFromStatus, irError, kindFromStatus, type FailureClass, type IrError, type IrErrorKind } from "../../ir/errors.ts";
import { ErrorBody, isObject, matches, type Json } from "./schema.ts";

/** IR kind -> google.rpc status name. */
const RPC_STATUS: Readonly<Record<IrErrorKind, string>> = {
  invalid_request: "INVALID_ARGUMENT",
  authentication: "UNAUTHENTICATED",
  permission: "PERMISSION_DENIED",
  not_found: "NOT_FOUND",
  request_too_large: "INVALID_ARGUMENT",
  rate_limit: "RESOURCE_EXHAUSTED",
  insufficient_quota: "RESOURCE_EXHAUSTED",
  overloaded: "UNAVAILABLE",
  timeout: "DEADLINE_EXCEEDED",
  api_error: "INTERNAL",
};

/** google.rpc status name -> IR kind, for upstream errors (the HTTP status decides for names new to us). */
const KIND: Readonly<Record<string, IrErrorKind>> = {
  INVALID_ARGUMENT: "invalid_request",
  FAILED_PRECONDITION: "invalid_request",
  OUT_OF_RANGE: "invalid_request",
  UNAUTHENTICATED: "authentication",
  PERMISSION_DENIED: "permission",
  NOT_FOUND: "not_found",
  RESOURCE_EXHAUSTED: "rate_limit",
  UNAVAILABLE: "overloaded",
  DEADLINE_EXCEEDED: "timeout",
  INTERNAL: "api_error",
  UNKNOWN: "api_error",
  CANCELLED: "api_error",
};

const RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo";
const ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo";
const QUOTA_FAILURE = "type.googleapis.com/google.rpc.QuotaFailure";

/** Google says "unavailable" with 503 whatever status another protocol used (Anthropic's 529). */
const httpStatus = (error: IrError) => (error.kind === "overloaded" ? 503 : error.status);

/**
 * The body of an error response, and of an in-stream error event. Budget exhaustion adds
 * `error.type: insufficient_quota` (protocols.md); a known wait is also said the Google way, as RetryInfo.
 */
export function errorBody(error: IrError): Json {
  const wait = error.retryAfterSecs === undefined ? undefined : Math.max(0, Math.ceil(error.retryAfterSecs));
  return {
    error: {
      code: httpStatus(error),
      message: error.message,
      status: RPC_STATUS[error.kind],
      ...(error.kind === "insufficient_quota" && { type: "insufficient_quota" }),
      ...(wait !== undefined && { details: [{ "@type": RETRY_INFO, retryDelay: `${wait}s` }] }),
    },
  };
}

export function encodeError(error: IrError): Response {
  const headers: Record<string, string> = {};
  if (error.retryAfterSecs !== undefined) headers["retry-after"] = String(Math.max(0, Math.ceil(error.retryAfterSecs)));
  return Response.json(errorBody(error), { status: httpStatus(error), headers });
}

/** A google.protobuf.Duration in JSON ("34s", "0.5s") -> whole seconds, rounded up. */
function durationSecs(value: unknown): number | undefined {
  const match = typeof value === "string" ? /^(\d+(?:\.\d+)?)s$/.exec(value) : null;
  return match ? Math.ceil(Number(match[1])) : undefined;
}

/** `retry-after`: delay-seconds or an HTTP date (RFC 9110 section 10.2.3). */
function retryAfterHeader(headers: HeaderReader, now: number): number | undefined {
  const value = headers.get("retry-after")?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

/** What the error's details say: ErrorInfo's reason, RetryInfo's delay, QuotaFailure's quota ids. */
function readDetails(details: readonly Json[]): { reason?: string; retrySecs?: number; quotaIds: string[] } {
  let reason: string | undefined;
  let retrySecs: number | undefined;
  const quotaIds: string[] = [];
  for (const detail of details) {
    if (detail["@type"] === ERROR_INFO && typeof detail.reason === "string") reason = detail.reason;
    if (detail["@type"] === RETRY_INFO) retrySecs = durationSecs(detail.retryDelay);
    if (detail["@type"] === QUOTA_FAILURE && Array.isArray(detail.violations)) {
      for (const violation of detail.violations) if (isObject(violation) && typeof violation.quotaId === "string") quotaIds.push(violation.quotaId);
    }
  }
  return { ...(reason !== undefined && { reason }), ...(retrySecs !== undefined && { retrySecs }), quotaIds };
}

/**
 * How routing should treat an upstream failure. Google answers a bad API key with 400 INVALID_ARGUMENT
 * (ErrorInfo reason API_KEY_INVALID), not 401; a prompt over the window is a 400 "The input token count
 * (N) exceeds the maximum number of tokens allowed (M)"; a per-day quota (QuotaFailure quotaId
 * `...PerDay...`) does not come back in a minute.
 */
function classify(status: number, message: string, reason: string | undefined, quotaIds: readonly string[], type: string | undefined): FailureClass {
  // RESOURCE_EXHAUSTED alone reads as a rate limit; a gateway upstream says when its budget is spent.
  if (type === "insufficient_quota") return "quota";
  if (reason?.startsWith("API_KEY_")) return "credential";
  if (status >= 400 && status < 500 && /input token count.*exceeds the maximum|exceeds the maximum number of tokens|context (window|length)/i.test(message)) return "context_length";
  if (status === 429 && quotaIds.some((id) => /PerDay/i.test(id))) return "quota";
  if (/enable billing|billing (account|details)/i.test(message) && status !== 429) return "quota";
  return failureFromStatus(status);
}

/** The error body: an object, or a one-element array (how `:streamGenerateContent` without alt=sse answers). */
function wireError(body: string): ErrorBody["error"] | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  const candidate = Array.isArray(parsed) ? parsed[0] : parsed;
  return matches(ErrorBody, candidate) ? candidate.error : undefined;
}

export function decodeError(status: number, body: string, headers: HeaderReader, now: () => number = Date.now): IrError {
  const wire = wireError(body);
  const message = wire?.message ?? (body.trim() === "" ? `upstream answered ${status}` : body.slice(0, 500));
  const { reason, retrySecs, quotaIds } = readDetails((wire?.details ?? []) as Json[]);
  const failure = classify(status, message, reason, quotaIds, wire?.type);
  const kind: IrErrorKind =
    failure === "quota" ? "insufficient_quota" : failure === "credential" && status === 400 ? "authentication" : ((wire?.status === undefined ? undefined : KIND[wire.status]) ?? kindFromStatus(status));
  const seconds = retrySecs ?? retryAfterHeader(headers, now());
  return irError(kind, message, {
    status,
    failure,
    ...(seconds !== undefined && { retryAfterSecs: seconds }),
    ...(wire?.status !== undefined && { code: wire.status }),
  });
}

/** An in-stream `{"error": {...}}` event -> IR error, classed as its HTTP twin (its `code`). */
export function decodeStreamError(data: unknown): IrError {
  if (!matches(ErrorBody, data)) return irError("api_error", "upstream sent a malformed error event", { status: 502, failure: "transient" });
  const code = data.error.code;
  return decodeError(code !== undefined && code >= 400 && code < 600 ? code : 500, JSON.stringify(data), new Headers());
}
