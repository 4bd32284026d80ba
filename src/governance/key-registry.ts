// Every key in memory: loaded from the store at boot and replaced on each mutation before the admin
// call answers, so the data plane decides with no store read and a revoke or delete holds at once.
import type { IngressPrincipal } from "../auth/ingress-chain.ts";
import type { KeyCursor, KeyRecord } from "../store/keys.ts";

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

/** (created_at, id) order: the key list's, and its cursor's. */
const before = (a: KeyCursor, b: KeyCursor) => a.createdAt < b.createdAt || (a.createdAt === b.createdAt && a.id < b.id);

export class KeyRegistry {
  readonly #byId = new Map<string, Entry>();
  readonly #idByAccessKey = new Map<string, string>();
  /** Every key in list order, so GET /keys pages from memory (a store that is down does not stop it). */
  #ordered: KeyRecord[] = [];

  load(records: Iterable<KeyRecord>): void {
    this.#byId.clear();
    this.#idByAccessKey.clear();
    this.#ordered = [];
    for (const record of records) this.#install(record);
    this.#ordered = [...this.#byId.values()].map((e) => e.record).sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0));
  }

  put(record: KeyRecord): void {
    const known = this.#byId.has(record.id);
    this.#install(record);
    // A key's created_at and id never change: a known one keeps its place, a new one goes where it sorts.
    const at = this.#after(record);
    if (known) this.#ordered[at - 1] = record;
    else this.#ordered.splice(at, 0, record);
  }

  #install(record: KeyRecord): void {
    const principal: IngressPrincipal | undefined =
      keyState(record) === "active"
        ? Object.freeze({ id: record.id, module: "keys", group: record.group, allowedPools: record.allowedPools && Object.freeze([...record.allowedPools]), labels: Object.freeze({ ...record.labels }) })
        : undefined;
    this.#byId.set(record.id, { record, principal });
    if (record.awsAccessKeyId !== null) this.#idByAccessKey.set(record.awsAccessKeyId, record.id);
  }

  /** The index of the first key after `cursor` in list order. */
  #after(cursor: KeyCursor): number {
    let low = 0;
    let high = this.#ordered.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (before(cursor, this.#ordered[mid]!)) high = mid;
      else low = mid + 1;
    }
    return low;
  }

  /** Up to `limit` keys after `after` in (created_at, id) order; tombstoned ones only when asked. */
  page(limit: number, after: KeyCursor | undefined, includeTombstoned: boolean): KeyRecord[] {
    const out: KeyRecord[] = [];
    for (let i = after ? this.#after(after) : 0; i < this.#ordered.length && out.length < limit; i++) {
      const record = this.#ordered[i]!;
      if (includeTombstoned || record.deletedAt === null) out.push(record);
    }
    return out;
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
