// The `anthropic` adapter: the Anthropic Messages API (POST /v1/messages), spoken as Anthropic speaks it
// so the official SDK, and Claude Code, work unchanged against the gateway.
import { endsAtEventBoundary, SSE_HEADERS, sseEvent } from "../../transport/sse.ts";
import { bearerToken } from "../../http/credentials.ts";
import type { ProtocolAdapter } from "../types.ts";
import { decodeError, encodeError, errorBody } from "./errors.ts";
import { MESSAGES_PATH, decodeRequest, encodeRequest } from "./request.ts";
import { decodeResponse, encodeResponse, usageFromResponse } from "./response.ts";
import { createStreamParser, createStreamEncoder, createStreamWriter } from "./stream.ts";
import { DASHED_64 } from "../tool-names.ts";

/** The API version the gateway speaks upstream; every Messages request must name one. */
export const ANTHROPIC_VERSION = "2023-06-01";

/**
 * `x-api-key`, as the SDK sends an API key; else `Authorization: Bearer`, as it sends an auth token
 * (the scheme is case-insensitive, RFC 9110 section 11.1).
 */
function clientCredential(request: Request): string | undefined {
  const key = request.headers.get("x-api-key")?.trim();
  return key ? key : bearerToken(request.headers);
}

export const anthropic: ProtocolAdapter = {
  name: "anthropic",

  decodeRequest,
  encodeResponse,
  createStreamEncoder,
  createStreamWriter,
  streamHeaders: SSE_HEADERS,
  streamBreak: (error, last) => (endsAtEventBoundary(last) ? sseEvent(JSON.stringify(errorBody(error)), "error") : undefined),
  encodeError,
  clientCredential,

  toolNames: DASHED_64,
  encodeRequest,
  authHeaders: (apiKey) => ({ "x-api-key": apiKey, "anthropic-version": ANTHROPIC_VERSION }),
  // The adapter contract passes no clock; these default to the wall clock.
  decodeResponse: (body) => decodeResponse(body),
  createStreamParser: () => createStreamParser(),
  decodeError: (status, body, headers) => decodeError(status, body, headers),

  // The model is a body member, so the path is the same for every model and for streaming.
  upstreamPath: () => MESSAGES_PATH,
  // The body was parsed for this request alone, so it is updated in place rather than copied.
  rewriteModel: (body, upstreamModel) => {
    body.model = upstreamModel;
    return body;
  },
  usageFromResponse,
};
