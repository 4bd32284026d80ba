// The hook runtime: at each config snapshot, the configured hooks' entries (reused while a hook's source
// and settings are unchanged, closed when removed) and, per pool, the sorted gate list and the taps of each
// stage. The request path asks forPool() once; with no hook configured that is one compare and one check.
// A change (and the boot) prepares its new or changed hooks first: a hook that cannot be loaded and
// created refuses the change naming it, and the instances made for a change are the ones that go live.
import type { HookCfg } from "../config/schema.ts";
import type { Snapshot } from "../config/snapshot.ts";
import type { PoolMember } from "../routing/pool.ts";
import type { Logger } from "../telemetry/logger.ts";
import type { DataPlaneMetrics } from "../telemetry/metrics.ts";
import { HookEntry, NOT_YET } from "./entry.ts";
import { TapQueue, within } from "./taps.ts";
import type { HookModuleLoader, HookReportedStatus, HookRuntimeView, TapEvent, TapStage } from "./types.ts";

export interface GateSpec {
  readonly name: string;
  readonly entry: HookEntry;
  readonly prompt: "no" | "ro" | "rw";
  readonly user: "no" | "ro";
  readonly timeoutMs: number;
  readonly onError: string;
}

export interface PoolHooks {
  readonly pool: string;
  /** Ascending priority, ties by name. */
  readonly gates: readonly GateSpec[];
  /** Some gate sees the prompt: the IR is decoded before the gates run. */
  readonly needsPrompt: boolean;
  readonly taps: Readonly<Record<TapStage, readonly TapQueue[]>> | undefined;
  /** The pool's members by lane name, for a route verb's order. */
  readonly lanes: ReadonlyMap<string, PoolMember>;
  /** Every gate of this plan and every fallback any of them may reach, by name. */
  readonly specs: ReadonlyMap<string, GateSpec>;
}

interface Plan {
  readonly snapshot: Snapshot | undefined;
  readonly byPool: ReadonlyMap<string, PoolHooks>;
  /** For pools the plan does not list (direct routes): the global hooks only. */
  readonly global: PoolHooks | undefined;
  readonly none: boolean;
}

const EMPTY_PLAN: Plan = { snapshot: undefined, byPool: new Map(), global: undefined, none: true };
const STAGES: readonly TapStage[] = ["request", "candidate", "routing", "response"];

export interface HookRuntimeDeps {
  readonly logger: Logger;
  readonly metrics: DataPlaneMetrics;
  readonly loader?: HookModuleLoader;
  /** advanced.response_headers.route_policy, frozen at boot. */
  readonly routePolicyHeader: boolean;
}

/** How long a change (or the boot) waits for its hooks to load and be created before refusing. */
export const PREPARE_MS = 10_000;

/** The boot's hooks that could not be loaded: the boot stops naming each. */
export class HooksNotLoaded extends Error {
  constructor(readonly problems: readonly string[]) {
    super(problems.join("; "));
  }
}

export class HookRuntime implements HookRuntimeView {
  private plan: Plan = EMPTY_PLAN;
  private readonly entries = new Map<string, HookEntry>();
  /** Made by prepare() for a snapshot about to go live; taken by its load, closed by any other. */
  private readonly prepared = new Map<string, HookEntry>();
  private readonly queues = new Map<string, TapQueue>();

  constructor(readonly deps: HookRuntimeDeps) {}

  /** The pool's hooks under `snapshot`, or undefined when it has none (the no-hooks request pays this only). */
  forPool(snapshot: Snapshot, pool: string): PoolHooks | undefined {
    if (snapshot !== this.plan.snapshot) this.load(snapshot);
    if (this.plan.none) return undefined;
    return this.plan.byPool.get(pool) ?? this.plan.global;
  }

  /** Builds the plan of a snapshot (sync; instance creation runs on its own). */
  load(snapshot: Snapshot): void {
    const hooks = (snapshot.config.hooks ?? {}) as Record<string, HookCfg>;
    this.syncEntries(hooks);
    const names = Object.keys(hooks);
    if (names.length === 0) return void (this.plan = { ...EMPTY_PLAN, snapshot });
    const global = [...new Set([...snapshot.globalHooks, ...names.filter((n) => hooks[n]!.global)])];
    const specs = new Map<string, GateSpec>();
    for (const name of names) if (hooks[name]!.kind === "gate") specs.set(name, this.spec(name, hooks[name]!));
    const build = (pool: string, members: readonly PoolMember[], attached: readonly string[]): PoolHooks | undefined => {
      const wired = [...new Set([...global, ...attached])].filter((n) => hooks[n]);
      if (wired.length === 0) return undefined;
      const gates = wired.filter((n) => hooks[n]!.kind === "gate").map((n) => specs.get(n)!);
      gates.sort((a, b) => (hooks[a.name]!.priority ?? 0) - (hooks[b.name]!.priority ?? 0) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      const tapNames = wired.filter((n) => hooks[n]!.kind === "tap");
      const taps = tapNames.length === 0 ? undefined : (Object.fromEntries(STAGES.map((s) => [s, tapNames.filter((n) => hooks[n]!.at === s).map((n) => this.queues.get(n)!)])) as Record<TapStage, TapQueue[]>);
      const lanes = new Map(members.map((m) => [m.lane.name, m]));
      return { pool, gates, needsPrompt: gates.some((g) => g.prompt !== "no") || reachesPrompt(gates, specs), taps, lanes, specs };
    };
    const byPool = new Map<string, PoolHooks>();
    for (const pool of snapshot.pools.values()) {
      const planned = build(pool.name, pool.members, pool.hooks);
      if (planned) byPool.set(pool.name, planned);
    }
    const globalPlan = build("", [], []);
    this.plan = { snapshot, byPool, global: globalPlan, none: byPool.size === 0 && !globalPlan };
  }

  private spec(name: string, cfg: HookCfg): GateSpec {
    return { name, entry: this.entries.get(name)!, prompt: cfg.prompt ?? "no", user: cfg.user ?? "no", timeoutMs: cfg.timeout_ms ?? 200, onError: cfg.on_error ?? "weighted" };
  }

  /**
   * Loads and creates each hook of `snapshot` that is not running as configured, within `withinMs`, and
   * keeps them for that snapshot's load. Answers `hooks.<name>: <reason>` for each that failed (then
   * none is kept): the change must be refused.
   */
  async prepare(snapshot: Snapshot, withinMs = PREPARE_MS): Promise<string[]> {
    this.dropPrepared();
    const made: HookEntry[] = [];
    for (const [name, cfg] of Object.entries((snapshot.config.hooks ?? {}) as Record<string, HookCfg>)) {
      const running = this.entries.get(name);
      if (running?.instance && running.key === keyOf(cfg)) continue;
      made.push(new HookEntry(name, cfg, keyOf(cfg), this.deps.loader, this.deps.logger));
    }
    if (made.length === 0) return [];
    await within(Promise.all(made.map((e) => e.ready)), withinMs).catch(() => undefined);
    const problems = made.filter((e) => !e.instance).map((e) => `hooks.${e.name}: ${e.failure === NOT_YET ? `not loaded within ${withinMs} ms` : e.failure}`);
    for (const entry of made) problems.length > 0 ? entry.close() : this.prepared.set(entry.name, entry);
    return problems;
  }

  private dropPrepared(): void {
    for (const entry of this.prepared.values()) entry.close();
    this.prepared.clear();
  }

  private syncEntries(hooks: Record<string, HookCfg>): void {
    for (const [name, entry] of this.entries) {
      const cfg = hooks[name];
      if (cfg && entry.key === keyOf(cfg) && this.prepared.get(name)?.key !== entry.key) continue;
      entry.close();
      this.entries.delete(name);
      this.queues.delete(name);
    }
    for (const [name, cfg] of Object.entries(hooks)) {
      if (this.entries.has(name)) continue;
      const key = keyOf(cfg);
      const prepared = this.prepared.get(name);
      const entry = prepared?.key === key ? prepared : this.unprepared(name, cfg, key);
      if (entry === prepared) this.prepared.delete(name);
      this.entries.set(name, entry);
      if (cfg.kind === "tap") {
        const dropped = this.deps.metrics.hookEventsDropped.at(name);
        const queue = new TapQueue(name, () => entry.instance, cfg.timeout_ms ?? 200, () => dropped.inc(), (cause) => this.deps.logger.warn("hook tap failed", { hook: name, cause }));
        this.queues.set(name, queue);
      }
    }
    this.dropPrepared();
  }

  /** A snapshot no change prepared (a test's app): its failures are logged, and answer in health. */
  private unprepared(name: string, cfg: HookCfg, key: string): HookEntry {
    const entry = new HookEntry(name, cfg, key, this.deps.loader, this.deps.logger);
    void entry.ready.then(() => entry.failure !== null && this.deps.logger.warn("hook not loaded", { hook: name, cause: entry.failure }));
    return entry;
  }

  /** Every instance created (or failed), or `withinMs` passed: the boot's readiness wait, and tests'. */
  async settled(withinMs = 10_000): Promise<void> {
    if (this.entries.size === 0) return;
    await within(Promise.all([...this.entries.values()].map((e) => e.ready)), withinMs).catch(() => undefined);
  }

  close(): void {
    this.dropPrepared();
    for (const entry of this.entries.values()) entry.close();
    this.entries.clear();
    this.queues.clear();
    this.plan = EMPTY_PLAN;
  }

  health(name: string): { readonly reachable: boolean; readonly detail: string | null } {
    const entry = this.entries.get(name);
    if (!entry) return { reachable: false, detail: "no such hook" };
    return entry.instance ? { reachable: true, detail: null } : { reachable: false, detail: entry.failure };
  }

  async reported(name: string, timeoutMs: number): Promise<HookReportedStatus | undefined> {
    const instance = this.entries.get(name)?.instance;
    if (!instance?.status) return undefined;
    try {
      return await within(Promise.resolve(instance.status()), timeoutMs);
    } catch {
      return undefined;
    }
  }

  schema(name: string): Record<string, unknown> | null {
    const entry = this.entries.get(name);
    return entry?.instance ? (entry.module?.settingsSchema ?? null) : null;
  }

  metrics(name: string): readonly Record<string, unknown>[] {
    const queue = this.queues.get(name);
    if (!queue) return [];
    return [
      { name: "events_dropped_total", type: "counter", value: queue.dropped, help: "tap events dropped because 1,024 were queued" },
      { name: "events_queued", type: "gauge", value: queue.queued },
    ];
  }
}

/** Fire-and-forget: a tap event is queued, never awaited. */
export function fire(queues: readonly TapQueue[], event: Omit<TapEvent, "hook">): void {
  for (const queue of queues) queue.push(event);
}

function keyOf(cfg: HookCfg): string {
  return JSON.stringify([cfg.kind, cfg.builtin ?? null, cfg.transport ?? null, cfg.settings ?? {}]);
}

/** A fallback chain that reaches a prompt-seeing gate needs the prompt too. */
function reachesPrompt(gates: readonly GateSpec[], specs: ReadonlyMap<string, GateSpec>): boolean {
  for (const gate of gates) {
    const seen = new Set<string>();
    for (let at = specs.get(gate.onError); at && !seen.has(at.name); at = specs.get(at.onError)) {
      seen.add(at.name);
      if (at.prompt !== "no") return true;
    }
  }
  return false;
}
