// What the operator console shows live (design/console.md, Overview and Requests): GET /requests (the
// ring of recent request-log records), GET /events (records and breaker changes as server-sent events)
// and GET /stats (the data listener's document, from the same builder, for an admin credential).
import { Type } from "@sinclair/typebox";
import { jsonController } from "../http/elysia.ts";
import { errorResponse, GatewayError } from "../http/errors.ts";
import { pushBody } from "../http/push-stream.ts";
import { statsView } from "../routing/views.ts";
import { MAX_LIVE_STREAMS } from "../telemetry/live-feed.ts";
import { RECENT_REQUESTS, type RecentFilter } from "../telemetry/recent-requests.ts";
import { OUTCOMES, RequestRecord } from "../telemetry/records.ts";
import type { AdminDeps } from "./deps.ts";
import { eventStream } from "./openapi.ts";
import { BreakerEvent, StatsView } from "./live-views.ts";

const DEFAULT_LIMIT = 100;
/** A filter value longer than any key id, group, model name or alias the config allows is refused unread. */
const MAX_FILTER_CHARS = 256;

const RequestsQuery = Type.Object({
  key_id: Type.Optional(Type.String({ description: "only this virtual key's requests" })),
  group: Type.Optional(Type.String({ description: "only requests charged to this group" })),
  model: Type.Optional(Type.String({ description: "only requests for this model, as the client named it" })),
  status: Type.Optional(Type.String({ description: "only answers with this HTTP status (an integer)" })),
  outcome: Type.Optional(Type.String({ description: `only this outcome: ${OUTCOMES.join(", ")}` })),
  limit: Type.Optional(Type.String({ description: `at most this many records, 1 to ${RECENT_REQUESTS} (default ${DEFAULT_LIMIT})` })),
});

const RequestList = Type.Object({ items: Type.Array(RequestRecord, { description: "newest first" }) });

type Query = Record<string, string | undefined>;

function text(query: Query, name: keyof RecentFilter): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (value === "" || value.length > MAX_FILTER_CHARS) throw new GatewayError("invalid_request", `${name}: expected 1 to ${MAX_FILTER_CHARS} characters`);
  return value;
}

function integer(query: Query, name: string, min: number, max: number): number | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  const n = /^[0-9]{1,4}$/.test(value) ? Number(value) : Number.NaN;
  if (!(n >= min && n <= max)) throw new GatewayError("invalid_request", `${name}: expected an integer from ${min} to ${max}, got ${JSON.stringify(value.slice(0, 40))}`);
  return n;
}

function outcome(query: Query): RecentFilter["outcome"] {
  const value = query.outcome;
  if (value === undefined) return undefined;
  if (!(OUTCOMES as readonly string[]).includes(value)) throw new GatewayError("invalid_request", `outcome: expected one of ${OUTCOMES.join(", ")}, got ${JSON.stringify(value.slice(0, 40))}`);
  return value as RecentFilter["outcome"];
}

function recent(deps: AdminDeps, query: Query) {
  const filter: RecentFilter = { key_id: text(query, "key_id"), group: text(query, "group"), model: text(query, "model"), status: integer(query, "status", 100, 599), outcome: outcome(query) };
  const limit = integer(query, "limit", 1, RECENT_REQUESTS) ?? DEFAULT_LIMIT;
  return { items: deps.telemetry?.recent.newest(filter, limit) ?? [] };
}

const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-store", "x-accel-buffering": "no" };

function events(deps: AdminDeps, request: Request): Response {
  // A HEAD answer has no body to read, so a stream opened for it would never hear its client leave.
  if (request.method === "HEAD") return new Response(null, { headers: SSE_HEADERS });
  const reader = deps.telemetry?.live.open();
  if (!reader) return errorResponse("rate_limited", `${MAX_LIVE_STREAMS} event streams are open, the most this gateway serves; close one and retry`, { headers: { "retry-after": "5" } });
  return new Response(pushBody((out) => reader.attach(out), () => reader.left()), { headers: SSE_HEADERS });
}

function stats(deps: AdminDeps) {
  if (!deps.routing) throw new GatewayError("internal", "routing state is not available");
  return statsView(deps.holder.current, deps.routing);
}

export const liveController = (deps: AdminDeps) =>
  jsonController("admin.live")
    .get("/requests", ({ query }) => recent(deps, query), { query: RequestsQuery, response: { 200: RequestList }, detail: { summary: `The last ${RECENT_REQUESTS} request-log records kept in memory, newest first, filtered` } })
    .get("/events", ({ request }) => events(deps, request), {
      detail: {
        summary: `Live events (server-sent): request, breaker, overflow; a ': keepalive' comment every 15 s; at most ${MAX_LIVE_STREAMS} streams`,
        ...eventStream({ request: RequestRecord, breaker: BreakerEvent, overflow: Type.Object({ message: Type.String() }) }),
      },
    })
    .get("/stats", () => stats(deps), { response: { 200: StatsView }, detail: { summary: "The data listener's GET /stats document: lanes and pools with their breaker states" } });
