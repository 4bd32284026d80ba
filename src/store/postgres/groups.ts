// API-created groups in the fleet's PostgreSQL: the sqlite store's rows and mapping (store/groups.ts),
// with writes queued into the change's audit transaction (writes.ts).
import type { SQL } from "bun";
import { groupFromRow, type GroupRecord, type GroupRow, type GroupStore } from "../groups.ts";
import { numbers, queueWrite } from "./writes.ts";

const limitsText = (group: GroupRecord) => ({ limits: JSON.stringify(group.limits), childDefault: group.child_default === null ? null : JSON.stringify(group.child_default) });

export class PgGroupStore implements GroupStore {
  constructor(private readonly sql: SQL) {}

  async all(): Promise<GroupRecord[]> {
    const rows = await this.sql`SELECT name, parent, enabled, limits, child_default, created_at FROM groups ORDER BY created_at, name`;
    return rows.map((row: GroupRow) => groupFromRow(numbers(row, ["enabled", "created_at"])));
  }

  insert(group: GroupRecord): void {
    const { limits, childDefault } = limitsText(group);
    queueWrite((tx) => tx`INSERT INTO groups (name, parent, enabled, limits, child_default, created_at) VALUES (${group.name}, ${group.parent}, ${group.enabled ? 1 : 0}, ${limits}, ${childDefault}, ${group.createdAt})`, "group");
  }

  update(group: GroupRecord): void {
    const { limits, childDefault } = limitsText(group);
    queueWrite((tx) => tx`UPDATE groups SET enabled = ${group.enabled ? 1 : 0}, limits = ${limits}, child_default = ${childDefault} WHERE name = ${group.name}`, "group");
  }

  delete(name: string): void {
    queueWrite((tx) => tx`DELETE FROM groups WHERE name = ${name}`, "group");
  }
}
