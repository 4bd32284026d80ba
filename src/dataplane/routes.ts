// One route per ingress path: the vendor's own paths, each handing the raw request to the pipeline with
// that protocol's adapter and what the path itself says (Gemini and Bedrock put the model, and whether
// to stream, in the path). Bodies are read by the pipeline (parse: "none"), so a malformed body is
// answered in the protocol's own error shape, not the gateway's.
import { irError } from "../ir/index.ts";
import { adapterFor, hasAdapter } from "../protocols/registry.ts";
import type { IngressContext, ProtocolAdapter, WireProtocol } from "../protocols/types.ts";
import type { PipelineDeps } from "./exchange.ts";
import { handleModelRequest } from "./pipeline.ts";

export type Params = Readonly<Record<string, string>>;

/** What one request to an ingress path is: the adapter that speaks to the caller, and the path's context. */
type Resolved = { readonly adapter: ProtocolAdapter; readonly context: IngressContext } | { readonly adapter: ProtocolAdapter; readonly notFound: string };

interface IngressRoute {
  readonly protocol: WireProtocol;
  /** A Bun / Elysia route pattern. */
  readonly path: string;
  /** For paths with parameters: the context they give (built per request; the rest are constant). */
  readonly resolve?: (adapter: ProtocolAdapter, params: Params, url: string) => Resolved;
}

/** Gemini names the model and the method in one segment: `{model}:generateContent`. */
function geminiCall(adapter: ProtocolAdapter, params: Params, url: string): Resolved {
  const call = params.call ?? "";
  const colon = call.lastIndexOf(":");
  const model = call.slice(0, colon);
  const method = call.slice(colon + 1);
  if (colon <= 0 || (method !== "generateContent" && method !== "streamGenerateContent")) return { adapter, notFound: `Method ${method || call} is not served by this gateway. It serves: ${SERVED_TEXT}.` };
  if (method === "generateContent") return { adapter, context: { pathModel: model, pathStream: false } };
  // Without `alt=sse` Gemini streams one JSON array; the adapter's variant for it is built once.
  const sse = new URL(url).searchParams.get("alt") === "sse";
  return { adapter: sse ? adapter : (adapter.jsonArrayStream ?? adapter), context: { pathModel: model, pathStream: true } };
}

const bedrockCall =
  (stream: boolean) =>
  (adapter: ProtocolAdapter, params: Params): Resolved => ({ adapter, context: { pathModel: params.modelId ?? "", pathStream: stream } });

const INGRESS_ROUTES: readonly IngressRoute[] = [
  { protocol: "openai", path: "/v1/chat/completions" },
  { protocol: "openai", path: "/chat/completions" },
  { protocol: "anthropic", path: "/v1/messages" },
  { protocol: "responses", path: "/v1/responses" },
  { protocol: "cohere", path: "/v2/chat" },
  { protocol: "gemini", path: "/v1beta/models/:call", resolve: geminiCall },
  { protocol: "gemini", path: "/v1/models/:call", resolve: geminiCall },
  { protocol: "bedrock", path: "/model/:modelId/converse", resolve: bedrockCall(false) },
  { protocol: "bedrock", path: "/model/:modelId/converse-stream", resolve: bedrockCall(true) },
];

const GEMINI_METHODS = "{model}:generateContent | {model}:streamGenerateContent";
/** Every model path the data listener serves, as a caller would write it: for `GET /` and the answer to a path it does not. */
export const SERVED_PATHS: readonly { readonly method: string; readonly path: string; readonly protocol: string }[] = [
  ...INGRESS_ROUTES.map((r) => ({ method: "POST", path: r.path.replace(":call", GEMINI_METHODS).replace(":modelId", "{modelId}"), protocol: r.protocol })),
  { method: "POST", path: "/{provider}/{model}", protocol: "openai" },
  { method: "POST", path: "/{model}", protocol: "openai" },
  { method: "GET", path: "/v1/models", protocol: "openai" },
];
/** The same list in one line of text, made once. */
export const SERVED_TEXT = SERVED_PATHS.map((p) => `${p.method} ${p.path}`).join(", ");

/** A route pattern as a matcher, for the one caller that has no router to ask (the 413 answer). */
const matcherOf = (path: string) => new RegExp(`^${path.replace(/:[A-Za-z]+/g, "[^/]+")}$`);
const MATCHERS = INGRESS_ROUTES.map((route) => ({ route, pattern: matcherOf(route.path) }));

/** The protocol of a protocol path; undefined for any other path. */
function protocolPath(pathname: string): ProtocolAdapter | undefined {
  for (const { route, pattern } of MATCHERS) if (pattern.test(pathname)) return adapterFor(route.protocol);
  return undefined;
}

/** One or two path segments: the shape of the direct routes (`/{model}`, `/{provider}/{model}`), which speak OpenAI. */
const directShaped = (pathname: string) => {
  const segments = pathname.split("/").filter((s) => s !== "").length;
  return segments >= 1 && segments <= 2;
};

/**
 * The protocol whose error shape a request to this path gets before the pipeline has seen it (a body
 * over the limit): a protocol path's own, OpenAI's for the direct routes (one or two path segments), none
 * for anything else.
 */
export function ingressFor(request: Request): ProtocolAdapter | undefined {
  const pathname = new URL(request.url).pathname;
  return protocolPath(pathname) ?? (request.method === "POST" && directShaped(pathname) ? adapterFor("openai") : undefined);
}

/**
 * The app's 405 for a wrong method on a protocol path or a direct route, said in that protocol's own
 * error shape (the generic envelope made each vendor's SDK raise the wrong error), with the app's Allow.
 * Operational routes (they answer GET) keep the generic one. Only 405s pay for this.
 */
export function methodNotAllowed(request: Request, answer: Response): Response {
  const allow = answer.headers.get("allow");
  if (allow === null) return answer;
  const pathname = new URL(request.url).pathname;
  const ingress = protocolPath(pathname) ?? (!allow.includes("GET") && directShaped(pathname) ? adapterFor("openai") : undefined);
  if (!ingress) return answer;
  const refused = ingress.encodeError(irError("invalid_request", `${request.method} is not allowed on ${pathname}; allowed: ${allow}`, { status: 405 }));
  const headers = new Headers(refused.headers);
  headers.set("allow", allow);
  // Some shapes fix the status by kind (Bedrock's ValidationException is always 400).
  return new Response(refused.body, { status: 405, headers });
}

type Handler = (request: Request, params: Params) => Promise<Response>;

/** The adapter is looked up at the route's first request: the protocol's modules load then (registry.ts). */
function handlerFor(deps: PipelineDeps, route: IngressRoute): Handler {
  let adapter: ProtocolAdapter | undefined;
  const resolve = route.resolve;
  if (!resolve) return (request) => handleModelRequest(deps, (adapter ??= adapterFor(route.protocol)!), request);
  return async (request, params) => {
    const resolved = resolve((adapter ??= adapterFor(route.protocol)!), params, request.url);
    if ("notFound" in resolved) return resolved.adapter.encodeError(irError("not_found", resolved.notFound));
    return handleModelRequest(deps, resolved.adapter, request, { context: resolved.context });
  };
}

/** Pattern -> handler for every ingress route whose protocol this build has an adapter for. */
export function ingressHandlers(deps: PipelineDeps): Record<string, Handler> {
  const handlers: Record<string, Handler> = {};
  for (const route of INGRESS_ROUTES) if (hasAdapter(route.protocol)) handlers[route.path] = handlerFor(deps, route);
  return handlers;
}

/** The handlers for Bun's native router (http/serve.ts `routes`), which hands path parameters on the request. */
export function protocolHandlers(deps: PipelineDeps): Record<string, (request: Request) => Promise<Response>> {
  return Object.fromEntries(Object.entries(ingressHandlers(deps)).map(([path, handler]) => [path, (request: Request) => handler(request, (request as Request & { params?: Params }).params ?? {})]));
}
