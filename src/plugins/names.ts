// Plugin names, versions and references: what may appear in a manifest, a fetch entry or a hook's
// `transport.target`. Every part becomes a folder name under plugins.dir, so none may be `.`, `..` or
// hold a separator.

/** A publisher or plugin name: starts with a letter or digit, so never `.` or `..`. */
export const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** semver.org's own expression (2.0.0). */
export const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;

export interface PluginRefParts {
  readonly publisher: string;
  readonly name: string;
  /** Undefined: the highest installed version. */
  readonly version: string | undefined;
}

/** `<publisher>/<name>` or `<publisher>/<name>@<version>`; undefined when it is neither. */
export function parseRef(ref: string): PluginRefParts | undefined {
  const match = /^([^/@]+)\/([^/@]+)(?:@([^/@]+))?$/.exec(ref);
  if (!match) return undefined;
  const [, publisher = "", name = "", version] = match;
  if (!NAME.test(publisher) || !NAME.test(name) || (version !== undefined && !SEMVER.test(version))) return undefined;
  return { publisher, name, version };
}

/** Highest first, by semver precedence. */
export const byVersionDescending = (a: string, b: string): number => Bun.semver.order(b, a);
