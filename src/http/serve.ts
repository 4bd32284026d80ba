// One listener: Bun.serve around an app's fetch, with our own body-size limit. Bun's built-in limit
// answers an empty 413, so it is set high and ours runs first: from Content-Length before any byte is
// read, and for a chunked body by counting bytes as they stream in.
import type { Server } from "bun";
import type { ListenerSettings } from "../config/snapshot.ts";
import { errorResponse } from "./errors.ts";

export type FetchHandler = (request: Request, server: Server<undefined>) => Response | Promise<Response>;

export interface ListenerOptions {
  readonly settings: ListenerSettings;
  /** Read per request: `security` is live on a config swap. */
  readonly maxBodyBytes: () => number;
  readonly fetch: FetchHandler;
  /**
   * POST handlers matched by Bun's native router before `fetch` (the hottest paths skip the app
   * router). Other methods on these paths still reach `fetch`, so 405 and Allow keep working.
   */
  readonly routes?: Readonly<Record<string, FetchHandler>>;
  /** Response for a body over the limit; the data plane answers in the caller's protocol. */
  readonly tooLarge?: (limit: number, request: Request) => Response;
}

export class BodyTooLargeError extends Error {
  readonly limit: number;
  constructor(limit: number) {
    super(tooLargeMessage(limit));
    this.limit = limit;
  }
}

/** A chunked request whose body errors with BodyTooLargeError once it passes `limit` bytes. */
function limitChunkedBody(request: Request, limit: number): Request {
  if (request.body === null) return request;
  let seen = 0;
  const counted = request.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        seen += chunk.byteLength;
        if (seen > limit) controller.error(new BodyTooLargeError(limit));
        else controller.enqueue(chunk);
      },
    }),
  );
  const copy = new Request(request, { body: counted, duplex: "half" } as RequestInit);
  // Bun's router hands path parameters on the request it made; without them a chunked Gemini or
  // Bedrock call lost the model and method its path names.
  const params = (request as { params?: unknown }).params;
  if (params !== undefined) Object.defineProperty(copy, "params", { value: params });
  return copy;
}

/**
 * Elysia looks for the path from the URL's 12th character on, as if every host had four or more: with
 * `Host: gw` (`http://gw/healthz`) it found none and every route answered 405. Without a Host header Bun
 * gives the path alone, which `new URL` refuses (a 500). Such a request's `url` is shadowed by one naming
 * this listener's own address (the same object, so requestIP still knows it; the Host header stays as
 * the client sent it).
 */
function withRoutableUrl(request: Request, server: Server<undefined>, scheme: string): Request {
  // The usual request names a host long enough (the URL is built from it): no URL string is made.
  const host = request.headers.get("host");
  if (host !== null && host.length >= (scheme === "https" ? 3 : 4) && host.charCodeAt(0) !== SLASH) return request;
  const url = request.url;
  const relative = url.charCodeAt(0) === SLASH;
  const slash = relative ? 0 : url.indexOf("/", 8);
  if (!relative && (slash === -1 || slash >= 11)) return request;
  Object.defineProperty(request, "url", { value: `${scheme}://${listenerAddress(server)}${url.slice(slash)}` });
  return request;
}

const SLASH = 0x2f;

/** Bun's own cap: above any sane configured limit, which is ours to enforce (and may change live). */
const HARD_CAP_BYTES = 4 * 1024 * 1024 * 1024;

export const tooLargeMessage = (limit: number) => `request body exceeds the ${limit}-byte limit`;

/** The unread rest of the body would otherwise be parsed as the next request: close the connection. */
export function closeConnection(response: Response): Response {
  response.headers.set("connection", "close");
  return response;
}

export const defaultTooLarge = (limit: number) => closeConnection(errorResponse("invalid_request", tooLargeMessage(limit), { status: 413 }));

export function startListener(options: ListenerOptions): Server<undefined> {
  const { settings, maxBodyBytes, fetch } = options;
  const tooLarge = options.tooLarge ?? defaultTooLarge;
  const scheme = settings.tls ? "https" : "http";
  const limited = (handler: FetchHandler): FetchHandler => (request, server) => {
    withRoutableUrl(request, server, scheme);
    const limit = maxBodyBytes();
    const length = request.headers.get("content-length");
    if (length !== null) return Number(length) > limit ? tooLarge(limit, request) : handler(request, server);
    return handler(withRoutableUrl(limitChunkedBody(request, limit), server, scheme), server);
  };
  const routes = Object.fromEntries(Object.entries(options.routes ?? {}).map(([path, handler]) => [path, { POST: limited(handler) }]));
  return Bun.serve({
    hostname: settings.hostname,
    port: settings.port,
    // Bun turns SO_REUSEPORT on when `development` is false unless told not to: a second gateway then
    // bound the same address beside the first, and requests alternated between the two.
    reusePort: false,
    // The AWS SDK's Bedrock client speaks HTTP/2 by default: h2 by ALPN over TLS, prior knowledge (h2c)
    // on a plain port. Everyone else keeps HTTP/1.1 on the same port.
    http2: true,
    maxRequestBodySize: HARD_CAP_BYTES,
    // Streaming answers can be silent for a long time while a model thinks; the upstream timeout bounds them.
    idleTimeout: 0,
    development: false,
    tls: settings.tls
      ? { cert: settings.tls.cert, key: settings.tls.key, ca: settings.tls.ca, requestCert: settings.tls.ca !== undefined, rejectUnauthorized: settings.tls.ca !== undefined }
      : undefined,
    routes,
    fetch: limited(fetch),
    error() {
      // Reached only if a handler throws past the app's own error handling; never show the error.
      return errorResponse("internal", "internal error");
    },
  });
}

/** `host:port` as a client would dial it. */
export function listenerAddress(server: Server<undefined>): string {
  const host = server.hostname?.includes(":") ? `[${server.hostname}]` : server.hostname;
  return `${host}:${server.port}`;
}
