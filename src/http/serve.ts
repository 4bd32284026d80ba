// One listener: Bun.serve around an app's fetch, with the body-size limit checked from the header
// before any byte is read (Bun still cuts a chunked body that runs past the same limit).
import type { Server } from "bun";
import type { ListenerSettings } from "../config/snapshot.ts";
import { errorResponse } from "./errors.ts";

export type FetchHandler = (request: Request, server: Server<undefined>) => Response | Promise<Response>;

export interface ListenerOptions {
  readonly settings: ListenerSettings;
  readonly maxBodyBytes: number;
  readonly fetch: FetchHandler;
  /** Response for a body over the limit (the data plane answers in the caller's protocol later). */
  readonly tooLarge?: (limit: number) => Response;
}

export const defaultTooLarge = (limit: number) => errorResponse("invalid_request", `request body exceeds the ${limit}-byte limit`, { status: 413 });

export function startListener(options: ListenerOptions): Server<undefined> {
  const { settings, maxBodyBytes, fetch } = options;
  const tooLarge = options.tooLarge ?? defaultTooLarge;
  return Bun.serve({
    hostname: settings.hostname,
    port: settings.port,
    maxRequestBodySize: maxBodyBytes,
    // Streaming answers can be silent for a long time while a model thinks; the upstream timeout bounds them.
    idleTimeout: 0,
    development: false,
    tls: settings.tls
      ? { cert: settings.tls.cert, key: settings.tls.key, ca: settings.tls.ca, requestCert: settings.tls.ca !== undefined, rejectUnauthorized: settings.tls.ca !== undefined, ALPNProtocols: "http/1.1" }
      : undefined,
    fetch(request, server) {
      const length = request.headers.get("content-length");
      if (length !== null && Number(length) > maxBodyBytes) return tooLarge(maxBodyBytes);
      return fetch(request, server);
    },
    error(error) {
      // Reached only if a handler throws past the app's own error handling.
      return errorResponse("internal", "internal error");
    },
  });
}

/** `host:port` as a client would dial it. */
export function listenerAddress(server: Server<undefined>): string {
  const host = server.hostname?.includes(":") ? `[${server.hostname}]` : server.hostname;
  return `${host}:${server.port}`;
}
