// Where audit entries are kept: appended in seq order, read newest first. An append is one transaction
// with the store writes of the change it records, so a change and its entry commit together or not at all.
import type { Database } from "bun:sqlite";
import { headText, parseHead, readHead, writeHead, type AuditHead, type HeadRead } from "./audit-head.ts";

export interface AuditEntry {
  readonly seq: number;
  readonly ts: number;
  readonly action: string;
  readonly resource: string;
  readonly outcome: "applied" | "rejected";
  readonly principal: string;
  /** Which credential of the principal acted (e.g. `admin-tokens:ops`), never a secret; null when none. */
  readonly credential: string | null;
  readonly prev_hash: string;
  readonly hash: string;
}

export interface AuditStore {
  /** The newest entry, to continue the hash chain after a restart. */
  last(): Promise<AuditEntry | undefined>;
  /**
   * Appends the entry `next` makes from the chain's head and runs `writes` (the change's own store writes,
   * synchronous) in one transaction: either both are stored or neither is. Answers the stored entry.
   * `head` is the head the caller holds; a store shared by a fleet reads the head itself under its lock
   * instead (another replica may have appended since), so the chain stays one for the fleet.
   */
  append(next: (head: AuditHead) => AuditEntry, writes: (() => void) | undefined, head: AuditHead): Promise<AuditEntry>;
  /** Up to `limit` entries with seq below `before` (all when absent), newest first. */
  page(limit: number, before?: number): Promise<AuditEntry[]>;
  /** Up to `limit` entries with seq above `after`, oldest first (verification walks the chain forward). */
  forward(after: number, limit: number): Promise<AuditEntry[]>;
  /** The head anchor kept apart from the chain (audit-head.ts); `none` where the store keeps none. */
  head(): Promise<HeadRead>;
  /**
   * The head as the store itself recorded it, in the transaction of the newest append: deleting entries
   * alone leaves it naming the removed head, whatever became of the anchor file. `none` before the
   * first append of a gateway that keeps it.
   */
  recordedHead(): Promise<HeadRead>;
  setHead(head: AuditHead): Promise<void>;
}

export const AUDIT_COLUMNS = "seq, ts, action, resource, outcome, principal, credential, prev_hash, hash";
/** Set once an anchor has been written, so a missing anchor file later is seen as removed, not as an old store. */
const ANCHORED = "audit_head_anchored";
/** The meta row of recordedHead(). */
/** The meta row of recordedHead(), written in each append's transaction (the postgres store keeps it too). */
export const RECORDED = "audit_head";
export const RECORDED_NAME = "store's own record (meta row audit_head)";

export class SqliteAuditStore implements AuditStore {
  constructor(
    private readonly db: Database,
    /** The head anchor's file (`<store>.audit-head`); undefined for an in-memory store. */
    private readonly headPath?: string,
  ) {}

  async last(): Promise<AuditEntry | undefined> {
    return (this.db.query(`SELECT ${AUDIT_COLUMNS} FROM audit ORDER BY seq DESC LIMIT 1`).get() as AuditEntry | null) ?? undefined;
  }

  async append(next: (head: AuditHead) => AuditEntry, writes: (() => void) | undefined, head: AuditHead): Promise<AuditEntry> {
    const entry = next(head);
    const insert = this.db.query(`INSERT INTO audit (${AUDIT_COLUMNS}) VALUES ($seq, $ts, $action, $resource, $outcome, $principal, $credential, $prev_hash, $hash)`);
    const record = this.db.query("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value");
    this.db.transaction(() => {
      insert.run({ ...entry });
      record.run(RECORDED, headText(entry));
      writes?.();
    })();
    return entry;
  }

  async recordedHead(): Promise<HeadRead> {
    const row = this.db.query("SELECT value FROM meta WHERE key = ?").get(RECORDED) as { value: string } | null;
    return row === null ? { state: "none" } : parseHead(RECORDED_NAME, row.value);
  }

  async page(limit: number, before?: number): Promise<AuditEntry[]> {
    return this.db.query(`SELECT ${AUDIT_COLUMNS} FROM audit WHERE seq < $before ORDER BY seq DESC LIMIT $limit`).all({ before: before ?? Number.MAX_SAFE_INTEGER, limit }) as AuditEntry[];
  }

  async forward(after: number, limit: number): Promise<AuditEntry[]> {
    return this.db.query(`SELECT ${AUDIT_COLUMNS} FROM audit WHERE seq > $after ORDER BY seq LIMIT $limit`).all({ after, limit }) as AuditEntry[];
  }

  async head(): Promise<HeadRead> {
    if (this.headPath === undefined) return { state: "none" };
    const read = await readHead(this.headPath);
    if (read.state !== "none") return read;
    const anchored = this.db.query("SELECT value FROM meta WHERE key = ?").get(ANCHORED) !== null;
    return anchored ? { state: "bad", path: this.headPath, problem: "is missing, yet this store has been anchored before (removed?)" } : read;
  }

  async setHead(head: AuditHead): Promise<void> {
    if (this.headPath === undefined) return;
    await writeHead(this.headPath, head);
    this.db.query("INSERT INTO meta (key, value) VALUES (?, '1') ON CONFLICT(key) DO NOTHING").run(ANCHORED);
  }
}
