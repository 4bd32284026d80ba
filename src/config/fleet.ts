// A fleet's one config (design/replicas.md, "Config version"): every applied change of any replica is a
// numbered version in the store, written in its audit transaction, so config_version is the fleet's. A
// replica joins at the newest version when it boots (a fresh fleet's first replica stores its own file as
// version 0), takes what another replica committed when told (NOTIFY, fleet-sync.ts) and before it plans a
// change of its own (so an expected version is checked against the fleet's), and each version is loaded
// with this replica's own environment and its own boot-scoped members (listen, TLS, store).
import type { ConfigVersionStore, StoredConfigVersion } from "../store/config-versions.ts";
import type { Logger } from "../telemetry/logger.ts";
import type { ConfigLifecycle, ConfigTree, VersionContent } from "./lifecycle.ts";
import { parseConfigText, type LoadContext } from "./load.ts";
import type { Snapshot } from "./snapshot.ts";

/** How many of the newest versions a booting replica loads (what GET /config/versions can list of the past). */
const JOIN_VERSIONS = 20;
/** Versions read at most per catch-up: a replica that fell further behind takes the newest ones. */
const CATCH_UP_VERSIONS = 100;

export interface FleetConfigDeps {
  readonly store: ConfigVersionStore;
  readonly lifecycle: ConfigLifecycle;
  readonly env: LoadContext["env"];
  readonly logger: Pick<Logger, "warn" | "info">;
}

/** A version this replica cannot load (a variable its environment lacks, a hook it cannot prepare). */
export class VersionNotLoaded extends Error {}

export class FleetConfig {
  /** Readies a version's hooks before it goes live (the running hook runtime); none before the apps are built. */
  prepare: ((snapshot: Snapshot) => Promise<string[]>) | undefined;

  constructor(private readonly deps: FleetConfigDeps) {}

  /** What the lifecycle's deps take: each new version stored inside its change's audit transaction. */
  readonly written = (content: VersionContent): void => this.deps.store.record(this.#stored(content));

  /** Boot: the fleet's newest versions become this replica's (or its own file the fleet's first). Throws VersionNotLoaded. */
  async join(): Promise<void> {
    let rows = await this.deps.store.newest(JOIN_VERSIONS);
    if (rows.length === 0) {
      if (await this.deps.store.first(this.#stored(this.deps.lifecycle.currentContent()))) return;
      rows = await this.deps.store.newest(JOIN_VERSIONS);
    }
    this.deps.lifecycle.forgetVersions();
    for (const row of rows) await this.#adopt(row, true);
  }

  /** Takes every version committed since this replica's current one; in the audit log's turn. */
  async catchUp(): Promise<void> {
    const rows = await this.deps.store.newest(CATCH_UP_VERSIONS, this.deps.lifecycle.current.version);
    for (const row of rows) await this.#adopt(row, false);
  }

  #stored(content: VersionContent): StoredConfigVersion {
    const { lifecycle } = this.deps;
    return { version: content.version, ts: content.ts, principal: content.principal, summary: content.summary, base: lifecycle.storedText(content.base), overlay: JSON.stringify(content.overlay) };
  }

  async #adopt(row: StoredConfigVersion, booting: boolean): Promise<void> {
    const parsed = parseConfigText(row.base, `config version ${row.version}`, this.deps.env);
    if (!parsed.ok) throw new VersionNotLoaded(`the fleet's config version ${row.version} does not load here: ${parsed.errors.join("; ")}`);
    const content: VersionContent = { ...row, base: parsed.tree as ConfigTree, overlay: JSON.parse(row.overlay) as ConfigTree };
    const planned = this.deps.lifecycle.adopt(content, parsed.concealed);
    if (!planned.ok) throw new VersionNotLoaded(`the fleet's config version ${row.version} does not load here: ${planned.message}`);
    const unloadable = booting ? [] : ((await this.prepare?.(planned.snapshot)) ?? []);
    if (unloadable.length > 0) throw new VersionNotLoaded(`the fleet's config version ${row.version} does not load here: ${unloadable.join("; ")}`);
    planned.swap();
    if (!booting) this.deps.logger.info("config version taken from the fleet", { config_version: row.version, principal: row.principal, summary: row.summary });
  }
}
