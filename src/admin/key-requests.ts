// POST /keys and PATCH /keys/{id} bodies, and the key list's page query, checked into what the key
// service takes. Each refusal is a message naming the member, for a 400 invalid_request.
import type { KeyChanges, NewKey } from "../governance/keys.ts";
import type { KeyCursor } from "../store/keys.ts";
import { durationSecs } from "../config/duration.ts";
import { MAX_EXPIRES_AT } from "../governance/token.ts";
import { CreateKeyReq, UpdateKeyReq } from "./key-views.ts";
import { decodeCursor, encodeCursor, pageLimit } from "./pages.ts";

export type { Checked } from "./pages.ts";
import { shape, type Checked } from "./pages.ts";

/** gaps.md "Keys": a key minted with no expiry lives a year. */
export const DEFAULT_KEY_TTL_SECS = 365 * 86_400;
/** The 1.4.x per-key limits: enforcement moved to groups in 1.5.0, so they are refused, not ignored. */
const REMOVED_MEMBERS = ["max_budget_cents", "rpm_limit", "tpm_limit", "budget_period"] as const;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);


/** C0 and C1 control characters and DEL: they forge log lines and break metric labels and terminals. */
const CONTROL = /\p{Cc}/u;

/** The first member (name, group, parent, a pool, a label's name or value) holding a control character. */
function controlCharacterIn(req: { name?: unknown; group?: unknown; parent?: unknown; labels?: unknown; allowed_pools?: unknown }): string | undefined {
  for (const member of ["name", "group", "parent"] as const) {
    const value = req[member];
    if (typeof value === "string" && CONTROL.test(value)) return `/${member}: must not contain control characters`;
  }
  if (Array.isArray(req.allowed_pools)) {
    const at = req.allowed_pools.findIndex((pool) => typeof pool === "string" && CONTROL.test(pool));
    if (at >= 0) return `/allowed_pools/${at}: must not contain control characters`;
  }
  if (isObject(req.labels)) {
    for (const [label, value] of Object.entries(req.labels)) {
      if (CONTROL.test(label) || (typeof value === "string" && CONTROL.test(value))) return `/labels/${label.replace(/\p{Cc}/gu, "?")}: must not contain control characters`;
    }
  }
  return undefined;
}


export function parseCreateKeyReq(body: unknown, nowSecs: number): Checked<NewKey> {
  if (isObject(body)) {
    const removed = REMOVED_MEMBERS.filter((member) => member in body);
    if (removed.length > 0) return { ok: false, message: `${removed.map((m) => `/${m}`).join(", ")}: removed in 1.5.0; limits are set on the key's group` };
  }
  const checked = shape<CreateKeyReq>(CreateKeyReq, body);
  if (!checked.ok) return checked;
  const req = checked.value;
  const control = controlCharacterIn(req);
  if (control !== undefined) return { ok: false, message: control };
  const expiresAt = req.expires_at ?? null;
  const expiresIn = req.expires_in ?? null;
  if (expiresAt !== null && expiresIn !== null) return { ok: false, message: "/expires_at, /expires_in: give one of the two, not both" };
  let exp: number;
  if (expiresAt !== null) {
    if (expiresAt <= nowSecs) return { ok: false, message: `/expires_at: ${expiresAt} is not in the future` };
    if (expiresAt > MAX_EXPIRES_AT) return { ok: false, message: `/expires_at: must be at most ${MAX_EXPIRES_AT} (9999-12-31T23:59:59Z)` };
    exp = expiresAt;
  } else if (expiresIn !== null) {
    const secs = durationSecs(expiresIn)!;
    if (secs === 0) return { ok: false, message: "/expires_in: must be longer than zero" };
    exp = nowSecs + secs;
    if (exp > MAX_EXPIRES_AT) return { ok: false, message: `/expires_in: ends after 9999-12-31T23:59:59Z; give a shorter duration` };
  } else exp = nowSecs + DEFAULT_KEY_TTL_SECS;
  const group = req.group ?? null;
  return {
    ok: true,
    value: {
      name: req.name,
      allowedPools: req.allowed_pools ?? null,
      expiresAt: exp,
      group,
      // Spec: `parent` is ignored without `group`.
      parent: group === null ? null : (req.parent ?? null),
      issueAwsCredential: req.issue_aws_credential ?? false,
      labels: req.labels ?? {},
    },
  };
}

export function parseUpdateKeyReq(body: unknown): Checked<KeyChanges> {
  if (isObject(body)) {
    for (const member of ["name", "enabled"] as const) {
      if (body[member] === null) return { ok: false, message: `/${member}: cannot be cleared (null); omit it to leave it unchanged` };
    }
  }
  const checked = shape<UpdateKeyReq>(UpdateKeyReq, body);
  if (!checked.ok) return checked;
  const req = checked.value;
  const control = controlCharacterIn(req);
  if (control !== undefined) return { ok: false, message: control };
  return {
    ok: true,
    value: {
      ...(req.name !== undefined && { name: req.name }),
      ...(req.enabled !== undefined && { enabled: req.enabled }),
      ...(req.allowed_pools !== undefined && { allowedPools: req.allowed_pools }),
      // Clearing labels leaves none.
      ...(req.labels !== undefined && { labels: req.labels ?? {} }),
      ...(req.group !== undefined && { group: req.group }),
    },
  };
}

export interface KeyListQuery {
  readonly limit: number;
  readonly after: KeyCursor | undefined;
  readonly includeTombstoned: boolean;
}

export const encodeKeyCursor = (cursor: KeyCursor): string => encodeCursor([cursor.createdAt, cursor.id]);

const keyCursor = (value: unknown): KeyCursor | undefined =>
  Array.isArray(value) && value.length === 2 && Number.isInteger(value[0]) && typeof value[1] === "string" ? { createdAt: value[0], id: value[1] } : undefined;

/** gaps.md "Pagination": `limit` 1..500 (default 50), `cursor` from the previous page; plus `include=tombstoned`. */
export function parseKeyListQuery(query: Readonly<Record<string, string | undefined>>): Checked<KeyListQuery> {
  const limit = pageLimit(query);
  if (!limit.ok) return limit;
  let after: KeyCursor | undefined;
  try {
    after = decodeCursor(query, keyCursor);
  } catch (error) {
    return { ok: false, message: (error as Error).message };
  }
  const include = query.include;
  if (include !== undefined && include !== "" && include !== "tombstoned") return { ok: false, message: `query include: expected "tombstoned", got ${JSON.stringify(include)}` };
  return { ok: true, value: { limit: limit.limit, after, includeTombstoned: include === "tombstoned" } };
}
