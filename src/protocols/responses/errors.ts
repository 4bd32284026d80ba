// Responses errors. Over HTTP they are OpenAI's own (API reference, "Error codes"): the same
// {"error": {"message", "type", "param", "code"}} body and statuses as Chat Completions, so the Chat
// Completions codec is reused as is. Inside a stream a failure is the response object's `error`
// ({code, message}, SDK ResponseError) in `response.failed`, or an `error` event ({code, message,
// param}); neither carries a status, so the code decides how routing treats it.
import { irErrorFromWire } from "../openai/errors.ts";
import type { IrError, IrErrorKind } from "../../ir/index.ts";
import type { WarningSink } from "../types.ts";

export { decodeError, encodeError } from "../openai/errors.ts";

/** The codes a failed response names (SDK ResponseError.code): kept when an error carries one of them. */
const RESPONSE_CODES = new Set([
  "server_error", "rate_limit_exceeded", "invalid_prompt", "data_residency_mismatch", "bio_policy", "vector_store_timeout", "invalid_image",
  "invalid_image_format", "invalid_base64_image", "invalid_image_url", "image_too_large", "image_too_small", "image_parse_error",
  "image_content_policy_violation", "invalid_image_mode", "image_file_too_large", "unsupported_image_media_type", "empty_image_file",
  "failed_to_download_image", "image_file_not_found",
]);

/** The HTTP status each code would have had; the image and prompt codes are faults in the caller's input. */
function statusOfCode(code: string | undefined): number {
  switch (code) {
    case undefined:
    case "server_error":
      return 500;
    case "rate_limit_exceeded":
    case "insufficient_quota":
      return 429;
    case "vector_store_timeout":
      return 504;
    default:
      return RESPONSE_CODES.has(code) || code === "context_length_exceeded" ? 400 : 500;
  }
}

/** A failed response's `error`, or an `error` event's members, as an IR error classed like its HTTP twin. */
export function decodeFailure(error: { code?: string | null; message?: string | null; param?: string | null } | null | undefined): IrError {
  const code = error?.code ?? undefined;
  const wire: Record<string, string> = { message: error?.message ?? "the upstream response failed" };
  if (code !== undefined) wire.code = code;
  if (error?.param) wire.param = error.param;
  return irErrorFromWire(statusOfCode(code), { error: wire });
}

/** Kinds that are the server's trouble: `server_error` says exactly that. */
const SERVER_KINDS: ReadonlySet<IrErrorKind> = new Set(["api_error", "overloaded", "timeout"]);

/** An IR error as a failed response's `error` object. */
export function failureOf(error: IrError, warn: WarningSink): { code: string; message: string } {
  if (error.code !== undefined && RESPONSE_CODES.has(error.code)) return { code: error.code, message: error.message };
  if (error.kind === "rate_limit") return { code: "rate_limit_exceeded", message: error.message };
  if (!SERVER_KINDS.has(error.kind)) warn(`${error.kind} error has no code of a failed response; sent server_error`);
  return { code: "server_error", message: error.message };
}
