// A fleet's config versions (design/replicas.md, "Config version"): every applied config change of any
// replica as one numbered row, so config_version is the fleet's and a replica booting later joins at the
// newest. sqlite has none: a single process keeps its versions in memory (config/lifecycle.ts).

/** One version as stored: the base and overlay as text (JSON; values the config took from the environment written back as `${VAR}`). */
export interface StoredConfigVersion {
  readonly version: number;
  /** Unix seconds. */
  readonly ts: number;
  readonly principal: string;
  readonly summary: string;
  readonly base: string;
  readonly overlay: string;
}

/** Another replica committed this version number first: the change is refused as a version conflict. */
export class VersionTaken extends Error {
  constructor(readonly version: number) {
    super(`config version ${version} was committed by another replica first; the config moved on, retry`);
  }
}

export interface ConfigVersionStore {
  /** The newest `limit` versions above `after`, oldest first. */
  newest(limit: number, after?: number): Promise<StoredConfigVersion[]>;
  /** A fresh fleet's version 0, unless another replica stored one first (answers whether this one did). */
  first(version: StoredConfigVersion): Promise<boolean>;
  /** Queues the version into the change's audit transaction (synchronous, as every store write of a change is). */
  record(version: StoredConfigVersion): void;
}
