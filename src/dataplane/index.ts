// The data plane's handlers: the protocol paths for Bun's native router, the app router (router.ts) loaded for the rest.
import type { ConfigHolder } from "../config/snapshot.ts";
import type { Logger } from "../telemetry/logger.ts";
import type { PipelineDeps } from "./exchange.ts";
import { irError } from "../ir/index.ts";
import { closeConnection, defaultTooLarge, tooLargeMessage } from "../http/serve.ts";
import { ingressFor, methodNotAllowed, protocolHandlers } from "./routes.ts";
import { loadOnce } from "../http/load-once.ts";

export interface DataPlaneDeps extends PipelineDeps {
  readonly holder: ConfigHolder;
  readonly logger: Logger;
  readonly startedAt: number;
}

/** A body over the limit, answered in the caller's protocol where the path names one. */
export function dataTooLarge(limit: number, request: Request): Response {
  const ingress = ingressFor(request);
  return ingress ? closeConnection(ingress.encodeError(irError("request_too_large", tooLargeMessage(limit)))) : defaultTooLarge(limit);
}

/**
 * The data listener's handlers: the hot protocol paths for Bun's native router, the app for the rest.
 * The app (router.ts: Elysia and its controllers, ~1.7 ms of module evaluation and ~1.5 ms of building at
 * a cold start) is loaded and built by the first request the native routes do not take, or by `warm`: a
 * start's first request, a model call, never needs it.
 */
export function dataHandlers(deps: DataPlaneDeps) {
  const routed = loadOnce<DataApp>(async () => (await import("./router.ts")).buildDataApp(deps));
  const fetch = async (request: Request) => {
    const answer = await (await routed()).fetch(request);
    return answer.status === 405 ? methodNotAllowed(request, answer) : answer;
  };
  // Settles once the app is built (or could not be): the boot restores the JIT policy only then.
  return { fetch, routes: protocolHandlers(deps), tooLarge: dataTooLarge, warm: () => routed().then(() => undefined, () => undefined) };
}

type DataApp = ReturnType<typeof import("./router.ts").buildDataApp>;
