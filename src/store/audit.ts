// Where audit entries are kept: appended in seq order, read newest first.
import type { Database } from "bun:sqlite";

export interface AuditEntry {
  readonly seq: number;
  readonly ts: number;
  readonly action: string;
  readonly resource: string;
  readonly outcome: "applied" | "rejected";
  readonly principal: string;
  readonly prev_hash: string;
  readonly hash: string;
}

export interface AuditStore {
  /** The newest entry, to continue the hash chain after a restart. */
  last(): Promise<AuditEntry | undefined>;
  append(entry: AuditEntry): Promise<void>;
  /** Up to `limit` entries with seq below `before` (all when absent), newest first. */
  page(limit: number, before?: number): Promise<AuditEntry[]>;
  /** Up to `limit` entries with seq above `after`, oldest first (verification walks the chain forward). */
  forward(after: number, limit: number): Promise<AuditEntry[]>;
}

const COLUMNS = "seq, ts, action, resource, outcome, principal, prev_hash, hash";

export class SqliteAuditStore implements AuditStore {
  constructor(private readonly db: Database) {}

  async last(): Promise<AuditEntry | undefined> {
    return (this.db.query(`SELECT ${COLUMNS} FROM audit ORDER BY seq DESC LIMIT 1`).get() as AuditEntry | null) ?? undefined;
  }

  async append(entry: AuditEntry): Promise<void> {
    this.db.query(`INSERT INTO audit (${COLUMNS}) VALUES ($seq, $ts, $action, $resource, $outcome, $principal, $prev_hash, $hash)`).run({ ...entry });
  }

  async page(limit: number, before?: number): Promise<AuditEntry[]> {
    return this.db.query(`SELECT ${COLUMNS} FROM audit WHERE seq < $before ORDER BY seq DESC LIMIT $limit`).all({ before: before ?? Number.MAX_SAFE_INTEGER, limit }) as AuditEntry[];
  }

  async forward(after: number, limit: number): Promise<AuditEntry[]> {
    return this.db.query(`SELECT ${COLUMNS} FROM audit WHERE seq > $after ORDER BY seq LIMIT $limit`).all({ after, limit }) as AuditEntry[];
  }
}
