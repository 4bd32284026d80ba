// GET /stats: the per-lane snapshot and pool membership (gateway-spec.md, "Data plane and operational
// routes"). Like /metrics it is open when the ingress chain is open, else it needs a credential the
// chain admits; governance adds virtual keys to that chain.
import type { IngressAuth } from "../auth/ingress-chain.ts";
import { anyClientCredential } from "../protocols/registry.ts";
import type { ConfigHolder } from "../config/snapshot.ts";
import { errorResponse } from "../http/errors.ts";
import { controller } from "../http/elysia.ts";
import type { RoutingState } from "../routing/state.ts";
import { statsView } from "../routing/views.ts";

export const statsRoutes = (holder: ConfigHolder, routing: RoutingState, auth: IngressAuth) =>
  controller("dataplane.stats").get("/stats", async ({ request }) => {
    const principal = await auth.authenticate(holder.current, { token: anyClientCredential(request) });
    if (!principal || principal.refusal !== undefined) return errorResponse("unauthorized", "a client credential is required for /stats");
    return Response.json(statsView(holder.current, routing));
  });
