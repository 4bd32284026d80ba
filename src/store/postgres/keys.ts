// Virtual keys in the fleet's PostgreSQL: the sqlite store's rows and mapping (store/keys.ts), with
// writes queued into the change's audit transaction (writes.ts).
import type { SQL } from "bun";
import { KEY_COLUMNS, keyFromRow, keyParams, type KeyRecord, type KeyRow, type KeyStore } from "../keys.ts";
import { numbers, queueWrite } from "./writes.ts";

const BIGINTS = ["enabled", "created_at", "expires_at", "revoked_at", "deleted_at"] as const;
const fromPg = (row: KeyRow) => keyFromRow(numbers(row, BIGINTS));

export class PgKeyStore implements KeyStore {
  constructor(private readonly sql: SQL) {}

  async all(): Promise<KeyRecord[]> {
    return (await this.sql.unsafe(`SELECT ${KEY_COLUMNS} FROM keys ORDER BY created_at, id`)).map(fromPg);
  }

  async byIds(ids: readonly string[]): Promise<KeyRecord[]> {
    if (ids.length === 0) return [];
    return (await this.sql.unsafe(`SELECT ${KEY_COLUMNS} FROM keys WHERE id = ANY($1::text[])`, [ids])).map(fromPg);
  }

  insert(record: KeyRecord): void {
    const p = keyParams(record);
    queueWrite(
      (tx) => tx`INSERT INTO keys (id, name, subject, token_hash, allowed_pools, group_name, labels, enabled, created_at, expires_at, revoked_at, deleted_at, aws_access_key_id)
        VALUES (${p.id}, ${p.name}, ${p.subject}, ${p.token_hash}, ${p.allowed_pools}, ${p.group_name}, ${p.labels}, ${p.enabled}, ${p.created_at}, ${p.expires_at}, ${p.revoked_at}, ${p.deleted_at}, ${p.aws_access_key_id})`,
      "key",
    );
  }

  update(record: KeyRecord): void {
    const p = keyParams(record);
    queueWrite(
      (tx) => tx`UPDATE keys SET name = ${p.name}, subject = ${p.subject}, token_hash = ${p.token_hash}, allowed_pools = ${p.allowed_pools}, group_name = ${p.group_name},
        labels = ${p.labels}, enabled = ${p.enabled}, created_at = ${p.created_at}, expires_at = ${p.expires_at}, revoked_at = ${p.revoked_at}, deleted_at = ${p.deleted_at},
        aws_access_key_id = ${p.aws_access_key_id} WHERE id = ${p.id}`,
      "key",
    );
  }

}
