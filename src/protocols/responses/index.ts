// The `responses` adapter: the OpenAI Responses API (POST /v1/responses), spoken as OpenAI speaks it so
// the official SDK (and clients built on it, such as Codex) work unchanged against the gateway. Upstream,
// the provider's base_url is `https://api.openai.com/v1` or a compatible server's.
import { endsAtEventBoundary, SSE_HEADERS, sseEvent } from "../../transport/sse.ts";
import { bearerToken } from "../../http/credentials.ts";
import type { IrError } from "../../ir/index.ts";
import type { ProtocolAdapter } from "../types.ts";
import { decodeError, encodeError, failureOf } from "./errors.ts";
import { RESPONSES_PATH, decodeRequest, encodeRequest } from "./request.ts";
import { decodeResponse, encodeResponse, usageFromResponse } from "./response.ts";
import { createStreamParser, createStreamEncoder, createStreamWriter } from "./stream.ts";
import { DASHED_64 } from "../tool-names.ts";

export const responses: ProtocolAdapter = {
  name: "responses",

  decodeRequest,
  encodeResponse,
  createStreamEncoder,
  createStreamWriter,
  streamHeaders: SSE_HEADERS,
  streamBreak,
  encodeError,
  clientCredential: (request) => bearerToken(request.headers),

  toolNames: DASHED_64,
  encodeRequest,
  authHeaders: (apiKey) => ({ authorization: `Bearer ${apiKey}` }),
  decodeResponse,
  createStreamParser,
  decodeError,

  // The model is a body member, so the path is the same for every model and for streaming.
  upstreamPath: () => RESPONSES_PATH,
  // The body was parsed for this request alone, so it is updated in place rather than copied.
  rewriteModel: (body, upstreamModel) => {
    body.model = upstreamModel;
    return body;
  },
  usageFromResponse,
};

const SEQUENCE = /"sequence_number"\s*:\s*(\d+)/g;

/**
 * The Responses stream's `error` event, numbered after the last event the upstream sent (every event
 * carries a sequence_number; the last one is in the last bytes).
 */
function streamBreak(error: IrError, last: Uint8Array): Uint8Array | undefined {
  if (!endsAtEventBoundary(last)) return undefined;
  let sequence = -1;
  for (const match of new TextDecoder().decode(last).matchAll(SEQUENCE)) sequence = Number(match[1]);
  const { code, message } = failureOf(error, () => {});
  return sseEvent(JSON.stringify({ type: "error", code, message, param: null, sequence_number: sequence + 1 }), "error");
}
