import { controller } from "../http/elysia.ts";
import type { ConfigHolder } from "../config/snapshot.ts";
import type { Metering } from "../governance/metering.ts";
import type { RoutingState } from "../routing/state.ts";
import { anyLaneUsable } from "../routing/views.ts";

/**
 * GET /healthz: open, `200 ok` when any lane is usable (breaker, concurrency, budget), else 503. While the
 * store refuses metering writes the body is `degraded`, still 200: serving goes on (replicas.md).
 */
export const healthRoutes = (holder: ConfigHolder, routing: RoutingState, metering?: Metering) =>
  controller("dataplane.health").get("/healthz", () =>
    anyLaneUsable(holder.current, routing)
      ? new Response(metering?.unavailable ? "degraded" : "ok", { headers: { "content-type": "text/plain" } })
      : new Response("no usable lane", { status: 503, headers: { "content-type": "text/plain", "retry-after": "1" } }),
  );
