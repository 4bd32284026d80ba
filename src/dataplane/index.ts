// The data plane: one route group per ingress protocol, plus the open operational routes.
import type { ConfigHolder } from "../config/snapshot.ts";
import { listenerApp } from "../http/elysia.ts";
import type { Logger } from "../telemetry/logger.ts";
import { healthRoutes } from "./health.ts";
import { openaiRoutes } from "./openai.ts";

export interface DataPlaneDeps {
  readonly holder: ConfigHolder;
  readonly logger: Logger;
  readonly now: () => number;
}

export function buildDataApp(deps: DataPlaneDeps) {
  return listenerApp("data", deps.logger).use(healthRoutes(deps.holder)).use(openaiRoutes(deps.holder, deps.now));
}

export function dataFetch(deps: DataPlaneDeps): (request: Request) => Response | Promise<Response> {
  return buildDataApp(deps).fetch;
}
