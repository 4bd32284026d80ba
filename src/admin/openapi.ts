// The admin API's OpenAPI 3.1 description, generated from the finished admin app's own route table:
// each route's TypeBox schemas (query, response per status, and the request body its handler checks,
// named by `requestBody(schema)` in its `detail`) are the ones that validate the traffic, so the document cannot drift from it.
import { ERROR_STATUS } from "../http/errors.ts";
import { VERSION } from "../version.ts";
import { isMutation } from "./scopes.ts";
import { ErrorEnvelope } from "./views.ts";

interface RouteLike {
  readonly method: string;
  readonly path: string;
  readonly hooks?: {
    readonly query?: unknown;
    readonly body?: unknown;
    readonly response?: Record<string, unknown> | unknown;
    readonly detail?: { readonly requestBody?: unknown; readonly summary?: string; readonly eventStream?: Record<string, unknown> };
  };
}

type Json = Record<string, unknown>;

/** TypeBox schemas are JSON Schema plus symbol-keyed members; a JSON round trip leaves the schema alone. */
const plain = (schema: unknown): Json => JSON.parse(JSON.stringify(schema)) as Json;

const ERROR_REF = { $ref: "#/components/schemas/ErrorEnvelope" };
const errorResponse = (description: string) => ({ description, content: { "application/json": { schema: ERROR_REF } } });

const MUTATING = new Set(["POST", "PUT", "PATCH", "DELETE"]);
/** POSTs that change nothing: open to read-only principals (admin/index.ts). */
const DRY_RUNS = new Set(["/config/validate", "/plugins/inspect"]);

/** `GET /keys/:id/usage` -> `getKeysByIdUsage`: stable, unique per route, usable as a client method name. */
function operationId(method: string, relative: string): string {
  const words = relative
    .split("/")
    .filter((s) => s !== "")
    .flatMap((s) => (s.startsWith(":") ? ["by", s.slice(1)] : [s]))
    .flatMap((s) => s.split(/[-_.]/));
  return method.toLowerCase() + words.map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join("");
}

function operation(route: RouteLike, prefix: string): Json {
  const relative = route.path.slice(prefix.length);
  const mutation = isMutation(route.method, relative);
  const parameters: Json[] = [];
  for (const [, name] of route.path.matchAll(/:([A-Za-z_]+)/g)) parameters.push({ name, in: "path", required: true, schema: { type: "string" } });
  const query = route.hooks?.query as { properties?: Record<string, unknown>; required?: string[] } | undefined;
  for (const [name, schema] of Object.entries(query?.properties ?? {})) {
    parameters.push({ name, in: "query", required: query?.required?.includes(name) ?? false, schema: plain(schema) });
  }
  const responses: Json = {};
  const declared = (route.hooks?.response ?? {}) as Record<string, unknown>;
  for (const [status, schema] of Object.entries(declared)) {
    if (typeof schema === "object" && schema !== null) responses[status] = { description: `${status} answer`, content: { "application/json": { schema: plain(schema) } } };
  }
  const events = route.hooks?.detail?.eventStream;
  if (events) {
    responses["200"] = {
      description: "a text/event-stream: each event's `data` is one JSON object, its shape by event name in x-events",
      content: { "text/event-stream": { schema: { type: "string" } } },
      "x-events": plain(events),
    };
  }
  responses["400"] = errorResponse("invalid_request: a malformed body, query or parameter (the message names the member)");
  responses["401"] = errorResponse("unauthorized: no admin credential, or one not accepted");
  // Every route: a browser Origin or a Host the listener does not accept (admin/origin.ts).
  responses["403"] = errorResponse(`forbidden: ${mutation ? "the credential has read-only scope, or " : ""}a browser Origin or a Host not accepted (security.admin_allowed_origins, security.admin_allowed_hosts)`);
  if (mutation) responses["409"] = errorResponse("conflict or version_conflict");
  if (parameters.some((p) => p.in === "path") || mutation) responses["404"] = errorResponse("not_found");
  responses["429"] = { ...errorResponse("rate_limited: past the admin rate limit"), headers: { "Retry-After": { schema: { type: "integer" } } } };
  responses["500"] = errorResponse("internal (no detail)");
  const op: Json = {
    operationId: operationId(route.method, relative),
    "x-scope": mutation ? "full" : "read-only",
    responses,
  };
  if (route.hooks?.detail?.summary) op.summary = route.hooks.detail.summary;
  if (parameters.length > 0) op.parameters = parameters;
  const described = route.hooks?.detail?.requestBody;
  if (described) op.requestBody = plain(described);
  else if (route.hooks?.body) op.requestBody = { required: true, content: { "application/json": { schema: plain(route.hooks.body) } } };
  if (op.requestBody) responses["415"] = errorResponse("invalid_request: the body was not sent as content-type: application/json");
  return op;
}

export function openApiDocument(routes: readonly RouteLike[], prefix: string): Json {
  const paths: Record<string, Json> = {};
  for (const route of routes) {
    if (!["GET", "POST", "PUT", "PATCH", "DELETE"].includes(route.method)) continue;
    const path = route.path.replace(/:([A-Za-z_]+)/g, "{$1}");
    (paths[path] ??= {})[route.method.toLowerCase()] = operation(route, prefix);
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Gateway admin API",
      version: VERSION,
      description: `Admin plane of the gateway. Errors use the envelope {"error": {"code", "message"}}; codes and statuses: ${Object.entries(ERROR_STATUS).map(([c, s]) => `${c} ${s}`).join(", ")}.`,
    },
    servers: [{ url: "http://127.0.0.1:8081", description: "the default admin listener (loopback)" }],
    security: [{ adminToken: [] }, { bearer: [] }],
    paths,
    components: {
      schemas: { ErrorEnvelope: plain(ErrorEnvelope) },
      securitySchemes: {
        adminToken: { type: "apiKey", in: "header", name: "x-admin-token" },
        bearer: { type: "http", scheme: "bearer" },
      },
    },
  };
}

/**
 * A route's `detail` naming the body schema its handler checks itself (so a refusal is audited before
 * the 400): the document shows it as the operation's request body.
 */
export function requestBody(schema: unknown, required = true): { requestBody: never } {
  return { requestBody: { required, content: { "application/json": { schema } } } as never };
}

/** A route's `detail` for a server-sent-events answer: each event name and the schema of its JSON data. */
export function eventStream(events: Record<string, unknown>): { eventStream: never } {
  return { eventStream: events as never };
}
