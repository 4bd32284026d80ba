import { controller } from "../http/elysia.ts";
import type { ConfigHolder } from "../config/snapshot.ts";
import { anyLaneUsable } from "../routing/pool.ts";

/** GET /healthz: open, `200 ok` when any lane is usable, else 503. */
export const healthRoutes = (holder: ConfigHolder) =>
  controller("dataplane.health").get("/healthz", () =>
    anyLaneUsable(holder.current.pools)
      ? new Response("ok", { headers: { "content-type": "text/plain" } })
      : new Response("no usable lane", { status: 503, headers: { "content-type": "text/plain", "retry-after": "1" } }),
  );
