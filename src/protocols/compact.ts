// Building IR values from the wire: a member the wire did not give is absent, never `undefined`.

/** Drops undefined members in place (callers pass a literal just built): one pass, no entry arrays per request. */
export function compact<T extends object>(value: T): T {
  const members = value as Record<string, unknown>;
  for (const key in members) if (members[key] === undefined) delete members[key];
  return value;
}
