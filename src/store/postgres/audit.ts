// The fleet's one audit chain in PostgreSQL (design/replicas.md, "Audit"): appends are serialized in the
// database (a transaction-scoped advisory lock), each built on the head read under that lock, so `seq` is
// unique and gap-free for the fleet whichever replica appends; the change's own writes (writes.ts) and
// the store's record of the head commit in the same transaction. There is no head anchor file: the
// database is shared, a replica's disk is not.
import type { SQL } from "bun";
import { headText, parseHead, type AuditHead, type HeadRead } from "../audit-head.ts";
import { AUDIT_COLUMNS, RECORDED, RECORDED_NAME, type AuditEntry, type AuditStore } from "../audit.ts";
import { CHANGES_CHANNEL } from "./changes.ts";
import { collectWrites, numbers } from "./writes.ts";

/** pg_advisory_xact_lock key serializing appends (any fixed number; the schema's tables are the fleet's). */
export const APPEND_LOCK = 0x6761_7564_6974n; // "gaudit"

const entryOf = (row: AuditEntry) => numbers(row, ["seq", "ts"]);

export class PgAuditStore implements AuditStore {
  constructor(
    private readonly sql: SQL,
    /** This replica's id: an applied change is announced to the others (changes.ts) as `<replica> <resource>`. */
    private readonly replicaId?: string,
  ) {}

  async last(): Promise<AuditEntry | undefined> {
    const [row] = await this.sql.unsafe(`SELECT ${AUDIT_COLUMNS} FROM audit ORDER BY seq DESC LIMIT 1`);
    return row ? entryOf(row) : undefined;
  }

  async append(next: (head: AuditHead) => AuditEntry, writes: (() => void) | undefined): Promise<AuditEntry> {
    const statements = collectWrites(writes);
    return await this.sql.begin(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(${APPEND_LOCK})`;
      // The chain continues above the newest entry and above the head last recorded (entries removed
      // since leave the record ahead): no seq is ever reused, as with sqlite.
      const [last] = await tx`SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1`;
      const [recordedRow] = await tx`SELECT value FROM meta WHERE key = ${RECORDED}`;
      let head: AuditHead = last ? { seq: Number(last.seq), hash: last.hash } : { seq: 0, hash: "" };
      const recorded = recordedRow ? parseHead(RECORDED_NAME, recordedRow.value) : undefined;
      if (recorded?.state === "ok" && recorded.head.seq > head.seq) head = recorded.head;
      const entry = next(head);
      await tx`INSERT INTO audit (seq, ts, action, resource, outcome, principal, credential, prev_hash, hash)
        VALUES (${entry.seq}, ${entry.ts}, ${entry.action}, ${entry.resource}, ${entry.outcome}, ${entry.principal}, ${entry.credential}, ${entry.prev_hash}, ${entry.hash})`;
      await tx`INSERT INTO meta (key, value) VALUES (${RECORDED}, ${headText(entry)}) ON CONFLICT (key) DO UPDATE SET value = excluded.value`;
      for (const statement of statements) await statement(tx);
      // Delivered at commit, and only then: a rolled-back change announces nothing.
      if (this.replicaId !== undefined && entry.outcome === "applied") await tx`SELECT pg_notify(${CHANGES_CHANNEL}, ${`${this.replicaId} ${entry.resource}`})`;
      return entry;
    });
  }

  async recordedHead(): Promise<HeadRead> {
    const [row] = await this.sql`SELECT value FROM meta WHERE key = ${RECORDED}`;
    return row ? parseHead(RECORDED_NAME, row.value) : { state: "none" };
  }

  async page(limit: number, before?: number): Promise<AuditEntry[]> {
    const rows = await this.sql.unsafe(`SELECT ${AUDIT_COLUMNS} FROM audit WHERE seq < $1 ORDER BY seq DESC LIMIT $2`, [before ?? Number.MAX_SAFE_INTEGER, limit]);
    return rows.map(entryOf);
  }

  async forward(after: number, limit: number): Promise<AuditEntry[]> {
    const rows = await this.sql.unsafe(`SELECT ${AUDIT_COLUMNS} FROM audit WHERE seq > $1 ORDER BY seq LIMIT $2`, [after, limit]);
    return rows.map(entryOf);
  }

  async head(): Promise<HeadRead> {
    return { state: "none" };
  }

  async setHead(): Promise<void> {
    // No anchor file: see the top of this file.
  }
}
