// Active health probes (per provider `health:`): `dead` probes only lanes with a tripped cell, `active`
// probes every lane of the provider. Each provider's first tick is skipped (no probe at boot), lanes
// whose provider has no key are skipped, and one probe per lane runs at a time. A probe that succeeds
// closes the lane's breaker in every cell and counts as one `ok`; one that fails changes nothing (the
// request path's own failures already keep the cell open). The probe itself is injected: the data
// plane sends a one-token request.
import type { ResolvedProvider } from "../providers/provider.ts";
import type { Logger } from "../telemetry/logger.ts";
import type { Lane } from "./lane.ts";
import type { RoutingState } from "./state.ts";

export type LaneProbe = (lane: Lane, timeoutMs: number) => Promise<boolean>;

export interface HealthView {
  readonly providers: ReadonlyMap<string, ResolvedProvider>;
  readonly lanes: ReadonlyMap<string, Lane>;
}

const FLOOR_SECS = 1;

export class HealthProber {
  /** Provider name -> when its next round is due (epoch ms). */
  private readonly due = new Map<string, number>();
  private readonly probing = new Set<string>();

  constructor(
    private readonly view: () => HealthView,
    private readonly state: RoutingState,
    private readonly probe: LaneProbe,
    private readonly logger: Logger,
  ) {}

  /** Starts every provider's round that is due; returns the probes started (tests await them). */
  tick(): Promise<void>[] {
    const now = this.state.clock.now();
    const { providers, lanes } = this.view();
    const started: Promise<void>[] = [];
    for (const provider of providers.values()) {
      const { mode, interval_secs, timeout_secs } = provider.health;
      if (mode === "none") {
        this.due.delete(provider.name);
        continue;
      }
      const intervalMs = Math.max(FLOOR_SECS, interval_secs) * 1000;
      const due = this.due.get(provider.name);
      this.due.set(provider.name, due === undefined || now >= due ? now + intervalMs : due);
      if (due === undefined || now < due) continue;
      if (!hasKey(provider)) continue;
      for (const lane of lanes.values()) {
        if (lane.provider !== provider || this.probing.has(lane.name)) continue;
        if (mode === "dead" && !this.tripped(lane.name)) continue;
        started.push(this.run(lane, Math.max(FLOOR_SECS, timeout_secs) * 1000));
      }
    }
    return started;
  }

  /** Ticks every second until stopped; the timer never keeps the process alive. */
  start(): () => void {
    const timer = setInterval(() => void this.tick(), 1000);
    timer.unref();
    return () => clearInterval(timer);
  }

  private tripped(lane: string): boolean {
    for (const breaker of this.state.cellsOf(lane).values()) if (breaker.state !== "closed") return true;
    return false;
  }

  private async run(lane: Lane, timeoutMs: number): Promise<void> {
    this.probing.add(lane.name);
    try {
      if (!(await this.probe(lane, timeoutMs))) return;
      for (const breaker of this.state.cellsOf(lane.name).values()) breaker.close();
      this.state.lane(lane.name).ok += 1;
    } catch (error) {
      this.logger.warn("health probe failed to run", { lane: lane.name, error: (error as Error).message });
    } finally {
      this.probing.delete(lane.name);
    }
  }
}

const hasKey = (provider: ResolvedProvider) => provider.apiKey !== undefined || provider.aws !== undefined;
