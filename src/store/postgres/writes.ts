// A change's store writes joined to its audit entry's transaction on PostgreSQL. The stores' write methods
// are synchronous (so sqlite runs them inside its own transaction, store/audit.ts); on PostgreSQL they
// queue a statement instead, and the audit store runs the queue inside the transaction it opens for the
// entry: the change and its entry commit together or not at all, the interface unchanged.
import type { TransactionSQL } from "bun";

/** One statement, run later in the transaction. */
export type Statement = (tx: TransactionSQL) => Promise<unknown>;

let collecting: Statement[] | undefined;

/** Queues `statement` for the transaction being assembled; outside one it is a bug, said at once. */
export function queueWrite(statement: Statement, what: string): void {
  if (collecting === undefined) throw new Error(`a postgres ${what} write outside a change's audit transaction`);
  collecting.push(statement);
}

/** The statements `writes` queues (it is synchronous, so nothing else queues meanwhile). */
export function collectWrites(writes: (() => void) | undefined): Statement[] {
  if (writes === undefined) return [];
  const outer = collecting;
  const queued: Statement[] = [];
  collecting = queued;
  try {
    writes();
  } finally {
    collecting = outer;
  }
  return queued;
}

/** BIGINT columns answered as text by the client, made numbers (epoch ms and counts fit a double). */
export function numbers<T extends object>(row: T, columns: readonly (keyof T)[]): T {
  const out: Record<string, unknown> = { ...(row as Record<string, unknown>) };
  for (const column of columns) {
    const value = out[column as string];
    if (value !== null && value !== undefined) out[column as string] = Number(value);
  }
  return out as T;
}
