// The audit log: every attempted admin mutation, applied or rejected, as a sha256 hash chain
// (spec "AuditEntry"; gaps.md "Audit verification"). A mutation and its entry commit together or not at
// all (AuditLog.commit), and a head anchor kept apart from the chain (store/audit-head.ts) makes removing
// the newest entries visible and keeps seq from being reused after a restart.
import type * as AsyncHooks from "node:async_hooks";
import { GatewayError } from "../http/errors.ts";
import type { AuditHead } from "../store/audit-head.ts";
import type { AuditEntry, AuditStore } from "../store/audit.ts";
import { VersionTaken } from "../store/config-versions.ts";
import type { Logger } from "../telemetry/logger.ts";
import type { AuditAttempt, AuditRecord, AuditSink, Change } from "./types.ts";

type Unhashed = Omit<AuditEntry, "hash" | "credential"> & { readonly credential?: string | null };

/**
 * Lowercase hex sha256 of `prev_hash|seq|ts|action|resource|outcome|principal`, with `|credential`
 * appended when the entry names one: entries written before the credential existed hash as they did,
 * and dropping a credential from a newer entry breaks its hash.
 */
export function auditHash(entry: Unhashed): string {
  const fields: unknown[] = [entry.prev_hash, entry.seq, entry.ts, entry.action, entry.resource, entry.outcome, entry.principal];
  if (entry.credential != null) fields.push(entry.credential);
  return new Bun.CryptoHasher("sha256").update(fields.join("|")).digest("hex");
}

/** gaps.md "Audit verification": GET /audit/verify and `gateway --verify-audit`. */
export interface AuditVerification {
  readonly ok: boolean;
  readonly checked: number;
  readonly first_bad_seq: number | null;
  readonly reason: string | null;
}

const VERIFY_BATCH = 1000;

interface HeadCheck {
  /** Where the chain continues: the anchor when entries above the stored newest were removed. */
  readonly head: AuditHead;
  readonly problem?: { readonly seq: number; readonly reason: string };
  /** Whether the anchor should be rewritten to `head` (none yet, or behind after a crash). */
  readonly stale: boolean;
}

/**
 * The stored chain's newest entry against the head anchor file and against the head the store recorded
 * with its newest append. Behind either = truncated; a different hash at its seq = rewritten. Ahead is
 * allowed: a crash between a commit and the anchor's write, or entries of a gateway that kept no record.
 * The chain continues above the highest of the three, so no seq is reused even when the anchor file was
 * removed with the entries.
 */
async function checkHead(store: AuditStore, last: AuditEntry | undefined): Promise<HeadCheck> {
  const chain: AuditHead = last ? { seq: last.seq, hash: last.hash } : { seq: 0, hash: "" };
  const file = await store.head();
  let head = chain;
  // A removed or malformed anchor is named only where nothing says more (such as which entries went).
  let problem: HeadCheck["problem"];
  let unreadable: HeadCheck["problem"];
  for (const [read, name] of [[file, "head anchor"], [await store.recordedHead(), "head in the"]] as const) {
    if (read.state === "none") continue;
    if (read.state === "bad") {
      unreadable ??= { seq: chain.seq + 1, reason: `the audit ${name} ${read.path} ${read.problem}` };
      continue;
    }
    const anchor = read.head;
    if (anchor.seq > head.seq) head = anchor;
    if (chain.seq < anchor.seq) {
      problem ??= { seq: chain.seq + 1, reason: `the chain ends at entry ${chain.seq} but the ${name} ${read.path} names entry ${anchor.seq}: the newest entries were removed (truncated)` };
    } else if (anchor.seq > 0) {
      const [atAnchor] = await store.forward(anchor.seq - 1, 1);
      if (atAnchor?.seq !== anchor.seq || atAnchor.hash !== anchor.hash) {
        problem ??= { seq: anchor.seq, reason: `entry ${anchor.seq} does not match the ${name} ${read.path} (the chain was rewritten)` };
      }
    }
  }
  const stale = file.state === "none" || (file.state === "ok" && file.head.seq !== head.seq);
  problem ??= unreadable;
  return { head, stale: stale && problem === undefined, problem };
}

/**
 * Walks the stored chain oldest first. Each entry's hash must be its own fields' hash (an altered entry
 * fails), its seq one above the previous (a deleted entry leaves a gap), and its prev_hash the previous
 * entry's hash (a reordered or removed entry breaks the link). The log is never pruned, so the oldest
 * stored entry must be seq 1 with an empty prev_hash (removed oldest entries leave no gap otherwise).
 * The newest must agree with the head anchor (removed newest entries leave no gap to find otherwise).
 */
export async function verifyAudit(store: AuditStore): Promise<AuditVerification> {
  let checked = 0;
  let previous: AuditEntry | undefined;
  const bad = (seq: number, reason: string): AuditVerification => ({ ok: false, checked, first_bad_seq: seq, reason });
  for (let after = 0; ; ) {
    const batch = await store.forward(after, VERIFY_BATCH);
    for (const entry of batch) {
      const { hash, ...fields } = entry;
      if (auditHash(fields) !== hash) return bad(entry.seq, `entry ${entry.seq} does not match its hash (altered)`);
      if (previous === undefined) {
        if (entry.seq !== 1) {
          const removed = entry.seq === 2 ? "entry 1 was" : `entries 1 to ${entry.seq - 1} were`;
          return bad(1, `the oldest stored entry is ${entry.seq}: ${removed} removed from the start of the log (truncated)`);
        }
        if (entry.prev_hash !== "") return bad(entry.seq, "entry 1 names a predecessor");
      } else {
        if (entry.seq !== previous.seq + 1) return bad(entry.seq, `entry ${entry.seq} follows entry ${previous.seq} (entries missing or reordered)`);
        if (entry.prev_hash !== previous.hash) return bad(entry.seq, `entry ${entry.seq} does not link to entry ${previous.seq} (chain broken)`);
      }
      previous = entry;
      checked++;
    }
    if (batch.length < VERIFY_BATCH) break;
    after = previous!.seq;
  }
  const { problem } = await checkHead(store, previous);
  return problem ? bad(problem.seq, problem.reason) : { ok: true, checked, first_bad_seq: null, reason: null };
}

/**
 * One admin request's audit scope: set when any record is written while it runs, so the admin wrapper
 * can record the attempts no handler recorded (a body that failed to parse, a scope refusal) exactly
 * once; and the acting credential, which every entry of the request names.
 */
export const auditScope = {
  run<R>(scope: AuditScope, body: () => R): R {
    // Made by the first admin mutation: importing node:async_hooks cost every start ~0.4 ms. Before it
    // there is no scope to find, so getStore's undefined is the answer the storage would give.
    scopes ??= new (require("node:async_hooks") as typeof AsyncHooks).AsyncLocalStorage<AuditScope>();
    return scopes.run(scope, body);
  },
  getStore: (): AuditScope | undefined => scopes?.getStore(),
};
type AuditScope = { recorded: boolean; credential?: string };
let scopes: AsyncHooks.AsyncLocalStorage<AuditScope> | undefined;

export class AuditLog implements AuditSink {
  #head: AuditHead | undefined;
  /** Appends run one after another, so the stored order is the chain's order. */
  #tail: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: AuditStore,
    /** Epoch milliseconds. */
    private readonly now: () => number,
    private readonly logger?: Pick<Logger, "info" | "error">,
  ) {}

  /**
   * Boot: the chain's head checked against its anchor. A mismatch is logged, not fatal (an edited audit
   * log must not also take the gateway down), stays visible to both verifiers, and the chain continues
   * above the higher of the two, so no seq is reused.
   */
  async open(): Promise<void> {
    await this.#serial(async () => {
      this.#head = undefined;
      await this.#loadHead(true);
    });
  }

  record(record: AuditRecord): Promise<void> {
    this.#mark();
    return this.#serial(() => (record.outcome === "rejected" ? this.#appendRejected(record) : this.#append(record)));
  }

  /**
   * Runs `plan` in turn with every other audited mutation (so what it checks still holds when it commits),
   * then stores its writes and its `applied` entry in one transaction, then applies it in memory. A plan
   * that throws is recorded as `rejected` and its error rethrown; a failed commit undoes the plan's staged
   * files, leaves memory as it was, and is recorded as `rejected` where the log can still be written. `plan` must not itself call the audit log (it would wait on itself).
   */
  commit<T>(attempt: AuditAttempt, plan: () => Change<T> | Promise<Change<T>>): Promise<T> {
    this.#mark();
    return this.#serial(async () => {
      let change: Change<T>;
      try {
        change = await plan();
      } catch (error) {
        await this.#appendRejected({ ...attempt, outcome: "rejected" });
        throw error;
      }
      try {
        await change.stage?.();
        await this.#append({ ...attempt, outcome: "applied" }, change.write);
      } catch (error) {
        await change.undo?.().catch((undoError: unknown) => this.logger?.error("could not undo a change whose audit entry failed", { action: attempt.action, error: String(undoError) }));
        // Still an attempt, and not applied; on a failing disk this entry fails too, and the 500 says enough.
        await this.#appendRejected({ ...attempt, outcome: "rejected" });
        // Another replica committed the same config version first (store/config-versions.ts): a conflict, not a fault.
        if (error instanceof VersionTaken) throw new GatewayError("version_conflict", error.message);
        const cause = error instanceof Error ? error.message : String(error);
        this.logger?.error("a change was not applied: it could not be committed with its audit entry", { action: attempt.action, resource: attempt.resource, error: cause });
        throw new GatewayError("internal", `not applied: the change could not be stored with its audit entry (${cause})`);
      }
      return change.apply();
    });
  }

  /**
   * Runs `step` in turn with every audited mutation: a reload of what other replicas changed
   * (fleet-sync.ts) reads and installs without a local change landing in between and being undone.
   */
  exclusive<T>(step: () => Promise<T>): Promise<T> {
    return this.#serial(step);
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

  #mark(): void {
    const scope = auditScope.getStore();
    if (scope) scope.recorded = true;
  }

  #serial<T>(step: () => Promise<T>): Promise<T> {
    const run = this.#tail.then(step);
    // A failed step must not wedge the ones after it; its own caller still sees the failure.
    this.#tail = run.catch(() => undefined);
    return run;
  }

  async #loadHead(boot = false): Promise<AuditHead> {
    if (this.#head) return this.#head;
    const checked = await checkHead(this.store, await this.store.last());
    if (checked.problem) {
      this.logger?.error("audit log does not match its head anchor; GET /audit/verify and --verify-audit report it", { reason: checked.problem.reason, next_seq: checked.head.seq + 1 });
    } else if (checked.stale && boot) {
      await this.#anchor(checked.head);
    }
    this.#head = checked.head;
    return checked.head;
  }

  async #append(record: AuditRecord, writes?: () => void): Promise<void> {
    const credential = record.credential ?? auditScope.getStore()?.credential ?? null;
    const ts = Math.floor(this.now() / 1000);
    const next = (head: AuditHead): AuditEntry => {
      const unhashed = { seq: head.seq + 1, ts, action: record.action, resource: record.resource, outcome: record.outcome, principal: record.principal, credential, prev_hash: head.hash };
      return { ...unhashed, hash: auditHash(unhashed) };
    };
    // Throws with nothing stored (the transaction rolled back): the head stays, so no seq is skipped.
    const entry = await this.store.append(next, writes, await this.#loadHead());
    this.#head = { seq: entry.seq, hash: entry.hash };
    await this.#anchor(this.#head);
  }

  /**
   * A refused attempt changed nothing, so an entry that cannot be stored (a failing disk) must not turn
   * the caller's own answer (400, 404, 409) into a 500: it is logged, and the seq stays unused.
   */
  async #appendRejected(record: AuditRecord): Promise<void> {
    await this.#append(record).catch((error: unknown) =>
      this.logger?.error("could not store the audit entry of a refused attempt", { action: record.action, resource: record.resource, error: error instanceof Error ? error.message : String(error) }),
    );
  }

  /** After the commit: the entry is stored either way, so a failed anchor write is logged, not thrown. */
  async #anchor(head: AuditHead): Promise<void> {
    this.logger?.info(`audit head seq=${head.seq} hash=${head.hash}`, { seq: head.seq, hash: head.hash });
    await this.store.setHead(head).catch((error: unknown) => this.logger?.error("could not write the audit head anchor", { seq: head.seq, error: String(error) }));
  }
}
