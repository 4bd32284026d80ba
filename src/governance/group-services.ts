// Groups, limits, metering and usage over one store: built once per process by app.ts. The keys'
// side (audit log, key registry) comes in as callbacks, so neither half builds the other.
import type { ConfigHolder } from "../config/snapshot.ts";
import type { GroupStore } from "../store/groups.ts";
import type { LedgerStore } from "../store/ledger.ts";
import type { Logger } from "../telemetry/logger.ts";
import { GroupService } from "./groups.ts";
import { LimitEngine } from "./limits.ts";
import { FleetAdmitter } from "./fleet-limits.ts";
import type { LimitCounters } from "../store/limit-counters.ts";
import { Metering } from "./metering.ts";
import type { AuditSink } from "./types.ts";
import { UsageService, type KeyLookup } from "./usage.ts";

export interface GroupGovernanceDeps {
  /** The store's groups and ledger (store/set.ts). */
  readonly stores: { readonly groups: GroupStore; readonly ledger: LedgerStore; readonly limits?: LimitCounters; readonly label: string };
  readonly holder: ConfigHolder;
  readonly logger: Logger;
  /** Epoch milliseconds. */
  readonly now: () => number;
  readonly audit: AuditSink;
  /** Whether a key that is not deleted is bound to the group (DELETE /groups/{name} refuses then). */
  readonly hasBoundKeys: (group: string) => boolean;
  readonly keyLookup: KeyLookup;
}

export interface GroupGovernance {
  readonly groups: GroupService;
  readonly limits: LimitEngine;
  readonly metering: Metering;
  readonly usage: UsageService;
  /** API groups from the store, then the limit counters and key totals from the ledger. Before serving. */
  load(): Promise<void>;
}

export function buildGroupGovernance(deps: GroupGovernanceDeps): GroupGovernance {
  const { stores, holder, logger, now } = deps;
  const groups = new GroupService({ holder, store: stores.groups, audit: deps.audit, logger, now, hasBoundKeys: deps.hasBoundKeys });
  const ledger = stores.ledger;
  // Boot-scoped, as the whole `store` block is.
  const settings = holder.current.config.store?.settings;
  const onUnavailable = settings?.on_unavailable ?? "fail_closed";
  const admitter = stores.limits && new FleetAdmitter(stores.limits, onUnavailable, (unavailable, error) =>
    unavailable
      ? logger.warn("store unavailable: limits cannot be checked", { store: stores.label, on_unavailable: onUnavailable, error })
      : logger.warn("store available again: limits checked", { store: stores.label }),
  );
  const limits = new LimitEngine(now, () => groups.tree(), admitter);
  const metering = new Metering({ holder, limits, ledger, logger, now, onUnavailable: settings?.on_unavailable, maxUnsavedRows: settings?.max_unsaved_rows });
  const usage = new UsageService({ holder, groups, limits, metering, ledger, keyLookup: deps.keyLookup, now });
  return {
    groups,
    limits,
    metering,
    usage,
    load: async () => {
      await groups.load();
      await usage.restore();
    },
  };
}
