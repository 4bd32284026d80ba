// The config's durations (`90d`, `12h`, `30m`, `45s`: schema.ts Duration), as seconds: one reader for
// auth.key_ttl and POST /keys' expires_in.

const UNIT_SECS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** `30d`, `12h`, `30m`, `45s` -> seconds; anything else undefined. */
export function durationSecs(text: string): number | undefined {
  const m = /^([0-9]+)([dhms])$/.exec(text);
  return m ? Number(m[1]) * UNIT_SECS[m[2]!]! : undefined;
}
