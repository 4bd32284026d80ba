// The mark GET /config/source writes where it hides a secret (source.ts). A config sent back with the mark
// still in it (the console's editor starts from the source) would set that secret to the mark's text and
// break whatever used it, so every load refuses it with its path: a secret is written as itself or as a
// reference, never as the mark. The mark is one nobody writes as a value: a hook that replaces what it
// redacts with "<redacted>" is a config the gateway takes.
export const REDACTED = "<redacted-by-gateway>";

const isBag = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** One error per value of the raw tree holding the mark. */
export function redactedErrors(tree: unknown, at: string[] = [], depth = 0): string[] {
  if (typeof tree === "string") {
    return tree.includes(REDACTED) ? [`${at.join(".") || "(root)"}: holds ${REDACTED}, the mark GET /config/source shows in place of a secret; write the secret or a reference ({env: NAME}, {file: PATH} or \${NAME})`] : [];
  }
  // The parsers bound a tree's depth already; this bound only keeps a hand-built tree from recursing far.
  if (depth > 64) return [];
  if (Array.isArray(tree)) return tree.flatMap((item, i) => redactedErrors(item, [...at, String(i)], depth + 1));
  if (isBag(tree)) return Object.entries(tree).flatMap(([key, value]) => redactedErrors(value, [...at, key], depth + 1));
  return [];
}
