// Cached credential decisions: the outcome of checking a presented credential's signature or matching
// it against the configured tokens, never a key's state (so a revoke is seen by the next request).
// One partition per auth module, each bounded (the oldest entry goes first); flushed whole when the
// config snapshot changes, since a new signing key or token list can change every decision, and on
// demand through POST /auth/cache/flush.

const DEFAULT_MAX_ENTRIES = 10_000;

export class CredentialCache {
  readonly #partitions = new Map<string, Map<string, unknown>>();
  readonly #maxEntries: number;
  /** The config snapshot the decisions were made under. */
  #generation: object | undefined;

  constructor(maxEntriesPerPartition = DEFAULT_MAX_ENTRIES) {
    this.#maxEntries = maxEntriesPerPartition;
  }

  get<T>(module: string, credential: string, generation: object): T | undefined {
    if (generation !== this.#generation) return this.#renew(generation);
    return this.#partitions.get(module)?.get(credential) as T | undefined;
  }

  set(module: string, credential: string, decision: unknown, generation: object): void {
    if (generation !== this.#generation) this.#renew(generation);
    let partition = this.#partitions.get(module);
    if (!partition) this.#partitions.set(module, (partition = new Map()));
    if (partition.size >= this.#maxEntries) partition.delete(partition.keys().next().value!);
    partition.set(credential, decision);
  }

  /** Drops one module's partition, or all; answers how many decisions were dropped. */
  flush(module?: string | null): number {
    let flushed = 0;
    for (const [name, partition] of this.#partitions) {
      if (module !== undefined && module !== null && name !== module) continue;
      flushed += partition.size;
      partition.clear();
    }
    return flushed;
  }

  #renew(generation: object): undefined {
    this.#partitions.clear();
    this.#generation = generation;
    return undefined;
  }
}
