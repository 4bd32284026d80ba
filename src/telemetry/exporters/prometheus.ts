// The `prometheus` exporter (design/telemetry.md, "Exporters"): carries the metrics stream, which is
// pulled, not pushed, so there is nothing to queue or flush. The data plane's GET /metrics serves the
// exposition whatever the config; this module only adds, when `listen` is set, a listener of its own
// that serves the same exposition with no credential (a scraper on a private network, the data plane
// behind auth). Every other path there is a 404: it is no second data plane.
import { Type, type Static } from "@sinclair/typebox";
import type { Server } from "bun";
import { parseListenAddress } from "../../config/listen.ts";
import { ListenAddress } from "../../config/schema.ts";
import { errorResponse } from "../../http/errors.ts";
import type { Logger } from "../logger.ts";
import { EXPOSITION_CONTENT_TYPE, type MetricsRegistry } from "../metrics.ts";
import type { Exporter, Stream } from "../records.ts";

export const PrometheusSettingsCfg = Type.Object(
  {
    listen: Type.Optional(Type.String({ ...ListenAddress, description: "extra listener serving GET /metrics with no credential (none by default)" })),
  },
  { additionalProperties: false },
);
export type PrometheusSettings = Static<typeof PrometheusSettingsCfg>;

export const PROMETHEUS_STREAMS: readonly Stream[] = ["metrics"];

export interface PrometheusDeps {
  readonly registry: MetricsRegistry;
  readonly logger: Logger;
}

export interface PrometheusExporter extends Exporter {
  /** `host:port` the extra listener bound (the OS's port when `listen` asked for 0); undefined without one. */
  readonly address: string | undefined;
}

/** The exposition as both listeners answer it: rendered per scrape, never cached (gauges read live state). */
export function expositionResponse(registry: MetricsRegistry): Response {
  return new Response(registry.expose(), { headers: { "content-type": EXPOSITION_CONTENT_TYPE } });
}

/**
 * Settings are expected already checked against PrometheusSettingsCfg (the config check names the path).
 * A `listen` that cannot be bound throws, naming the instance: a scrape target silently missing would be
 * found only when an alert failed to fire.
 */
export function prometheusExporter(name: string, settings: PrometheusSettings, deps: PrometheusDeps): PrometheusExporter {
  const server = settings.listen === undefined ? undefined : listen(name, settings.listen, deps.registry);
  const address = server && `${server.hostname?.includes(":") ? `[${server.hostname}]` : server.hostname}:${server.port}`;
  if (address) deps.logger.info("prometheus exporter listening", { exporter: name, address });
  let closed: Promise<void> | undefined;
  return {
    name,
    module: "prometheus",
    streams: PROMETHEUS_STREAMS,
    address,
    // Nothing is held back: a scrape reads the registry as it stands.
    flush: () => Promise.resolve(),
    // Open scrape connections are cut too (Prometheus keeps its connection alive between scrapes), so
    // the port is free once this resolves; a second close waits on the first.
    close: () => (closed ??= server ? server.stop(true).then(() => undefined) : Promise.resolve()),
  };
}

function listen(name: string, listenAt: string, registry: MetricsRegistry): Server<undefined> {
  const parts = parseListenAddress(listenAt);
  if ("error" in parts) throw new Error(`export.${name}.settings.listen: ${parts.error}`);
  try {
    return Bun.serve({
      hostname: parts.hostname,
      port: parts.port,
      // Bun turns SO_REUSEPORT on unless told not to: a second process could bind the same address and
      // take half the scrapes (src/http/serve.ts says the same of the main listeners).
      reusePort: false,
      development: false,
      fetch(request) {
        if (new URL(request.url).pathname !== "/metrics") return errorResponse("not_found", "only GET /metrics is served here");
        if (request.method !== "GET" && request.method !== "HEAD") return errorResponse("method_not_allowed", "GET /metrics only", { headers: { allow: "GET, HEAD" } });
        return expositionResponse(registry);
      },
      error() {
        return errorResponse("internal", "internal error");
      },
    });
  } catch (error) {
    throw new Error(`export.${name}.settings.listen: cannot listen on ${listenAt}: ${error instanceof Error ? error.message : String(error)}`);
  }
}
