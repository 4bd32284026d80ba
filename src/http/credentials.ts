/** `Authorization: Bearer <token>`; the scheme is case-insensitive (RFC 9110 section 11.1). */
export function bearerToken(headers: Headers): string | undefined {
  const header = headers.get("authorization");
  if (!header) return undefined;
  const space = header.indexOf(" ");
  if (space < 0 || header.slice(0, space).toLowerCase() !== "bearer") return undefined;
  const token = header.slice(space + 1).trim();
  return token === "" ? undefined : token;
}

/**
 * A client credential in any protocol's header, for routes no protocol owns (/stats, /metrics):
 * Bearer, then `x-api-key`, `x-goog-api-key`, and the `key` query parameter.
 */
export function anyClientCredential(request: Request): string | undefined {
  const headers = request.headers;
  const header = bearerToken(headers) ?? headers.get("x-api-key")?.trim() ?? headers.get("x-goog-api-key")?.trim();
  if (header) return header;
  if (!request.url.includes("key=")) return undefined;
  return new URL(request.url).searchParams.get("key")?.trim() || undefined;
}
