// Every key in memory: loaded from the store at boot and replaced on each mutation before the admin
// call answers, so the data plane decides with no store read and a revoke or delete holds at once.
import type { IngressPrincipal } from "../auth/ingress-chain.ts";
import type { KeyRecord } from "../store/keys.ts";

export type KeyState = "active" | "disabled" | "revoked" | "tombstoned";

/** Derived, never set (spec "Virtual key state"): tombstoned over revoked over disabled. */
export function keyState(record: KeyRecord): KeyState {
  if (record.deletedAt !== null) return "tombstoned";
  if (record.revokedAt !== null) return "revoked";
  return record.enabled ? "active" : "disabled";
}

interface Entry {
  readonly record: KeyRecord;
  /** Built once per mutation, handed to every request the key makes. */
  readonly principal: IngressPrincipal | undefined;
}

export class KeyRegistry {
  readonly #byId = new Map<string, Entry>();
  readonly #idByAccessKey = new Map<string, string>();

  load(records: Iterable<KeyRecord>): void {
    this.#byId.clear();
    this.#idByAccessKey.clear();
    for (const record of records) this.put(record);
  }

  put(record: KeyRecord): void {
    const principal: IngressPrincipal | undefined =
      keyState(record) === "active"
        ? Object.freeze({ id: record.id, module: "keys", group: record.group, allowedPools: record.allowedPools && Object.freeze([...record.allowedPools]), labels: Object.freeze({ ...record.labels }) })
        : undefined;
    this.#byId.set(record.id, { record, principal });
    if (record.awsAccessKeyId !== null) this.#idByAccessKey.set(record.awsAccessKeyId, record.id);
  }

  get(id: string): KeyRecord | undefined {
    return this.#byId.get(id)?.record;
  }

  idByAccessKey(accessKeyId: string): string | undefined {
    return this.#idByAccessKey.get(accessKeyId);
  }

  /** The principal of a key that may be used now: known, active and unexpired; else undefined. */
  admit(id: string, nowSecs: number): IngressPrincipal | undefined {
    const entry = this.#byId.get(id);
    if (!entry || entry.record.expiresAt <= nowSecs) return undefined;
    return entry.principal;
  }

  get size(): number {
    return this.#byId.size;
  }

  /** Whether a key not yet deleted (tombstoned) is bound to `group`: DELETE /groups/{name} waits for none. */
  boundTo(group: string): boolean {
    for (const { record } of this.#byId.values()) if (record.group === group && record.deletedAt === null) return true;
    return false;
  }
}
