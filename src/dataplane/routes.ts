// One route group per ingress protocol: the vendor's own paths, each handing the raw request to the
// pipeline with that protocol's adapter. Bodies are read by the pipeline (parse: "none"), so a
// malformed body is answered in the protocol's own error shape, not the gateway's.
import { controller } from "../http/elysia.ts";
import { adapterFor } from "../protocols/registry.ts";
import type { ProtocolAdapter, WireProtocol } from "../protocols/types.ts";
import { handleModelRequest, type PipelineDeps } from "./pipeline.ts";

const INGRESS_PATHS: Partial<Record<WireProtocol, readonly string[]>> = {
  openai: ["/v1/chat/completions", "/chat/completions"],
  anthropic: ["/v1/messages"],
};

/**
 * The protocol whose error shape a request to this path gets before the pipeline has seen it (a body
 * over the limit): a protocol path's own, OpenAI's for the direct routes (one or two path segments), none
 * for anything else.
 */
export function ingressFor(request: Request): ProtocolAdapter | undefined {
  const pathname = new URL(request.url).pathname;
  for (const [protocol, paths] of Object.entries(INGRESS_PATHS) as [WireProtocol, readonly string[]][]) {
    if (paths.includes(pathname)) return adapterFor(protocol);
  }
  const segments = pathname.split("/").filter((s) => s !== "").length;
  return request.method === "POST" && segments >= 1 && segments <= 2 ? adapterFor("openai") : undefined;
}

/** Path -> handler for every ingress protocol route. */
export function protocolHandlers(deps: PipelineDeps): Record<string, (request: Request) => Promise<Response>> {
  const handlers: Record<string, (request: Request) => Promise<Response>> = {};
  for (const [protocol, paths] of Object.entries(INGRESS_PATHS) as [WireProtocol, readonly string[]][]) {
    const adapter = adapterFor(protocol);
    if (!adapter) continue;
    for (const path of paths) handlers[path] = (request) => handleModelRequest(deps, adapter, request);
  }
  return handlers;
}

/**
 * The same handlers in the app router. The listener serves these paths from Bun's native router first
 * (http/serve.ts `routes`); the app keeps them so in-process use and 405/Allow see every route.
 */
export function protocolRoutes(deps: PipelineDeps) {
  let app = controller("dataplane.protocols");
  for (const [path, handler] of Object.entries(protocolHandlers(deps))) app = app.post(path, ({ request }) => handler(request), { parse: "none" });
  return app;
}
