// The audit log: every attempted admin mutation, applied or rejected, as a sha256 hash chain
// (spec "AuditEntry"; gaps.md "Audit verification"). The chain continues across restarts from the
// newest stored entry, so seq stays unique for the store's life, not only the process's.
import { AsyncLocalStorage } from "node:async_hooks";
import type { AuditEntry, AuditStore } from "../store/audit.ts";
import type { AuditRecord, AuditSink } from "./types.ts";

/** Lowercase hex sha256 of `prev_hash|seq|ts|action|resource|outcome|principal`. */
export function auditHash(entry: Omit<AuditEntry, "hash">): string {
  const text = [entry.prev_hash, entry.seq, entry.ts, entry.action, entry.resource, entry.outcome, entry.principal].join("|");
  return new Bun.CryptoHasher("sha256").update(text).digest("hex");
}

/** gaps.md "Audit verification": GET /audit/verify and `gateway --verify-audit`. */
export interface AuditVerification {
  readonly ok: boolean;
  readonly checked: number;
  readonly first_bad_seq: number | null;
  readonly reason: string | null;
}

const VERIFY_BATCH = 1000;

/**
 * Walks the stored chain oldest first. Each entry's hash must be its own fields' hash (an altered entry
 * fails), its seq one above the previous (a deleted entry leaves a gap), and its prev_hash the previous
 * entry's hash (a reordered or removed entry breaks the link). The oldest retained entry anchors the
 * chain: its prev_hash is empty when it is seq 1, and names a pruned predecessor otherwise.
 */
export async function verifyAudit(store: AuditStore): Promise<AuditVerification> {
  let checked = 0;
  let previous: AuditEntry | undefined;
  const bad = (entry: AuditEntry, reason: string): AuditVerification => ({ ok: false, checked, first_bad_seq: entry.seq, reason });
  for (let after = 0; ; ) {
    const batch = await store.forward(after, VERIFY_BATCH);
    for (const entry of batch) {
      const { hash, ...fields } = entry;
      if (auditHash(fields) !== hash) return bad(entry, `entry ${entry.seq} does not match its hash (altered)`);
      if (previous === undefined) {
        if (entry.seq === 1 && entry.prev_hash !== "") return bad(entry, "entry 1 names a predecessor");
      } else {
        if (entry.seq !== previous.seq + 1) return bad(entry, `entry ${entry.seq} follows entry ${previous.seq} (entries missing or reordered)`);
        if (entry.prev_hash !== previous.hash) return bad(entry, `entry ${entry.seq} does not link to entry ${previous.seq} (chain broken)`);
      }
      previous = entry;
      checked++;
    }
    if (batch.length < VERIFY_BATCH) break;
    after = previous!.seq;
  }
  return { ok: true, checked, first_bad_seq: null, reason: null };
}

/**
 * One admin request's audit scope: set when any record is written while it runs, so the admin wrapper
 * can record the attempts no handler recorded (a body that failed to parse, a scope refusal) exactly once.
 */
export const auditScope = new AsyncLocalStorage<{ recorded: boolean }>();

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
    const scope = auditScope.getStore();
    if (scope) scope.recorded = true;
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

  /** Newest first, below `before` (GET /audit). Waits for appends already under way. */
  async page(limit: number, before?: number): Promise<AuditEntry[]> {
    await this.#tail;
    return this.store.page(limit, before);
  }

  async verify(): Promise<AuditVerification> {
    await this.#tail;
    return verifyAudit(this.store);
  }
}
