// The `bedrock` adapter: Amazon Bedrock's Converse API (POST /model/{modelId}/converse and
// /converse-stream), spoken as Bedrock speaks it so the official AWS SDK (BedrockRuntimeClient) works
// unchanged against the gateway: JSON both ways, event-stream frames for streams, x-amzn-ErrorType errors.
// The base_url is https://bedrock-runtime.{region}.amazonaws.com; SigV4 signing is the egress's
// (transport/sigv4.ts), not the adapter's.
import { bearerToken } from "../../http/credentials.ts";
import type { ProtocolAdapter } from "../types.ts";
import { decodeError, encodeError } from "./errors.ts";
import { decodeRequest, encodeRequest, upstreamPath } from "./request.ts";
import { decodeResponse, encodeResponse, usageFromResponse } from "./response.ts";
import { EVENTSTREAM_HEADERS, createStreamParser, exceptionFrame, createStreamEncoder, createStreamWriter } from "./stream.ts";
import { DASHED_64 } from "../tool-names.ts";

export const bedrock: ProtocolAdapter = {
  name: "bedrock",

  decodeRequest,
  encodeResponse,
  createStreamEncoder,
  createStreamWriter: (request, warn, emit) => createStreamWriter(request, warn, emit),
  streamHeaders: EVENTSTREAM_HEADERS,
  // Frames carry their own length: an exception frame after a cut mid-frame fails the client's CRC
  // check instead, an error either way.
  streamBreak: (error) => exceptionFrame(error),
  encodeError,
  // A Bedrock API key (https://docs.aws.amazon.com/bedrock/latest/userguide/api-keys-use.html); a
  // SigV4-signed request's Authorization is not a Bearer token and is verified elsewhere.
  clientCredential: (request) => bearerToken(request.headers),

  toolNames: DASHED_64,
  encodeRequest,
  authHeaders: (apiKey) => ({ authorization: `Bearer ${apiKey}` }),
  // The adapter contract passes no clock; these default to the wall clock and random ids.
  decodeResponse: (body) => decodeResponse(body),
  createStreamParser: () => createStreamParser(),
  decodeError: (status, body, headers) => decodeError(status, body, headers),

  upstreamPath,
  // The model is in the path (upstreamPath), so the body goes up unchanged.
  rewriteModel: (body) => body,
  usageFromResponse,
};
