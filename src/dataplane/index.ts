// The data plane: one route group per ingress protocol, the direct routes, and the open operational routes.
import type { ConfigHolder } from "../config/snapshot.ts";
import { listenerApp } from "../http/elysia.ts";
import type { Logger } from "../telemetry/logger.ts";
import { directRoutes } from "./direct.ts";
import { healthRoutes } from "./health.ts";
import { metricsRoutes } from "./metrics.ts";
import { statsRoutes } from "./stats.ts";
import { modelsRoutes } from "./models.ts";
import type { PipelineDeps } from "./exchange.ts";
import { irError } from "../ir/index.ts";
import { closeConnection, defaultTooLarge, tooLargeMessage } from "../http/serve.ts";
import { ingressFor, methodNotAllowed, protocolHandlers, protocolRoutes, SERVED_PATHS } from "./routes.ts";
import { rootPage } from "../http/root-page.ts";
import { unknownRoute } from "./unknown.ts";

export interface DataPlaneDeps extends PipelineDeps {
  readonly holder: ConfigHolder;
  readonly logger: Logger;
  readonly startedAt: number;
}

/** `GET /` on the data listener: the model paths it serves and where the docs are (src/http/root-page.ts). */
const dataRootPage = rootPage({
  listener: "the data plane: each vendor's own API paths; point an SDK's base URL here",
  serves: [...SERVED_PATHS.map((p) => `${p.method} ${p.path} (${p.protocol})`), "GET /healthz", "GET /metrics", "GET /stats"],
  docs: ["docs/protocols.md: each path, and what each vendor's SDK needs", "docs/operations.md: running the gateway", "README.md, and `gateway --help`"],
});

export function buildDataApp(deps: DataPlaneDeps) {
  return listenerApp("data", deps.logger, { notFound: (request) => unknownRoute(request) })
    .get("/", ({ request }) => dataRootPage(request))
    .head("/", ({ request }) => dataRootPage(request))
    .use(healthRoutes(deps.holder, deps.routing, deps.metering))
    .use(statsRoutes(deps.holder, deps.routing, deps.auth))
    .use(modelsRoutes(deps.holder, deps.startedAt, deps.auth))
    .use(metricsRoutes(deps.holder, deps.metrics, deps.auth))
    .use(protocolRoutes(deps))
    .use(directRoutes(deps));
}

/** A body over the limit, answered in the caller's protocol where the path names one. */
export function dataTooLarge(limit: number, request: Request): Response {
  const ingress = ingressFor(request);
  return ingress ? closeConnection(ingress.encodeError(irError("request_too_large", tooLargeMessage(limit)))) : defaultTooLarge(limit);
}

/**
 * The data listener's handlers: the hot protocol paths for Bun's native router, the app for the rest.
 * The app (Elysia and its controllers, ~1.5 ms at a cold start) is built by the first request the
 * native routes do not take, or by `warm`: a start's first request, a model call, never needs it.
 */
export function dataHandlers(deps: DataPlaneDeps) {
  let app: ReturnType<typeof buildDataApp> | undefined;
  const routed = () => (app ??= buildDataApp(deps));
  const fetch = async (request: Request) => {
    const answer = await routed().fetch(request);
    return answer.status === 405 ? methodNotAllowed(request, answer) : answer;
  };
  return { fetch, routes: protocolHandlers(deps), tooLarge: dataTooLarge, warm: () => void routed() };
}
