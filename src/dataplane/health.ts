import { controller } from "../http/elysia.ts";
import type { ConfigHolder } from "../config/snapshot.ts";
import type { RoutingState } from "../routing/state.ts";
import { anyLaneUsable } from "../routing/views.ts";

/** GET /healthz: open, `200 ok` when any lane is usable (breaker, concurrency, budget), else 503. */
export const healthRoutes = (holder: ConfigHolder, routing: RoutingState) =>
  controller("dataplane.health").get("/healthz", () =>
    anyLaneUsable(holder.current, routing)
      ? new Response("ok", { headers: { "content-type": "text/plain" } })
      : new Response("no usable lane", { status: 503, headers: { "content-type": "text/plain", "retry-after": "1" } }),
  );
