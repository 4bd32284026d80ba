// Where API-created groups are kept (config-file groups live in the config). The interface is what
// governance sees; sqlite is the embedded implementation.
import type { Database } from "bun:sqlite";
import type { Limit } from "../governance/limits.ts";
import { Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { LimitCfg } from "../config/schema.ts";
import { jsonColumn } from "./rows.ts";

/** Stored limits are checked as the config's own, so a hand-edited row cannot reach the limit engine malformed. */
const LIMITS = Type.Array(LimitCfg);
const isLimits = (value: unknown) => Value.Check(LIMITS, value);

export interface GroupRecord {
  readonly name: string;
  readonly parent: string | null;
  readonly enabled: boolean;
  readonly limits: readonly Limit[];
  readonly child_default: readonly Limit[] | null;
  /** Unix seconds. */
  readonly createdAt: number;
}

export interface GroupStore {
  all(): Promise<GroupRecord[]>;
  /** Writes are synchronous, so they can join the audit entry's transaction (AuditStore.append). */
  insert(group: GroupRecord): void;
  /** Replaces enabled, limits and child_default (name, parent and creation stay). */
  update(group: GroupRecord): void;
  delete(name: string): void;
}

/** A groups row as sqlite and postgres both answer it (postgres's BIGINTs made numbers first). */
export interface GroupRow {
  name: string;
  parent: string | null;
  enabled: number;
  limits: string;
  child_default: string | null;
  created_at: number;
}

export const groupFromRow = (row: GroupRow): GroupRecord => ({
  name: row.name,
  parent: row.parent,
  enabled: row.enabled === 1,
  limits: jsonColumn<Limit[]>("groups", row.name, "limits", row.limits, isLimits, "a list of limits"),
  child_default: row.child_default === null ? null : jsonColumn<Limit[]>("groups", row.name, "child_default", row.child_default, isLimits, "a list of limits"),
  createdAt: row.created_at,
});

export class SqliteGroupStore implements GroupStore {
  constructor(private readonly db: Database) {}

  async all(): Promise<GroupRecord[]> {
    const rows = this.db.query("SELECT name, parent, enabled, limits, child_default, created_at FROM groups ORDER BY created_at, name").all() as GroupRow[];
    return rows.map(groupFromRow);
  }

  insert(group: GroupRecord): void {
    this.db
      .query("INSERT INTO groups (name, parent, enabled, limits, child_default, created_at) VALUES (?, ?, ?, ?, ?, ?)")
      .run(group.name, group.parent, group.enabled ? 1 : 0, JSON.stringify(group.limits), group.child_default === null ? null : JSON.stringify(group.child_default), group.createdAt);
  }

  update(group: GroupRecord): void {
    this.db
      .query("UPDATE groups SET enabled = ?, limits = ?, child_default = ? WHERE name = ?")
      .run(group.enabled ? 1 : 0, JSON.stringify(group.limits), group.child_default === null ? null : JSON.stringify(group.child_default), group.name);
  }

  delete(name: string): void {
    this.db.query("DELETE FROM groups WHERE name = ?").run(name);
  }
}
