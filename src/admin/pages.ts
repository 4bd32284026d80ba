// Admin request bodies and gaps.md "Pagination", shared by every paged admin list (keys, audit, config versions): `limit` 1..500
// (default 50, else 400) and an opaque `cursor` that only the endpoint which issued it can read.
import { Value } from "@sinclair/typebox/value";
import type { TSchema } from "@sinclair/typebox";
import { schemaErrors } from "../config/schema-errors.ts";
import { GatewayError } from "../http/errors.ts";

export type Checked<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly message: string };

/** An admin request body checked against its schema, or the 400 message naming each offending member. */
export function shape<T>(schema: TSchema, body: unknown): Checked<T> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return { ok: false, message: "request body must be a JSON object" };
  if (Value.Check(schema, body)) return { ok: true, value: body as T };
  return { ok: false, message: schemaErrors(schema, body, { style: "pointer" }).join("; ") };
}

type Query = Readonly<Record<string, string | undefined>>;

export function pageLimit(query: Query): { ok: true; limit: number } | { ok: false; message: string } {
  if (query.limit === undefined) return { ok: true, limit: 50 };
  if (!/^[0-9]+$/.test(query.limit) || Number(query.limit) < 1 || Number(query.limit) > 500) return { ok: false, message: `query limit: expected an integer from 1 to 500, got ${JSON.stringify(query.limit)}` };
  return { ok: true, limit: Number(query.limit) };
}

export const encodeCursor = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString("base64url");

/** The cursor's value when `accept` recognises it; undefined when absent; 400 when it is not one of ours. */
export function decodeCursor<T>(query: Query, accept: (value: unknown) => T | undefined): T | undefined {
  if (query.cursor === undefined || query.cursor === "") return undefined;
  let decoded: T | undefined;
  try {
    decoded = accept(JSON.parse(Buffer.from(query.cursor, "base64url").toString("utf8")));
  } catch {
    decoded = undefined;
  }
  if (decoded === undefined) throw new GatewayError("invalid_request", "query cursor: not a cursor this endpoint issued");
  return decoded;
}

/** A page of a newest-first list of items numbered by `seq`: items below the cursor's number. */
export function seqPage<T>(items: readonly T[], seqOf: (item: T) => number, query: Query): { items: T[]; next_cursor: string | null } {
  const limit = pageLimit(query);
  if (!limit.ok) throw new GatewayError("invalid_request", limit.message);
  const before = decodeCursor(query, (v) => (Number.isInteger(v) && (v as number) >= 0 ? (v as number) : undefined));
  const below = before === undefined ? items : items.filter((item) => seqOf(item) < before);
  const page = below.slice(0, limit.limit);
  const last = page[page.length - 1];
  return { items: page, next_cursor: below.length > limit.limit && last !== undefined ? encodeCursor(seqOf(last)) : null };
}
