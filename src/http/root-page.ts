// `GET /` (and HEAD) on each listener: a short pointer for whoever opens the address in a browser or
// curls it first, instead of a bare 404. It names the gateway, its version, what the listener serves and
// where the docs are; nothing secret and no config beyond the path list. JSON unless the caller asks for
// text (a browser's Accept names text/html, curl's is */*).
import { VERSION } from "../version.ts";

export interface RootPage {
  /** What this listener is, in one line. */
  readonly listener: string;
  /** Paths worth knowing on this listener, as `METHOD /path`. */
  readonly serves: readonly string[];
  /** Where to read on. */
  readonly docs: readonly string[];
  /** Further pointers (name -> path), e.g. the admin API's OpenAPI document. */
  readonly links?: Readonly<Record<string, string>>;
}

/** The JSON and text forms, made once per listener; `extra` members (read per request) join both. */
export function rootPage(page: RootPage): (request: Request, extra?: Readonly<Record<string, string | readonly string[]>>) => Response {
  const body = { name: "gateway", version: VERSION, ...page };
  const json = JSON.stringify(body, null, 2);
  const links = Object.entries(page.links ?? {}).map(([name, path]) => `  ${name}: ${path}`);
  const text = [
    `gateway ${VERSION}: ${page.listener}`,
    "",
    "Serves:",
    ...page.serves.map((s) => `  ${s}`),
    ...(links.length > 0 ? ["", "Links:", ...links] : []),
    "",
    "Docs:",
    ...page.docs.map((d) => `  ${d}`),
    "",
  ].join("\n");
  return (request, extra) => {
    const accept = request.headers.get("accept") ?? "";
    const wantsText = !accept.includes("application/json") && (accept.includes("text/plain") || accept.includes("text/html"));
    const headers = { "content-type": wantsText ? "text/plain; charset=utf-8" : "application/json", "cache-control": "no-store" };
    const lines = Object.entries(extra ?? {}).map(([name, value]) => `${name}: ${typeof value === "string" ? value : value.join(", ")}\n`).join("");
    const answer = wantsText ? text + lines : extra === undefined ? json : JSON.stringify({ ...body, ...extra }, null, 2);
    return new Response(request.method === "HEAD" ? null : answer, { status: 200, headers });
  };
}
