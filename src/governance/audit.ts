// The audit log: every attempted admin mutation, applied or rejected, as a sha256 hash chain
// (spec "AuditEntry"; gaps.md "Audit verification"). The chain continues across restarts from the
// newest stored entry, so seq stays unique for the store's life, not only the process's.
import type { AuditEntry, AuditStore } from "../store/audit.ts";
import type { AuditRecord, AuditSink } from "./types.ts";

/** Lowercase hex sha256 of `prev_hash|seq|ts|action|resource|outcome|principal`. */
export function auditHash(entry: Omit<AuditEntry, "hash">): string {
  const text = [entry.prev_hash, entry.seq, entry.ts, entry.action, entry.resource, entry.outcome, entry.principal].join("|");
  return new Bun.CryptoHasher("sha256").update(text).digest("hex");
}

export class AuditLog implements AuditSink {
  #head: { seq: number; hash: string } | undefined;
  /** Appends run one after another, so the stored order is the chain's order. */
  #tail: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: AuditStore,
    /** Epoch milliseconds. */
    private readonly now: () => number,
  ) {}

  record(record: AuditRecord): Promise<void> {
    const ts = Math.floor(this.now() / 1000);
    const appended = this.#tail.then(async () => {
      this.#head ??= (await this.store.last()) ?? { seq: 0, hash: "" };
      const unhashed = { seq: this.#head.seq + 1, ts, action: record.action, resource: record.resource, outcome: record.outcome, principal: record.principal, prev_hash: this.#head.hash };
      const entry: AuditEntry = { ...unhashed, hash: auditHash(unhashed) };
      await this.store.append(entry);
      this.#head = { seq: entry.seq, hash: entry.hash };
    });
    // A failed append must not wedge the ones after it; its own caller still sees the failure.
    this.#tail = appended.catch(() => undefined);
    return appended;
  }
}
