// Reading the JSON columns of stored rows. A row that does not parse stops the boot with a line naming
// the table, the row's key and the column, not a bare stack trace.
import { StoreOpenError } from "./store.ts";

/** `text` parsed and checked by `valid`; a StoreOpenError naming the row otherwise. */
export function jsonColumn<T>(table: string, key: string, column: string, text: string, valid: (value: unknown) => boolean, expected: string): T {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new StoreOpenError(`table ${table}, row ${JSON.stringify(key)}: column ${column} is not JSON`);
  }
  if (!valid(value)) throw new StoreOpenError(`table ${table}, row ${JSON.stringify(key)}: column ${column} is not ${expected}`);
  return value as T;
}

export const isStringArray = (v: unknown) => Array.isArray(v) && v.every((x) => typeof x === "string");
export const isStringRecord = (v: unknown) => typeof v === "object" && v !== null && !Array.isArray(v) && Object.values(v).every((x) => typeof x === "string");
