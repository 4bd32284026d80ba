// Bedrock errors both ways. An error response is an HTTP status, a JSON body {"message": "..."} and the
// header `x-amzn-ErrorType: <Name>Exception`, from which the official SDK raises its typed error
// (ThrottlingException, ValidationException, ...). Statuses per exception are the SDK's
// (@aws-sdk/client-bedrock-runtime schemas) and the API reference's "Errors" sections; the troubleshooting
// page (https://docs.aws.amazon.com/bedrock/latest/userguide/troubleshooting-api-error-codes.html) adds
// AWS's front-door errors (UnrecognizedClientException, ...). In a stream, an error is an exception frame
// whose `:exception-type` is the ConverseStreamOutput member name (`throttlingException`).
import type { HeaderReader } from "../../transport/upstream.ts";
import { failureFromStatus, irError, kindFromStatus, type FailureClass, type IrError, type IrErrorKind } from "../../ir/errors.ts";
import { ErrorBody, isObject, matches } from "./schema.ts";

/** Exception -> IR kind, and the status it has when it comes in a stream (no HTTP status there). */
const EXCEPTIONS: Readonly<Record<string, { kind: IrErrorKind; status: number }>> = {
  ValidationException: { kind: "invalid_request", status: 400 },
  ConflictException: { kind: "invalid_request", status: 400 },
  ServiceQuotaExceededException: { kind: "insufficient_quota", status: 400 },
  AccessDeniedException: { kind: "permission", status: 403 },
  NotAuthorized: { kind: "permission", status: 400 },
  UnrecognizedClientException: { kind: "authentication", status: 403 },
  InvalidClientTokenId: { kind: "authentication", status: 403 },
  InvalidSignatureException: { kind: "authentication", status: 403 },
  IncompleteSignature: { kind: "authentication", status: 400 },
  FTUFormNotFilled: { kind: "permission", status: 404 },
  ResourceNotFoundException: { kind: "not_found", status: 404 },
  ModelTimeoutException: { kind: "timeout", status: 408 },
  ModelErrorException: { kind: "api_error", status: 424 },
  ModelStreamErrorException: { kind: "api_error", status: 424 },
  ThrottlingException: { kind: "rate_limit", status: 429 },
  ModelNotReadyException: { kind: "overloaded", status: 429 },
  InternalServerException: { kind: "api_error", status: 500 },
  InternalFailure: { kind: "api_error", status: 500 },
  ServiceUnavailableException: { kind: "overloaded", status: 503 },
};

/** IR kind -> the exception a Bedrock client sees, with the status shared/design/protocols.md gives it. */
const WIRE: Readonly<Record<IrErrorKind, { type: string; status?: number }>> = {
  invalid_request: { type: "ValidationException", status: 400 },
  authentication: { type: "UnrecognizedClientException", status: 403 },
  permission: { type: "AccessDeniedException", status: 403 },
  not_found: { type: "ResourceNotFoundException", status: 404 },
  request_too_large: { type: "ValidationException" },
  rate_limit: { type: "ThrottlingException", status: 429 },
  insufficient_quota: { type: "ValidationException", status: 400 },
  overloaded: { type: "ServiceUnavailableException", status: 503 },
  timeout: { type: "ModelTimeoutException" },
  api_error: { type: "InternalServerException" },
};

/** The body: `message`, plus `type: insufficient_quota` at the top level (protocols.md) for an exhausted budget. */
const errorBody = (error: IrError) => ({ message: error.message, ...(error.kind === "insufficient_quota" && { type: "insufficient_quota" }) });

export function encodeError(error: IrError): Response {
  const wire = WIRE[error.kind];
  const headers: Record<string, string> = { "x-amzn-errortype": wire.type };
  if (error.retryAfterSecs !== undefined) headers["retry-after"] = String(Math.max(0, Math.ceil(error.retryAfterSecs)));
  return Response.json(errorBody(error), { status: wire.status ?? error.status, headers });
}

/**
 * The exception named by `x-amzn-ErrorType` (`ThrottlingException:http://internal.amazon.com/...`), or
 * by the body's `__type` / `code` (`com.amazon.coral.service#UnrecognizedClientException`).
 */
function exceptionName(headers: HeaderReader, body: unknown): string | undefined {
  const raw = headers.get("x-amzn-errortype") ?? (isObject(body) ? (body.__type ?? body.code) : undefined);
  if (typeof raw !== "string" || raw.trim() === "") return undefined;
  const name = raw.split(":")[0] ?? "";
  return name.slice(name.lastIndexOf("#") + 1).trim() || undefined;
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
 * How routing should treat an upstream failure. The message decides where the exception cannot: a
 * ValidationException "Input is too long for requested model" wants a larger lane; a ThrottlingException
 * "Too many tokens per day" is a daily quota, not a moment's rate limit.
 */
function classify(status: number, kind: IrErrorKind | undefined, message: string, type: string | undefined): FailureClass {
  // A gateway upstream says a spent budget inside a ValidationException, which alone is the caller's fault.
  if (type === "insufficient_quota") return "quota";
  if ((status === 400 || status === 413 || status === 424) && /too long|context (window|length|limit)|too many (input )?tokens(?! per)/i.test(message)) return "context_length";
  if (kind === "insufficient_quota" || (status === 429 && /per day|daily/i.test(message))) return "quota";
  if (kind === "authentication" || kind === "permission") return "credential";
  // ModelErrorException / ModelStreamErrorException are 424s, but the model failed, not the request.
  if (kind === "timeout" || kind === "overloaded" || kind === "api_error") return "transient";
  return failureFromStatus(status);
}

export function decodeError(status: number, body: string, headers: HeaderReader, now: () => number = Date.now): IrError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = undefined;
  }
  const name = exceptionName(headers, parsed);
  const known = name === undefined ? undefined : EXCEPTIONS[name];
  const wire = matches(ErrorBody, parsed) ? parsed : undefined;
  const message = wire?.message ?? wire?.Message ?? (body.trim() === "" ? `upstream answered ${status}` : body.slice(0, 500));
  const failure = classify(status, known?.kind, message, wire?.type);
  const kind = failure === "quota" ? "insufficient_quota" : (known?.kind ?? kindFromStatus(status));
  const seconds = retryAfter(headers, now());
  return irError(kind, message, { status, failure, ...(seconds !== undefined && { retryAfterSecs: seconds }), ...(name !== undefined && { code: name }) });
}

/** An in-stream exception frame (`:exception-type` a ConverseStreamOutput member) -> IR error, classed as its HTTP twin. */
export function decodeStreamException(memberName: string, payload: string): IrError {
  const name = memberName.charAt(0).toUpperCase() + memberName.slice(1);
  return decodeError(EXCEPTIONS[name]?.status ?? 500, payload, new Headers({ "x-amzn-errortype": name }));
}

/**
 * The exception frame an IR error ends a client's stream with: one of the five ConverseStreamOutput
 * exception members (anything else would be an unmodelled exception to the SDK).
 */
export function streamException(error: IrError): { type: string; body: Record<string, unknown> } {
  const type =
    error.kind === "rate_limit" || error.kind === "insufficient_quota"
      ? "throttlingException"
      : error.kind === "overloaded"
        ? "serviceUnavailableException"
        : error.kind === "api_error" && error.status === 500
          ? "internalServerException"
          : error.kind === "api_error" || error.kind === "timeout"
            ? "modelStreamErrorException"
            : "validationException";
  return { type, body: errorBody(error) };
}
