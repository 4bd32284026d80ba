// Numbered schema migrations. Each runs once, in order, inside a transaction with its bookkeeping row,
// so a crash mid-migration leaves the schema at the previous version. Append; never edit a shipped one.

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "meta",
    sql: `CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;`,
  },
];
