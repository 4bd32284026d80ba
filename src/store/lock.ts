// One process per store: a second gateway on the same sqlite file would write the same ledger, the same
// running/stopped marks and the same audit chain as the first, each believing it is alone.
import { Database } from "bun:sqlite";
import { StoreOpenError } from "./store.ts";

/** The lock file beside the store (like the audit head's anchor, `<store>.audit-head`). */
export const storeLockPath = (storePath: string) => `${storePath}.lock`;

export interface StoreLock {
  readonly path: string;
  release(): void;
}

/**
 * Takes the store's lock for as long as this process lives: an exclusive sqlite transaction on
 * `<store>.lock`, left open. sqlite's file locks are the operating system's (fcntl on Unix, LockFileEx on
 * Windows), so the lock goes with the process however it ends (kill -9 included: no stale lock to clear)
 * and readers of the store itself (a backup, `--verify-audit`) are not held up. The journal is kept in
 * memory so nothing but the empty lock file is left beside the store.
 */
/** How a refusal names the file the lock guards, and the setting that moves it. */
export interface LockedFile {
  /** In "… is in use by another running gateway". */
  readonly name: string;
  /** In "cannot open …". */
  readonly opening: string;
  readonly setting: string;
}
const SQLITE_STORE: LockedFile = { name: "store", opening: "sqlite store", setting: "store.settings.path" };

export function lockStore(storePath: string, what: LockedFile = SQLITE_STORE): StoreLock {
  const path = storeLockPath(storePath);
  let db: Database;
  try {
    db = new Database(path, { create: true });
  } catch (error) {
    throw new StoreOpenError(`cannot open ${what.opening} ${storePath}: its lock file ${path}: ${(error as Error).message}`);
  }
  try {
    db.exec("PRAGMA busy_timeout = 0; PRAGMA journal_mode = MEMORY;");
    db.exec("BEGIN EXCLUSIVE");
  } catch (error) {
    db.close();
    if ((error as { code?: string }).code === "SQLITE_BUSY")
      throw new StoreOpenError(`${what.name} ${storePath} is in use by another running gateway (it holds ${path}); stop it, or give this one its own ${what.setting}`);
    throw new StoreOpenError(`cannot take the store's lock ${path}: ${(error as Error).message}`);
  }
  return {
    path,
    release: () => {
      try {
        db.exec("ROLLBACK");
      } finally {
        db.close();
      }
    },
  };
}
