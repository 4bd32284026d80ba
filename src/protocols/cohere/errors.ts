// Cohere errors both ways (API reference, "Errors": https://docs.cohere.com/reference/errors). Every
// error status has the body {"message": "..."} (the OpenAPI spec adds an optional `id`); the official
// SDK picks its typed error by status alone (400 BadRequestError, 401 UnauthorizedError, 403
// ForbiddenError, 404 NotFoundError, 429 TooManyRequestsError, 503 ServiceUnavailableError, 504
// GatewayTimeoutError, ...), so statuses are what gateway errors must get right.
import type { HeaderReader } from "../../transport/upstream.ts";
import { failureFromStatus, irError, kindFromStatus, type FailureClass, type IrError } from "../../ir/errors.ts";
import { ErrorBody, matches } from "./schema.ts";

/**
 * The error body. Budget exhaustion also says `type: "insufficient_quota"` at the top level, the member
 * shared/design/protocols.md asks for where the vendor shape has no error type of its own.
 */
export const errorBody = (error: IrError) => ({ message: error.message, ...(error.kind === "insufficient_quota" && { type: "insufficient_quota" }) });

/** Cohere's status for an error: its table (protocols.md) for the gateway's own kinds, else the error's own. */
function statusOf(error: IrError): number {
  if (error.kind === "overloaded") return 503; // Anthropic's 529 has no Cohere twin
  if (error.kind === "insufficient_quota") return 429;
  return error.status;
}

export function encodeError(error: IrError): Response {
  const headers: Record<string, string> = {};
  if (error.retryAfterSecs !== undefined) headers["retry-after"] = String(Math.max(0, Math.ceil(error.retryAfterSecs)));
  return Response.json(errorBody(error), { status: statusOf(error), headers });
}

/** `retry-after`: delay-seconds or an HTTP date (RFC 9110 section 10.2.3). */
function retryAfter(headers: HeaderReader, now: number): number | undefined {
  const value = headers.get("retry-after")?.trim();
  if (value === undefined || value === "") return undefined;
  if (/^\d+$/.test(value)) return Number(value);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

/**
 * How routing should treat an upstream failure, from the reference's example messages: a 400 "too many
 * tokens: total number of tokens in the prompt cannot exceed 4081 - received 4292" wants a larger lane;
 * 402 ("Maximum billing reached for this API key") and a trial key's monthly call cap want another key.
 */
function classify(status: number, message: string, type: string | undefined): FailureClass {
  // A 429 alone reads as a rate limit; a gateway upstream says when its budget is spent.
  if (type === "insufficient_quota") return "quota";
  if (status >= 400 && status < 500 && /too many tokens|context (window|length)|prompt is too long/i.test(message)) return "context_length";
  if (status === 429 && /per month|\/ ?month|monthly/i.test(message)) return "quota";
  // 498 (a deny-listed token in the text) and 499 (cancelled) are the caller's.
  if (status === 498 || status === 499) return "caller";
  return failureFromStatus(status);
}

export function decodeError(status: number, body: string, headers: HeaderReader, now: () => number = Date.now): IrError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = undefined;
  }
  const wire = matches(ErrorBody, parsed) ? parsed : undefined;
  const message = wire?.message ?? (body.trim() === "" ? `upstream answered ${status}` : body.slice(0, 500));
  const failure = classify(status, message, wire?.type ?? undefined);
  const kind = failure === "quota" ? "insufficient_quota" : status === 498 ? "invalid_request" : kindFromStatus(status);
  const seconds = retryAfter(headers, now());
  return irError(kind, message, { status, failure, ...(seconds !== undefined && { retryAfterSecs: seconds }) });
}

/** A message-end that carries `delta.error` -> IR error: the generation failed upstream, mid-stream. */
export function streamError(message: string): IrError {
  return irError("api_error", message, { status: 502, failure: "transient" });
}
