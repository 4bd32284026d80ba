// The `openai` adapter: OpenAI Chat Completions (POST /v1/chat/completions), spoken as OpenAI speaks it
// so the official SDK works unchanged against the gateway. The same adapter serves OpenAI-compatible
// upstreams (Azure OpenAI, vLLM, Ollama, Groq, Mistral, OpenRouter, ...).
import { endsAtEventBoundary, SSE_HEADERS, sseEvent } from "../../transport/sse.ts";
import { bearerToken } from "../../http/credentials.ts";
import type { ProtocolAdapter } from "../types.ts";
import { decodeError, encodeError, wireError } from "./errors.ts";
import { decodeRequest, encodeRequest } from "./request.ts";
import { decodeResponse, encodeResponse, usageFromResponse } from "./response.ts";
import { createStreamParser, createStreamEncoder, createStreamWriter } from "./stream.ts";
import { DASHED_64 } from "../tool-names.ts";
import { askForStreamUsage } from "./stream-usage.ts";

export const CHAT_COMPLETIONS_PATH = "/chat/completions";

export const openai: ProtocolAdapter = {
  name: "openai",

  decodeRequest,
  encodeResponse,
  createStreamEncoder,
  createStreamWriter,
  streamHeaders: SSE_HEADERS,
  streamBreak: (error, last) => (endsAtEventBoundary(last) ? sseEvent(JSON.stringify({ error: wireError(error) })) : undefined),
  encodeError,
  clientCredential: (request) => bearerToken(request.headers),

  toolNames: DASHED_64,
  encodeRequest,
  authHeaders: (apiKey) => ({ authorization: `Bearer ${apiKey}` }),
  decodeResponse,
  createStreamParser,
  decodeError,

  // The model is a body member, so the path is the same for every model and for streaming.
  upstreamPath: () => CHAT_COMPLETIONS_PATH,
  // The body was parsed for this request alone, so it is updated in place rather than copied.
  rewriteModel: (body, upstreamModel) => {
    body.model = upstreamModel;
    return body;
  },
  askForStreamUsage,
  usageFromResponse,
};
