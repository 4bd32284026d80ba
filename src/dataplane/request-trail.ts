// What the pipeline hands a request's trail (src/telemetry/trail.ts) at each step: the routing engine's
// failovers, the meter's usage and charge, each attempt's end. Used only for a request with a trail.
import type { RequestMeter } from "../governance/metering.ts";
import type { IrUsage } from "../ir/index.ts";
import type { AttemptResult, RoutingCounters } from "../routing/failover.ts";
import type { Logger } from "../telemetry/logger.ts";
import type { RequestTrail } from "../telemetry/trail.ts";

/** The routing engine's counters for a request with a trail: the same series, and the trail told of each failover. */
export function trailCounters(shared: RoutingCounters, trail: RequestTrail, logger: Logger): RoutingCounters {
  return {
    attempt: shared.attempt,
    failure: shared.failure,
    trip: shared.trip,
    failover: (pool, reason) => {
      shared.failover(pool, reason);
      trail.failover(reason);
      logger.info("failover", { request_id: trail.requestId, pool, reason });
    },
  };
}

/**
 * A meter that also tells the trail the usage and its charge (a request with no meter is still logged with
 * its usage). One per request, its methods on the prototype: no closures made per request.
 */
export class TrailMeter implements RequestMeter {
  constructor(
    private readonly trail: RequestTrail,
    private readonly meter: RequestMeter | undefined,
  ) {}

  usage(usage: IrUsage, model: string): number {
    const charged = this.meter?.usage(usage, model) ?? 0;
    this.trail.usage(usage, charged);
    return charged;
  }

  end(): void {
    this.meter?.end();
  }

  deferEnd(): void {
    this.meter?.deferEnd();
  }

  answered(): void {
    this.meter?.answered();
  }
}

/** An attempt's end as its CLIENT span says it: the upstream's status, or what failed. */
export function attemptEnded(trail: RequestTrail, result: AttemptResult<Response>): void {
  if (result.ok) {
    if (!result.settlesLater) trail.attemptEnded(result.value.status, undefined);
    return;
  }
  trail.attemptEnded(result.error.status, result.cause === "upstream" ? String(result.error.status) : result.cause);
}
