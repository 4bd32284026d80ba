// Tables of virtual keys (migration 2) and the audit log (migrations 3 and 6).
import type { Migration } from "./migrations.ts";

export const KEY_MIGRATIONS: readonly Migration[] = [
  {
    version: 2,
    name: "keys",
    // token_hash: sha256 of the token, never the token (gaps.md "Keys" (d)); emptied on tombstone.
    // aws_access_key_id is not secret; its secret is derived from the signing key, never stored.
    sql: `CREATE TABLE keys (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  subject TEXT NOT NULL,
  token_hash TEXT NOT NULL,
  allowed_pools TEXT,
  group_name TEXT,
  labels TEXT NOT NULL DEFAULT '{}',
  enabled INTEGER NOT NULL DEFAULT 1,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  revoked_at INTEGER,
  deleted_at INTEGER,
  aws_access_key_id TEXT UNIQUE
) STRICT;
CREATE INDEX keys_by_creation ON keys (created_at, id);`,
  },
  {
    version: 3,
    name: "audit",
    sql: `CREATE TABLE audit (
  seq INTEGER PRIMARY KEY,
  ts INTEGER NOT NULL,
  action TEXT NOT NULL,
  resource TEXT NOT NULL,
  outcome TEXT NOT NULL,
  principal TEXT NOT NULL,
  prev_hash TEXT NOT NULL,
  hash TEXT NOT NULL
) STRICT;`,
  },
];

/** The acting credential of an audit entry (issue 22): additive, null on the entries written before it. */
export const AUDIT_CREDENTIAL: Migration = { version: 6, name: "audit_credential", sql: "ALTER TABLE audit ADD COLUMN credential TEXT;" };
