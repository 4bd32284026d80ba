// The `cohere` adapter: Cohere's v2 Chat API (POST /v2/chat, https://docs.cohere.com/reference/chat),
// spoken as Cohere speaks it so the official SDK (cohere-ai's CohereClientV2) works unchanged against
// the gateway. The provider's base_url is https://api.cohere.com.
import { endsAtEventBoundary, SSE_HEADERS, sseEvent } from "../../transport/sse.ts";
import { bearerToken } from "../../http/credentials.ts";
import type { ProtocolAdapter } from "../types.ts";
import { decodeError, encodeError } from "./errors.ts";
import { CHAT_PATH, decodeRequest, encodeRequest } from "./request.ts";
import { decodeResponse, encodeResponse, usageFromResponse } from "./response.ts";
import { createStreamParser, createStreamEncoder, createStreamWriter } from "./stream.ts";
import { COHERE_NAMES } from "../tool-names.ts";

export const cohere: ProtocolAdapter = {
  name: "cohere",

  decodeRequest,
  encodeResponse,
  createStreamEncoder,
  createStreamWriter,
  streamHeaders: SSE_HEADERS,
  // Cohere has no error event: a failed generation ends with message-end carrying `delta.error`.
  streamBreak: (error, last) =>
    endsAtEventBoundary(last) ? sseEvent(JSON.stringify({ type: "message-end", delta: { finish_reason: "ERROR", error: error.message } }), "message-end") : undefined,
  encodeError,
  // The reference: "Bearer authentication of the form `Bearer <token>`"; the SDK sends its token so.
  clientCredential: (request) => bearerToken(request.headers),

  toolNames: COHERE_NAMES,
  encodeRequest,
  authHeaders: (apiKey) => ({ authorization: `Bearer ${apiKey}` }),
  // The adapter contract passes no clock; these default to the wall clock.
  decodeResponse: (body) => decodeResponse(body),
  createStreamParser: () => createStreamParser(),
  decodeError: (status, body, headers) => decodeError(status, body, headers),

  // The model is a body member and streaming is a body member too, so the path never changes.
  upstreamPath: () => CHAT_PATH,
  // The body was parsed for this request alone, so it is updated in place rather than copied.
  rewriteModel: (body, upstreamModel) => {
    body.model = upstreamModel;
    return body;
  },
  usageFromResponse,
};
