// Anthropic errors both ways (API reference, "Errors": https://platform.claude.com/docs/en/api/errors).
// Shape: {"type":"error","error":{"type","message"}}. Gateway errors are encoded so the official SDK
// raises its own typed error (it picks the class by status); upstream errors are classified so routing
// knows whether to relay, fail over or bench the lane.
import type { HeaderReader } from "../../transport/upstream.ts";
import { failureFromStatus, irError, kindFromStatus, type FailureClass, type IrError, type IrErrorKind } from "../../ir/errors.ts";
import { ErrorBody, matches } from "./schema.ts";

/** IR kind -> Anthropic `error.type` (budget exhaustion uses `insufficient_quota`, as protocols.md asks). */
const WIRE_TYPE: Readonly<Record<IrErrorKind, string>> = {
  invalid_request: "invalid_request_error",
  authentication: "authentication_error",
  permission: "permission_error",
  not_found: "not_found_error",
  request_too_large: "request_too_large",
  rate_limit: "rate_limit_error",
  insufficient_quota: "insufficient_quota",
  overloaded: "overloaded_error",
  timeout: "timeout_error",
  api_error: "api_error",
};

/** Anthropic `error.type` -> IR kind, for upstream errors (status decides when the type is new to us). */
const KIND: Readonly<Record<string, IrErrorKind>> = {
  invalid_request_error: "invalid_request",
  authentication_error: "authentication",
  permission_error: "permission",
  not_found_error: "not_found",
  request_too_large: "request_too_large",
  rate_limit_error: "rate_limit",
  billing_error: "insufficient_quota",
  // Anthropic itself never says this; another gateway (or this one, upstream of us) does for a spent budget.
  insufficient_quota: "insufficient_quota",
  overloaded_error: "overloaded",
  timeout_error: "timeout",
  api_error: "api_error",
};

/** The status an in-stream `event: error` of each type would have had as an HTTP response. */
const STATUS_OF_TYPE: Readonly<Record<string, number>> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  insufficient_quota: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

/** The body of an error response, and the data of an in-stream `error` event. */
export const errorBody = (error: IrError) => ({ type: "error", error: { type: WIRE_TYPE[error.kind], message: error.message } });

export function encodeError(error: IrError): Response {
  // Anthropic says "overloaded" with 529, whatever status another protocol used.
  const status = error.kind === "overloaded" ? 529 : error.status;
  const headers: Record<string, string> = {};
  if (error.retryAfterSecs !== undefined) headers["retry-after"] = String(Math.max(0, Math.ceil(error.retryAfterSecs)));
  return Response.json(errorBody(error), { status, headers });
}

/** `retry-after`: delay-seconds or an HTTP date (RFC 9110 section 10.2.3). */
function retryAfter(headers: HeaderReader, now: number): number | undefined {
  const value = headers.get("retry-after");
  if (value === null || value.trim() === "") return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

/** Spend limits come back as 429 rate_limit_error with these codes; waiting a minute does not help. */
const SPEND_LIMIT_CODES = new Set(["enforced_spend_limit_reached", "contract_spend_limit_reached", "linked_organization_spend_limit_reached"]);

/**
 * How routing should treat an upstream failure. The message decides where the status cannot: a 400
 * "prompt is too long: 210000 tokens > 200000 maximum" wants a larger lane, a 400 "Your credit balance is
 * too low" wants another credential.
 */
function classify(status: number, type: string | undefined, message: string, errorCode: string | undefined): FailureClass {
  if (status >= 400 && status < 500 && /prompt is too long|context (window|length|limit)|too many (input )?tokens/i.test(message)) return "context_length";
  if (type === "billing_error" || type === "insufficient_quota" || /credit balance|billing/i.test(message)) return "quota";
  if (errorCode !== undefined && SPEND_LIMIT_CODES.has(errorCode)) return "quota";
  // 401/403 credential, 429 rate_limit, 500/529/other 5xx transient, other 4xx caller.
  return failureFromStatus(status);
}

export function decodeError(status: number, body: string, headers: HeaderReader, now: () => number = Date.now): IrError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = undefined;
  }
  const wire = matches(ErrorBody, parsed) ? parsed.error : undefined;
  const message = wire?.message ?? (body.trim() === "" ? `upstream answered ${status}` : body.slice(0, 500));
  const failure = classify(status, wire?.type, message, wire?.details?.error_code ?? undefined);
  const kind = failure === "quota" ? "insufficient_quota" : ((wire && KIND[wire.type]) ?? kindFromStatus(status));
  const seconds = retryAfter(headers, now());
  return irError(kind, message, {
    status,
    failure,
    ...(seconds !== undefined && { retryAfterSecs: seconds }),
    ...(wire && { code: wire.type }),
  });
}

/** An in-stream `event: error` (data `{"type":"error","error":{...}}`) -> IR error, classed as its HTTP twin. */
export function decodeStreamError(data: unknown): IrError {
  if (!matches(ErrorBody, data)) return irError("api_error", "upstream sent a malformed error event", { status: 502, failure: "transient" });
  return decodeError(STATUS_OF_TYPE[data.error.type] ?? 500, JSON.stringify(data), new Headers());
}
