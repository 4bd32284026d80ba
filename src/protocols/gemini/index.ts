// The `gemini` adapter: the Google Generative Language API (generateContent and streamGenerateContent),
// spoken as Google speaks it so the official @google/genai SDK works unchanged against the gateway.
// The model is a path segment, so the path carries it both ways and the body is never rewritten.
import { endsAtEventBoundary, SSE_HEADERS, sseEvent } from "../../transport/sse.ts";
import type { ProtocolAdapter } from "../types.ts";
import { decodeError, encodeError, errorBody } from "./errors.ts";
import { decodeRequest, encodeRequest, generatePath } from "./request.ts";
import { decodeResponse, encodeResponse, usageFromResponse } from "./response.ts";
import { createArrayStreamParser, createArrayStreamEncoder, createArrayStreamWriter, createStreamParser, createStreamEncoder, createStreamWriter } from "./stream.ts";
import { GEMINI_NAMES } from "../tool-names.ts";

/** `x-goog-api-key`, as the SDK sends it; else the `key` query parameter of the docs' curl samples. */
function clientCredential(request: Request): string | undefined {
  const header = request.headers.get("x-goog-api-key")?.trim();
  if (header) return header;
  // No query, no `?key=`: the URL is parsed only when there is one to read.
  if (!request.url.includes("?")) return undefined;
  const key = new URL(request.url).searchParams.get("key")?.trim();
  return key ? key : undefined;
}

/** A streamed JSON array is sent as JSON (Google's own content type for it). */
const JSON_STREAM_HEADERS = { ...SSE_HEADERS, "content-type": "application/json; charset=utf-8" } as const;

const sse: ProtocolAdapter = {
  name: "gemini",

  decodeRequest,
  encodeResponse,
  createStreamEncoder,
  createStreamWriter,
  streamHeaders: SSE_HEADERS,
  // Gemini ends a failed stream with a final `{"error": {...}}` chunk.
  streamBreak: (error, last) => (endsAtEventBoundary(last) ? sseEvent(JSON.stringify(errorBody(error))) : undefined),
  encodeError,
  clientCredential,

  toolNames: GEMINI_NAMES,
  encodeRequest,
  authHeaders: (apiKey) => ({ "x-goog-api-key": apiKey }),
  // The adapter contract passes no clock; these default to the wall clock.
  decodeResponse: (body) => decodeResponse(body),
  createStreamParser: () => createStreamParser(),
  decodeError: (status, body, headers) => decodeError(status, body, headers),

  upstreamPath: (upstreamModel, stream) => generatePath(upstreamModel, stream),
  rewriteModel: (body) => body,
  usageFromResponse,
};

/**
 * For `:streamGenerateContent` without alt=sse: streams are one JSON array both ways, so a same-protocol
 * route asks the upstream for the array too and meters it with the array decoder.
 */
const jsonArrayStream: ProtocolAdapter = {
  ...sse,
  createStreamEncoder: createArrayStreamEncoder,
  createStreamWriter: createArrayStreamWriter,
  streamHeaders: JSON_STREAM_HEADERS,
  // In the array form the error is one more element, then the array closes (after a whole element only).
  streamBreak: (error, last) => (lastNonSpace(last) === 0x7d ? new TextEncoder().encode(`,\r\n${JSON.stringify(errorBody(error))}]`) : undefined),
  createStreamParser: () => createArrayStreamParser(),
  upstreamPath: (upstreamModel, stream) => generatePath(upstreamModel, stream, false),
};

export const gemini: ProtocolAdapter = { ...sse, jsonArrayStream };

function lastNonSpace(bytes: Uint8Array): number | undefined {
  for (let i = bytes.length - 1; i >= 0; i--) if (bytes[i] !== 0x20 && bytes[i] !== 0x0a && bytes[i] !== 0x0d && bytes[i] !== 0x09) return bytes[i];
  return undefined;
}
