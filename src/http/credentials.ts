/** `Authorization: Bearer <token>`; the scheme is case-insensitive (RFC 9110 section 11.1). */
export function bearerToken(headers: Headers): string | undefined {
  const header = headers.get("authorization");
  if (!header) return undefined;
  const space = header.indexOf(" ");
  if (space < 0 || header.slice(0, space).toLowerCase() !== "bearer") return undefined;
  const token = header.slice(space + 1).trim();
  return token === "" ? undefined : token;
}
