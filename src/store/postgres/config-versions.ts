// The fleet's config versions in PostgreSQL: one row per version, written in its change's audit
// transaction (a number another replica took first fails that transaction: VersionTaken).
import type { SQL } from "bun";
import { VersionTaken, type ConfigVersionStore, type StoredConfigVersion } from "../config-versions.ts";
import { numbers, queueWrite } from "./writes.ts";

export class PgConfigVersions implements ConfigVersionStore {
  constructor(private readonly sql: SQL) {}

  async newest(limit: number, after = -1): Promise<StoredConfigVersion[]> {
    const rows = await this.sql`SELECT version, ts, principal, summary, base, overlay FROM config_versions WHERE version > ${after} ORDER BY version DESC LIMIT ${limit}`;
    return rows.map((row: StoredConfigVersion) => numbers(row, ["version", "ts"])).reverse();
  }

  async first(v: StoredConfigVersion): Promise<boolean> {
    const rows = await this.sql`INSERT INTO config_versions (version, ts, principal, summary, base, overlay)
      VALUES (${v.version}, ${v.ts}, ${v.principal}, ${v.summary}, ${v.base}, ${v.overlay}) ON CONFLICT (version) DO NOTHING RETURNING version`;
    return rows.length === 1;
  }

  record(v: StoredConfigVersion): void {
    queueWrite(async (tx) => {
      try {
        await tx`INSERT INTO config_versions (version, ts, principal, summary, base, overlay) VALUES (${v.version}, ${v.ts}, ${v.principal}, ${v.summary}, ${v.base}, ${v.overlay})`;
      } catch (error) {
        if ((error as { errno?: string }).errno === "23505") throw new VersionTaken(v.version);
        throw error;
      }
    }, "config version");
  }
}
