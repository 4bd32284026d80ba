// Which methods a path answers to, so an unknown path is 404 and a known path with the wrong method
// is 405 with Allow. Built once from the app's route table, after every route is registered.

interface RoutePattern {
  readonly match: RegExp;
  readonly methods: Set<string>;
}

function toRegExp(path: string): RegExp {
  const source = path
    .split("/")
    .map((segment) => (segment.startsWith(":") ? "[^/]+" : segment === "*" ? ".*" : segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("/");
  return new RegExp(`^${source}/?$`);
}

export class RouteTable {
  readonly #patterns: RoutePattern[] = [];

  constructor(routes: Iterable<{ method: string; path: string }>) {
    const byPath = new Map<string, Set<string>>();
    for (const { method, path } of routes) {
      const methods = byPath.get(path) ?? new Set<string>();
      methods.add(method.toUpperCase());
      if (method.toUpperCase() === "GET") methods.add("HEAD");
      byPath.set(path, methods);
    }
    for (const [path, methods] of byPath) this.#patterns.push({ match: toRegExp(path), methods });
  }

  /** The methods the path answers to; empty when no route has this path. */
  allowed(pathname: string): string[] {
    const out = new Set<string>();
    for (const pattern of this.#patterns) if (pattern.match.test(pathname)) for (const m of pattern.methods) out.add(m);
    return [...out].sort();
  }
}
