// What every path of one model request shares: the pipeline's dependencies, the exchange being served,
// and the ticket that ends a streamed answer's hold on its lane, meter and inbound slot. Its own module so
// the data plane reads top-down: routes -> pipeline -> a path (passthrough, translate, mock) -> upstream call.
//
// Where later concerns attach: a request's trace context and its hooks ride on the Exchange (one object per
// attempt, built in pipeline.ts ModelCall.attempt); response taps sit where a path relays a stream
// (passthrough.ts relayStream, translate.ts translatedStream), both of which settle through streamTicket.
import type { IngressAuth } from "../auth/ingress-chain.ts";
import type { ConfigHolder, Snapshot } from "../config/snapshot.ts";
import type { Metering, RequestMeter } from "../governance/metering.ts";
import type { IngressContext, ProtocolAdapter } from "../protocols/types.ts";
import type { LaneTicket } from "../routing/failover.ts";
import type { Lane } from "../routing/lane.ts";
import type { RoutingState } from "../routing/state.ts";
import type { Logger } from "../telemetry/logger.ts";
import type { DataPlaneMetrics } from "../telemetry/metrics.ts";
import type { InboundLimit, InboundSlot } from "./inbound-limit.ts";
import type { HookRuntime } from "../hooks/runtime.ts";
import type { IrError } from "../ir/index.ts";
import type { TelemetryHub } from "../telemetry/hub.ts";

export interface PipelineDeps {
  readonly holder: ConfigHolder;
  readonly logger: Logger;
  readonly now: () => number;
  readonly metrics: DataPlaneMetrics;
  /** Breakers and lane counters, shared by every request and kept across config swaps. */
  readonly routing: RoutingState;
  /** The ingress auth chain's modules and their services (key registry, decision cache). */
  readonly auth: IngressAuth;
  /** Group limits and the ledger (governance); absent = nothing is limited or metered. */
  readonly metering?: Metering;
  /** `limits.max_inbound_concurrent`; absent = no global cap (pipelines built by tests). */
  readonly inbound?: InboundLimit;
  /** Gate and tap hooks (src/hooks); absent = none (pipelines built by tests). */
  readonly hooks?: HookRuntime;
  /** Exporters and the access line (src/telemetry/hub.ts); absent = none (pipelines built by tests). */
  readonly telemetry?: TelemetryHub;
}

/** The request a streamed answer belongs to: told when its stream is handed out and when it settles. */
export interface StreamWatcher {
  streamStarted(): void;
  streamEnded(how: "ok" | "broke" | "released", error?: IrError): void;
}

/** What every path needs about the request being served. */
export interface Exchange {
  readonly deps: PipelineDeps;
  readonly snapshot: Snapshot;
  readonly ingress: ProtocolAdapter;
  readonly request: Request;
  readonly body: Record<string, unknown>;
  readonly context: IngressContext;
  readonly lane: Lane;
  /** The model the client named (pool or alias). */
  readonly model: string;
  readonly warn: (warning: string) => void;
  /** The request's hold on its group limits and its ledger rows; absent when it is not metered. */
  readonly meter?: RequestMeter;
  /** The request's slot under max_inbound_concurrent; absent when there is no cap. */
  readonly slot?: InboundSlot;
  /** The request, told of a streamed answer's start and end (metrics count a stream when it settles). */
  readonly watcher?: StreamWatcher;
  /** The attempt's `traceparent` (and the incoming `tracestate`) for the upstream call; absent: untraced. */
  readonly trace?: { readonly traceparent: string; readonly tracestate: string | null };
}

/**
 * A streamed answer's ticket that also ends the request's meter and its inbound slot when the stream
 * settles: at its end, when it breaks, or when the client leaves mid-stream (concurrency is freed in each case).
 */
export function streamTicket(exchange: Exchange, ticket: LaneTicket): LaneTicket {
  const { meter, slot, watcher } = exchange;
  watcher?.streamStarted();
  if (!meter && !slot && !watcher) return ticket;
  meter?.deferEnd();
  slot?.deferEnd();
  const end = () => {
    meter?.end();
    slot?.end();
  };
  return {
    ok: () => (ticket.ok(), end(), watcher?.streamEnded("ok")),
    broke: (error) => (ticket.broke(error), end(), watcher?.streamEnded("broke", error)),
    released: () => (ticket.released(), end(), watcher?.streamEnded("released")),
  };
}
