// The data listener's app router: the operational routes (/, /healthz, /stats, /v1/models, /metrics),
// the protocol paths again (for in-process use and 405/Allow) and the direct routes. Loaded by the
// handlers (index.ts) on the first request Bun's native routes do not take, or when the boot warms it:
// a start's first request is a model call, and evaluating Elysia cost every start ~1.7 ms.
import { listenerApp, controller } from "../http/elysia.ts";
import { irError } from "../ir/index.ts";
import { adapterFor } from "../protocols/registry.ts";
import { rootPage } from "../http/root-page.ts";
import type { PipelineDeps } from "./exchange.ts";
import type { DataPlaneDeps } from "./index.ts";
import { directRoutes } from "./direct.ts";
import { healthRoutes } from "./health.ts";
import { metricsRoutes } from "./metrics.ts";
import { statsRoutes } from "./stats.ts";
import { modelsRoutes } from "./models.ts";
import { ingressHandlers, SERVED_PATHS, type Params } from "./routes.ts";
import { unknownRoute } from "./unknown.ts";
import { identityRoutes } from "../identity/routes.ts";

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
    .use(identityRoutes({ holder: deps.holder, logger: deps.logger, identity: deps.auth.services.identity, now: deps.now }))
    .use(directRoutes(deps));
}

/**
 * The same handlers in the app router. The listener serves these paths from Bun's native router first;
 * the app keeps them so in-process use and 405/Allow see every route.
 */
function protocolRoutes(deps: PipelineDeps) {
  let app = controller("dataplane.protocols");
  for (const [path, handler] of Object.entries(ingressHandlers(deps))) app = app.post(path, ({ request, params }) => handler(request, params as Params), { parse: "none" });
  // Codex CLI first asks for the Responses WebSocket mode with a GET upgrade; a prompt non-101 answer
  // sends it to plain HTTP streaming, which is what this gateway serves.
  return app.get("/v1/responses", () => {
    const refused = adapterFor("responses")!.encodeError(irError("invalid_request", "WebSocket mode is not served by this gateway; use POST /v1/responses (HTTP streaming)."));
    return new Response(refused.body, { status: 426, headers: refused.headers });
  });
}
