// Answers for what the data plane does not serve: a path (POST /v1/embeddings once answered "The model
// `v1/embeddings` does not exist") and a model name. Each says what is served instead, in the caller's
// own error shape, so its SDK raises the right error with a message that helps. Only these answers pay
// for this: a matched route never reaches it.
import { nameList, type Snapshot } from "../config/snapshot.ts";
import { errorResponse } from "../http/errors.ts";
import { irError } from "../ir/index.ts";
import { adapterFor } from "../protocols/registry.ts";
import type { ProtocolAdapter, WireProtocol } from "../protocols/types.ts";
import { SERVED_TEXT } from "./routes.ts";

/** Path prefixes only one vendor's SDK sends. */
const PATH_PROTOCOLS: readonly [string, WireProtocol][] = [
  ["/v1/messages", "anthropic"],
  ["/v1/complete", "anthropic"],
  ["/v1/responses", "responses"],
  ["/v1beta/", "gemini"],
  ["/upload/v1beta/", "gemini"],
  ["/model/", "bedrock"],
  ["/v2/", "cohere"],
];

/**
 * The protocol a request to a path this gateway does not serve came in, judged from the path, then
 * from the headers each SDK always sends (where the path is shared: `/v1/...`), else OpenAI's for
 * `/v1/` and the direct-route shapes; undefined for a path no SDK would send (the gateway's own envelope).
 */
export function callerProtocol(request: Request, pathname: string): ProtocolAdapter | undefined {
  for (const [prefix, protocol] of PATH_PROTOCOLS) if (pathname.startsWith(prefix)) return adapterFor(protocol);
  const headers = request.headers;
  if (headers.has("anthropic-version")) return adapterFor("anthropic");
  if (headers.has("x-goog-api-key")) return adapterFor("gemini");
  if (headers.get("authorization")?.startsWith("AWS4-HMAC-SHA256 ")) return adapterFor("bedrock");
  if (pathname.startsWith("/v1/") || pathname === "/v1" || request.method === "POST") return adapterFor("openai");
  return undefined;
}

export const unknownRouteMessage = (method: string, pathname: string, why?: string) =>
  `This gateway does not serve ${method} ${pathname}${why === undefined ? "" : ` (${why})`}. It serves: ${SERVED_TEXT}. See GET / on this listener.`;

/**
 * 404 for a path no route serves, in the caller's protocol (OpenAI's SDK raises NotFoundError with this
 * message). `why`: what made a path of a served shape unserved (the direct route's unknown provider).
 */
export function unknownRoute(request: Request, why?: string): Response {
  const pathname = new URL(request.url).pathname;
  const message = unknownRouteMessage(request.method, pathname, why);
  const caller = callerProtocol(request, pathname);
  if (!caller) return errorResponse("not_found", message);
  // OpenAI's own answer to an unknown URL is a 404 invalid_request_error with no code: `not_found` would
  // put model_not_found on it. The others say not found in their own words.
  const openaiShaped = caller.name === "openai" || caller.name === "responses";
  return caller.encodeError(openaiShaped ? irError("invalid_request", message, { status: 404 }) : irError("not_found", message));
}

/**
 * The answer to a model name no pool or alias has: the names this caller may use. A key limited to some
 * pools (allowed_pools) hears only those, so no key learns a name it could not call.
 */
export function unknownModelMessage(snapshot: Snapshot, model: string, allowedPools: readonly string[] | null | undefined): string {
  const known = snapshot.modelNames;
  const listed = allowedPools ? nameList(known.names.filter((name) => allowedPools.includes(name))) : known.listed;
  return `The model \`${model}\` does not exist. ${listed === "" ? "This key may use no model." : `Models you may use: ${listed}.`}`;
}
