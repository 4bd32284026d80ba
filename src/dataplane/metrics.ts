// GET /metrics: Prometheus text exposition. Open when the ingress chain is open; otherwise it needs a
// credential the chain admits (spec: client token or virtual key), failing closed like model routes.
import type { IngressAuth } from "../auth/ingress-chain.ts";
import { anyClientCredential } from "../protocols/registry.ts";
import type { ConfigHolder } from "../config/snapshot.ts";
import { errorResponse } from "../http/errors.ts";
import { controller } from "../http/elysia.ts";
import { EXPOSITION_CONTENT_TYPE, type DataPlaneMetrics } from "../telemetry/metrics.ts";

export const metricsRoutes = (holder: ConfigHolder, metrics: DataPlaneMetrics, auth: IngressAuth) =>
  controller("dataplane.metrics").get("/metrics", async ({ request }) => {
    const principal = await auth.authenticate(holder.current, { token: anyClientCredential(request) });
    if (!principal || principal.refusal !== undefined) return errorResponse("unauthorized", "a client credential is required for /metrics");
    return new Response(metrics.registry.expose(), { headers: { "content-type": EXPOSITION_CONTENT_TYPE } });
  });
