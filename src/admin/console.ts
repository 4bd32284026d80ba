// The operator console's files under /ui on the admin listener (design/console.md). They hold no data (every
// screen reads the admin API with the operator's bearer), so they are answered before authentication, as the
// pointer page at / is. Baked into the binary at build time (scripts/compile.ts); a gateway run from source
// has none and says so. Every answer forbids framing, sniffing and any source but this listener.
import { errorResponse } from "../http/errors.ts";

export const CONSOLE_PATH = "/ui";

const SECURITY_HEADERS = {
  "content-security-policy": "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
};

interface Served {
  readonly type: string;
  readonly gzip: Uint8Array<ArrayBuffer>;
  readonly immutable: boolean;
  /** Unzipped on first request by a client that takes no gzip. */
  plain?: Uint8Array<ArrayBuffer>;
}

export type ConsoleFiles = Record<string, { readonly type: string; readonly gzip: string; readonly immutable: boolean }>;

/** Whether the request is for the console: /ui, or anything under /ui/. */
export function isConsolePath(pathname: string): boolean {
  return pathname === CONSOLE_PATH || pathname.startsWith(`${CONSOLE_PATH}/`);
}

/** The console's answers from its built files (undefined: not built into this binary). */
export function consolePages(files: ConsoleFiles | undefined): (request: Request, pathname: string) => Response {
  const served = new Map<string, Served>();
  for (const [name, file] of Object.entries(files ?? {})) served.set(name, { type: file.type, gzip: new Uint8Array(Buffer.from(file.gzip, "base64")), immutable: file.immutable });
  const page = served.get("index.html");
  return (request, pathname) => {
    if (request.method !== "GET" && request.method !== "HEAD") {
      return errorResponse("method_not_allowed", "the console's pages answer GET and HEAD only", { headers: { ...SECURITY_HEADERS, allow: "GET, HEAD" } });
    }
    if (page === undefined) return errorResponse("not_found", "this gateway runs from source: the console is built into the binary (npm run build)", { headers: SECURITY_HEADERS });
    if (pathname === CONSOLE_PATH) return new Response(null, { status: 308, headers: { ...SECURITY_HEADERS, location: `${CONSOLE_PATH}/` } });
    const name = pathname.slice(CONSOLE_PATH.length + 1);
    const file = served.get(name);
    // A screen's path (/ui/keys) is the page; the app reads the path. A missing asset is a 404, not the page.
    if (file === undefined && name.startsWith("assets/")) return errorResponse("not_found", "no such console file", { headers: SECURITY_HEADERS });
    const chosen = file ?? page;
    const gzip = /\bgzip\b/.test(request.headers.get("accept-encoding") ?? "");
    const body = gzip ? chosen.gzip : (chosen.plain ??= Bun.gunzipSync(chosen.gzip));
    const headers: Record<string, string> = {
      ...SECURITY_HEADERS,
      "content-type": chosen.type,
      "cache-control": chosen.immutable ? "public, max-age=31536000, immutable" : "no-cache",
      vary: "accept-encoding",
    };
    if (gzip) headers["content-encoding"] = "gzip";
    return new Response(request.method === "HEAD" ? null : body, { status: 200, headers });
  };
}

/** The files compile() baked in, or undefined when running from source. */
export async function bakedConsoleFiles(): Promise<ConsoleFiles | undefined> {
  try {
    return (await import("gateway:console-assets")).default;
  } catch {
    return undefined;
  }
}
