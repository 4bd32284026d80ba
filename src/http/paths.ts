// Request paths as the routers see them. A malformed percent-escape (`%zz`, `%C0%AF`, a trailing `%`)
// cannot be decoded: Bun's and Elysia's routers then hand a path parameter on as null (`/keys/%zz` looked
// up the key "null"; `/gem/x%zz` reached a direct route with a null alias and answered 500).

/** Whether the path holds a percent-escape that does not decode. Only a path holding a `%` pays for the check. */
export function malformedEscape(pathname: string): boolean {
  if (!pathname.includes("%")) return false;
  try {
    decodeURIComponent(pathname);
    return false;
  } catch {
    return true;
  }
}
