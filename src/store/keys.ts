// Where virtual keys are kept. The interface is what governance sees; sqlite is the embedded
// implementation. A key's token is never here: only its sha256 (and not even that once tombstoned).
import type { Database } from "bun:sqlite";
import { isStringArray, isStringRecord, jsonColumn } from "./rows.ts";

export interface KeyRecord {
  readonly id: string;
  readonly name: string;
  /** The token's `sub`: who the key was minted for. */
  readonly subject: string;
  /** Lowercase hex sha256 of the token; "" once tombstoned. */
  readonly tokenHash: string;
  /** null = all pools, [] = none. */
  readonly allowedPools: readonly string[] | null;
  /** null = unlimited. */
  readonly group: string | null;
  readonly labels: Readonly<Record<string, string>>;
  readonly enabled: boolean;
  /** Unix seconds, as are the other times. */
  readonly createdAt: number;
  readonly expiresAt: number;
  readonly revokedAt: number | null;
  readonly deletedAt: number | null;
  readonly awsAccessKeyId: string | null;
}

/** Position after the last key of a page, in the listing order (created_at, id). */
export interface KeyCursor {
  readonly createdAt: number;
  readonly id: string;
}

export interface KeyStore {
  /** Every key, tombstoned ones included: the registry is built from this at boot. */
  all(): Promise<KeyRecord[]>;
  /** The keys of these ids that exist (a replica reloads what another changed: governance/fleet-sync.ts). */
  byIds(ids: readonly string[]): Promise<KeyRecord[]>;
  /** Synchronous, so it can join the audit entry's transaction (AuditStore.append). */
  insert(record: KeyRecord): void;
  /** Replaces the row of `record.id`; synchronous like insert. */
  update(record: KeyRecord): void;
}

/** A keys row as sqlite and postgres both answer it (postgres's BIGINTs made numbers first). */
export interface KeyRow {
  id: string;
  name: string;
  subject: string;
  token_hash: string;
  allowed_pools: string | null;
  group_name: string | null;
  labels: string;
  enabled: number;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
  deleted_at: number | null;
  aws_access_key_id: string | null;
}

export const keyFromRow = (row: KeyRow): KeyRecord => ({
  id: row.id,
  name: row.name,
  subject: row.subject,
  tokenHash: row.token_hash,
  allowedPools: row.allowed_pools === null ? null : jsonColumn<string[]>("keys", row.id, "allowed_pools", row.allowed_pools, isStringArray, "a list of pool names"),
  group: row.group_name,
  labels: jsonColumn<Record<string, string>>("keys", row.id, "labels", row.labels, isStringRecord, "an object of string labels"),
  enabled: row.enabled === 1,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  revokedAt: row.revoked_at,
  deletedAt: row.deleted_at,
  awsAccessKeyId: row.aws_access_key_id,
});

export const keyParams = (r: KeyRecord) => ({
  id: r.id,
  name: r.name,
  subject: r.subject,
  token_hash: r.tokenHash,
  allowed_pools: r.allowedPools === null ? null : JSON.stringify(r.allowedPools),
  group_name: r.group,
  labels: JSON.stringify(r.labels),
  enabled: r.enabled ? 1 : 0,
  created_at: r.createdAt,
  expires_at: r.expiresAt,
  revoked_at: r.revokedAt,
  deleted_at: r.deletedAt,
  aws_access_key_id: r.awsAccessKeyId,
});

export const KEY_COLUMNS = "id, name, subject, token_hash, allowed_pools, group_name, labels, enabled, created_at, expires_at, revoked_at, deleted_at, aws_access_key_id";

export class SqliteKeyStore implements KeyStore {
  constructor(private readonly db: Database) {}

  async all(): Promise<KeyRecord[]> {
    return (this.db.query(`SELECT ${KEY_COLUMNS} FROM keys ORDER BY created_at, id`).all() as KeyRow[]).map(keyFromRow);
  }

  async byIds(ids: readonly string[]): Promise<KeyRecord[]> {
    if (ids.length === 0) return [];
    return (this.db.query(`SELECT ${KEY_COLUMNS} FROM keys WHERE id IN (${ids.map(() => "?").join(", ")})`).all(...ids) as KeyRow[]).map(keyFromRow);
  }

  insert(record: KeyRecord): void {
    this.db
      .query(`INSERT INTO keys (${KEY_COLUMNS}) VALUES ($id, $name, $subject, $token_hash, $allowed_pools, $group_name, $labels, $enabled, $created_at, $expires_at, $revoked_at, $deleted_at, $aws_access_key_id)`)
      .run(keyParams(record));
  }

  update(record: KeyRecord): void {
    this.db
      .query(
        `UPDATE keys SET name = $name, subject = $subject, token_hash = $token_hash, allowed_pools = $allowed_pools, group_name = $group_name, labels = $labels,
         enabled = $enabled, created_at = $created_at, expires_at = $expires_at, revoked_at = $revoked_at, deleted_at = $deleted_at, aws_access_key_id = $aws_access_key_id WHERE id = $id`,
      )
      .run(keyParams(record));
  }
}
