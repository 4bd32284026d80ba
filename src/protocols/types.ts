// The contract of a protocol adapter: pure functions to and from the IR, one folder per protocol, never
// a pairwise translator. Ingress functions face the client; egress functions face the upstream.
// Stream writers and parsers hold their per-stream state in their own closure.
import type { HeaderReader } from "../transport/upstream.ts";
import type { IrError, IrRequest, IrResponse, IrStreamPart, IrUsage } from "../ir/index.ts";
import type { PushParser } from "../transport/push-parser.ts";
import type { ToolNameRule } from "./tool-names.ts";

export type WireProtocol = "openai" | "anthropic" | "gemini" | "bedrock" | "cohere" | "responses";

/** A decode that may fail in the caller's face (400 with the protocol's own error shape). */
export type Decoded<T> = { readonly ok: true; readonly value: T; readonly warnings: readonly string[] } | { readonly ok: false; readonly error: IrError };

export interface IngressContext {
  /** The model from the path, for protocols that put it there (Gemini, Bedrock). */
  readonly pathModel?: string;
  /** Streaming chosen by the path (Gemini :streamGenerateContent, Bedrock /converse-stream). */
  readonly pathStream?: boolean;
}

/** A warning sink: what an encoder dropped or clamped goes here (logged and counted by the caller). */
export type WarningSink = (warning: string) => void;

/**
 * What a stream writer emits: text (SSE, a JSON array), which the caller encodes as UTF-8, or bytes
 * (Bedrock's binary frames). Text lets the caller encode all that one upstream piece made at once: an
 * encode per event cost more than the joined text's one (issue 15).
 */
export type WireChunk = string | Uint8Array;

/** A stream encoder as a step machine: each IR part in, wire chunks out through `emit`, at once. */
export interface StreamWriter {
  accept(part: IrStreamPart): void;
  /** The IR stream ended (after `finish`, `error`, or neither: a writer says so in-stream if neither). */
  end(): void;
}

/**
 * A stream decoder driven by its caller: each piece of the upstream's body in, the IR parts it completes
 * out, synchronously. A malformed event or frame comes out as an IR `error` part (and nothing after it);
 * `push` throws SseEventTooLarge once an SSE event passes MAX_SSE_EVENT_BYTES. `end` gives what the held
 * state makes of the body's end: the held `finish`, or an `error` part when the stream was cut short.
 */
export type StreamParser = PushParser<IrStreamPart>;

/** A stateful rewrite of relayed stream bytes: each chunk in, what to send out (maybe nothing yet). */
export interface ByteFilter {
  push(chunk: Uint8Array): Uint8Array;
  /** The stream ended: whatever was held back. */
  flush(): Uint8Array;
}

export interface EncodedRequest {
  /** Appended to the provider's base_url (protocols.md: `/chat/completions`, `/v1/messages`, ...). */
  readonly path: string;
  readonly body: unknown;
  /** What the encoder dropped or clamped; logged and counted, never silent. */
  readonly warnings: readonly string[];
}

export interface ProtocolAdapter {
  readonly name: WireProtocol;

  // ingress: the client speaks this protocol
  /** Wire request body (parsed JSON) -> IR, or a caller error naming what is wrong. */
  decodeRequest(body: unknown, context: IngressContext): Decoded<IrRequest>;
  /** IR response -> wire response body. */
  encodeResponse(response: IrResponse, warn: WarningSink): unknown;
  /**
   * IR stream parts -> wire stream bytes (SSE, or AWS event-stream frames for Bedrock). The decoded
   * request is given because some wire streams depend on it (OpenAI's usage chunk: include_usage).
   * An `error` part ends the stream with the protocol's own in-stream error.
   */
  createStreamEncoder(request: IrRequest, warn: WarningSink): TransformStream<IrStreamPart, Uint8Array>;
  /** The same encoder as a step machine, for callers that drive it from their own loop (translation). */
  createStreamWriter(request: IrRequest, warn: WarningSink, emit: (chunk: WireChunk) => void): StreamWriter;
  readonly streamHeaders: Readonly<Record<string, string>>;
  /**
   * Gemini only: this adapter with streams written as one JSON array instead of SSE, for
   * `:streamGenerateContent` without `alt=sse` (its upstreamPath asks the upstream for the same form).
   */
  readonly jsonArrayStream?: ProtocolAdapter;
  /**
   * Same protocol: what ends a stream the upstream broke off after it began, appended after the last
   * bytes it sent (`last`): the protocol's in-stream error event alone, or undefined when those bytes
   * did not end at an event boundary (the client's connection is then reset: an error either way).
   */
  streamBreak?(error: IrError, last: Uint8Array): Uint8Array | undefined;
  /** A gateway-generated error in this protocol's native shape, status and headers. */
  encodeError(error: IrError): Response;
  /** The caller's credential from this protocol's own header (for the auth chain and passthrough). */
  clientCredential(request: Request): string | undefined;

  // egress: the upstream speaks this protocol
  /** The tool names the upstream accepts; others are renamed for the call and restored in the answer. */
  readonly toolNames: ToolNameRule;
  encodeRequest(request: IrRequest, upstreamModel: string): EncodedRequest;
  /** Headers that carry the provider's key (and any required version header). */
  authHeaders(apiKey: string): Record<string, string>;
  decodeResponse(body: unknown): Decoded<IrResponse>;
  /** A decoder for one upstream stream (parserTransform in transport/push-parser.ts makes it a stream stage). */
  createStreamParser(): StreamParser;
  /** An upstream error status and body -> IR error with its failure class. */
  decodeError(status: number, body: string, headers: HeaderReader): IrError;

  // same protocol: bytes pass through; only these touch them
  /** The upstream path for a request to `upstreamModel` (Gemini and Bedrock carry the model in it). */
  upstreamPath(upstreamModel: string, stream: boolean): string;
  /** The body with its model replaced, in place (the only member a same-protocol route rewrites). */
  rewriteModel(body: Record<string, unknown>, upstreamModel: string): Record<string, unknown>;
  /**
   * Streams of a protocol whose upstream reports usage only when asked (OpenAI's include_usage): asks
   * for it in `body` (in place) when the client did not, and returns the filter that takes what that
   * added back out of the relayed bytes; undefined when the body asks already. Other protocols' streams
   * always carry usage and leave this out.
   */
  askForStreamUsage?(body: Record<string, unknown>): ByteFilter | undefined;
  /** Usage from a non-streamed response body, for metering. */
  usageFromResponse(body: unknown): Partial<IrUsage> | undefined;
}
