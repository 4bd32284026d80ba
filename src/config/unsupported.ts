// Config the schema describes but this build cannot honour yet. Accepting it would let an operator
// believe a hook gates, an exporter ships or a sign-in works when nothing reads the member, so each one
// is refused with its path, by `--check`, at boot, on reload and by the admin config API alike (they all
// pass through load.ts treeErrors). This is the one list: a feature that lands removes its entry.

export interface NotYet {
  /** Dotted path; `*` stands for any key (a pool name). */
  readonly path: string;
  /** What it lands with, for the message. */
  readonly lands: string;
}

const HOOKS = "hooks and plugins";
const EXPORT = "telemetry export";

export const NOT_YET_SUPPORTED: readonly NotYet[] = [
  { path: "advanced.response_headers.server_timing", lands: `${EXPORT} (Server-Timing)` },
];

type Bag = Record<string, unknown>;
const isBag = (value: unknown): value is Bag => typeof value === "object" && value !== null && !Array.isArray(value);
/** `{}` and `[]` ask for nothing, so they are let through (a template may carry `hooks: {}`). */
const isEmpty = (value: unknown) => (Array.isArray(value) ? value.length === 0 : isBag(value) && Object.keys(value).length === 0);

/** The members of `tree` at `path` that are present and not empty, each with its concrete path. */
function present(tree: unknown, parts: readonly string[], at: string[] = []): string[] {
  if (parts.length === 0) return tree === undefined || isEmpty(tree) ? [] : [at.join(".")];
  if (!isBag(tree)) return [];
  const [head, ...rest] = parts as [string, ...string[]];
  const keys = head === "*" ? Object.keys(tree) : [head];
  return keys.flatMap((key) => (Object.hasOwn(tree, key) ? present(tree[key], rest, [...at, key]) : []));
}

/** One error per member of the raw tree (as written, before defaults) that this build cannot honour. */
export function unsupportedErrors(tree: unknown): string[] {
  return NOT_YET_SUPPORTED.flatMap(({ path, lands }) =>
    present(tree, path.split(".")).map((at) => `${at}: not supported by this build yet (lands with ${lands})`),
  );
}
