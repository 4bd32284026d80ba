// A request handler for @aws-sdk/client-bedrock-runtime that relays the SDK's signed request byte for
// byte over fetch (HTTP/1.1), for the unit tests that call the upstream imitations (plain Bun.serve, no
// HTTP/2) and need the SDK's bytes cut in awkward pieces. Against the gateway the SDK runs with its
// default (HTTP/2) handler; nothing this handler does can help a request pass verification.
import { Readable } from "node:stream";
import { awkwardPieces } from "./upstreams/events.ts";

interface SdkRequest {
  method: string;
  protocol: string;
  hostname: string;
  port?: number;
  path: string;
  query?: Record<string, unknown>;
  headers: Record<string, string>;
  body?: string | Uint8Array;
}

export interface RelayOptions {
  /** Hand an event stream to the SDK in 1, 3 and 7-byte pieces, so its frame parser must reassemble every message. */
  readonly awkward?: boolean;
  /** Refuse a request with a query string (Converse has none). */
  readonly noQuery?: boolean;
}

export function fetchRequestHandler(options: RelayOptions = {}) {
  return {
    async handle(request: SdkRequest) {
      if (options.noQuery && request.query && Object.keys(request.query).length > 0) throw new Error("no query expected on Converse");
      const response = await fetch(`${request.protocol}//${request.hostname}:${request.port}${request.path}`, { method: request.method, headers: request.headers, body: request.body });
      const headers = Object.fromEntries(response.headers);
      // Streams reach the SDK as a Node stream (what its Node runtime reads), as they arrive.
      if (response.headers.get("content-type") !== "application/vnd.amazon.eventstream" || !response.body)
        return { response: { statusCode: response.status, headers, body: new Uint8Array(await response.arrayBuffer()) } };
      const body = options.awkward ? Readable.from(awkwardPieces(new Uint8Array(await response.arrayBuffer()))) : Readable.fromWeb(response.body as import("node:stream/web").ReadableStream<Uint8Array>);
      return { response: { statusCode: response.status, headers, body } };
    },
  };
}
