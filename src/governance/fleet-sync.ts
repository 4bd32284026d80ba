// Keeping a replica's keys and groups in step with the fleet's store (design/replicas.md, "What the fleet
// shares"): what another replica changed is reloaded as soon as its notification arrives (within a
// second of the other's answer), and everything every `reconcileMs` and after the listening connection
// came back (notifications sent meanwhile are lost). A reload runs in turn with this replica's own
// audited mutations (AuditLog.exclusive), so a local change never lands between its read and its install.
import type { Logger } from "../telemetry/logger.ts";
import type { AuditLog } from "./audit.ts";
import type { GroupService } from "./groups.ts";
import type { KeyService } from "./keys.ts";
import type { FleetConfig } from "../config/fleet.ts";

export interface FleetSyncDeps {
  readonly audit: AuditLog;
  readonly keys: KeyService;
  readonly groups: GroupService;
  /** The fleet's config versions: taken when another replica's config change is heard of, and on each reconcile. */
  readonly config?: Pick<FleetConfig, "catchUp">;
  readonly logger: Pick<Logger, "warn">;
  readonly reconcileMs?: number;
}

export class FleetSync {
  #timer: ReturnType<typeof setInterval> | undefined;
  #running: Promise<void> = Promise.resolve();

  constructor(private readonly deps: FleetSyncDeps) {}

  /** Resources other replicas changed (`key:<id>`, `group:<name>`, ...): those keys, and the groups, are reloaded. */
  changed(resources: readonly string[]): Promise<void> {
    const keys = [...new Set(resources.filter((r) => r.startsWith("key:")).map((r) => r.slice(4)))];
    // A group change can come with its keys (a mint that provisions its group).
    const groups = resources.some((r) => r.startsWith("group:"));
    // Every other audited change (config apply, reload, rollback, settings, hooks, admin auth) makes a config version.
    const config = resources.some((r) => !r.startsWith("key:") && !r.startsWith("group:"));
    return this.#reload(keys, groups, config);
  }

  /** Everything, whatever was missed. */
  reconcile(): Promise<void> {
    return this.#reload("all", true, true);
  }

  start(): void {
    this.#timer ??= setInterval(() => void this.reconcile(), this.deps.reconcileMs ?? 10_000);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** `keys`: the ids to reload, or all of them. */
  #reload(keys: readonly string[] | "all", groups: boolean, config = false): Promise<void> {
    if (keys !== "all" && keys.length === 0 && !groups && !config) return this.#running;
    const run = this.#running.then(() =>
      this.deps.audit.exclusive(async () => {
        // The config first: groups from the config file are part of the tree the group reload builds.
        if (config) await this.deps.config?.catchUp();
        if (groups) await this.deps.groups.load();
        if (keys === "all") await this.deps.keys.load();
        else if (keys.length > 0) await this.deps.keys.refresh(keys);
      }),
    );
    // A failed reload (the store down) is retried by the next change or reconcile; it never wedges them.
    this.#running = run.catch((error: unknown) => this.deps.logger.warn("could not take the fleet's changes; serving what is held", { error: error instanceof Error ? error.message : String(error) }));
    return this.#running;
  }
}
