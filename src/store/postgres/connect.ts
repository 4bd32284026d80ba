// Reaching the fleet's PostgreSQL at boot (design/replicas.md, "Boot" 1): retried up to
// connect_timeout_secs, refused credentials not retried, and every failure one line naming the store by
// user, host, port and database, never the password (it stays inside the URL handed to the client).
import { SQL } from "bun";
import { StoreOpenError } from "../store.ts";

export interface PostgresTarget {
  /** The libpq URL, password included: handed to the client and nowhere else. */
  readonly url: string;
  readonly schema: string;
  readonly poolSize: number;
  readonly connectTimeoutSecs: number;
  /** The server ends any statement, lock wait included, past this; and a transaction idle this long. */
  readonly statementTimeoutMs?: number;
}

/** No statement of the request path or of an admin change waits on the database longer than this. */
export const STATEMENT_TIMEOUT_MS = 10_000;

/** `store postgres (user@host:port/db)`: how every line about this store names it. */
export function describeStore(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "store postgres (an unparsable URL)";
  }
  const user = decodeURIComponent(parsed.username) || "(default user)";
  const db = decodeURIComponent(parsed.pathname.replace(/^\//, "")) || user;
  return `store postgres (${user}@${parsed.hostname}:${parsed.port || "5432"}/${db})`;
}

/** SQLSTATEs that retrying cannot mend: credentials, authorization, a missing database. */
const PERMANENT = new Set(["28P01", "28000", "3D000", "42501"]);

/** Why a connection attempt failed, in words with no secret in them, and whether to try again. */
export function classify(error: unknown): { readonly cause: string; readonly retry: boolean } {
  const e = error as { code?: string; errno?: string; message?: string };
  const sqlstate = typeof e.errno === "string" ? e.errno : undefined;
  if (sqlstate === "28P01" || sqlstate === "28000") return { cause: "authentication failed", retry: false };
  if (sqlstate === "3D000") return { cause: "the database does not exist", retry: false };
  if (sqlstate && PERMANENT.has(sqlstate)) return { cause: `refused (SQLSTATE ${sqlstate})`, retry: false };
  const code = e.code ?? "";
  if (code === "ERR_POSTGRES_CONNECTION_REFUSED") return { cause: "unreachable: connection refused", retry: true };
  if (code === "ERR_POSTGRES_CONNECTION_TIMEOUT") return { cause: "unreachable: connection timed out", retry: true };
  if (code === "ERR_POSTGRES_CONNECTION_CLOSED") return { cause: "unreachable: connection closed", retry: true };
  if (code.startsWith("ERR_POSTGRES_TLS") || /tls|ssl/i.test(code)) return { cause: `TLS failed (${code})`, retry: false };
  // A server error with its SQLSTATE, or a client error by its code: both name no credential.
  return { cause: sqlstate ? `failed (SQLSTATE ${sqlstate})` : `unreachable: ${code || "connection failed"}`, retry: true };
}

/** The client pool, once one statement has run through it; throws a StoreOpenError naming the store. */
export async function connect(target: PostgresTarget, now: () => number = Date.now): Promise<SQL> {
  const name = describeStore(target.url);
  const deadline = now() + target.connectTimeoutSecs * 1000;
  let last = "unreachable";
  for (let attempt = 0; ; attempt++) {
    const left = Math.max(1, Math.ceil((deadline - now()) / 1000));
    let client: SQL | undefined;
    try {
      client = new SQL(target.url, {
        max: target.poolSize,
        connectionTimeout: Math.min(left, target.connectTimeoutSecs),
        idleTimeout: 60,
        // The schema need not exist yet: open() creates it before the first table is touched.
        // Server-side bounds: a lock held elsewhere or a stuck query fails the statement rather than
        // holding an admin change (and every one queued behind it) or a ledger batch forever.
        connection: {
          application_name: "gateway",
          search_path: target.schema,
          statement_timeout: target.statementTimeoutMs ?? STATEMENT_TIMEOUT_MS,
          idle_in_transaction_session_timeout: target.statementTimeoutMs ?? STATEMENT_TIMEOUT_MS,
        },
      });
      await client`SELECT 1`;
      return client;
    } catch (error) {
      await client?.close().catch(() => {});
      if (error instanceof TypeError && /url|invalid/i.test(String(error.message))) throw new StoreOpenError(`${name}: the URL is not a valid postgres URL`);
      const { cause, retry } = classify(error);
      last = cause;
      if (!retry) throw new StoreOpenError(`${name}: ${cause}`);
    }
    const wait = Math.min(1000, 100 * 2 ** attempt);
    if (now() + wait >= deadline) break;
    await Bun.sleep(wait);
  }
  throw new StoreOpenError(`${name}: ${last} (gave up after connect_timeout_secs ${target.connectTimeoutSecs})`);
}
