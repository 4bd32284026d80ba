// The proxy an upstream origin is reached through, from the environment as Bun's fetch read it:
// `https_proxy`/`HTTPS_PROXY` for https origins (a CONNECT tunnel, TLS end to end inside it),
// `http_proxy`/`HTTP_PROXY` for http ones (the request in absolute form), `no_proxy`/`NO_PROXY` for the
// hosts reached directly. Looked at once per origin, when its pool is made; never per request.

export interface Proxy {
  readonly hostname: string;
  readonly port: number;
  /** `proxy-authorization: Basic ...\r\n` from the proxy URL's user and password, or "". */
  readonly authorization: string;
}

/** The proxy for an origin, or undefined to connect directly. Throws (coded) for a proxy URL it cannot use. */
export function proxyFor(https: boolean, hostname: string, port: number, env: Record<string, string | undefined> = process.env): Proxy | undefined {
  const setting = https ? (env.https_proxy ?? env.HTTPS_PROXY) : (env.http_proxy ?? env.HTTP_PROXY);
  if (setting === undefined || setting.trim() === "" || bypassed(hostname, port, env.no_proxy ?? env.NO_PROXY ?? "")) return undefined;
  let url: URL;
  try {
    url = new URL(setting.includes("://") ? setting : `http://${setting}`);
  } catch {
    throw proxyError("is not a URL");
  }
  // A TLS connection to the proxy itself would put TLS inside TLS for a tunnel; only plain proxies are spoken to.
  if (url.protocol !== "http:") throw proxyError("is not an http:// proxy");
  const user = decodeURIComponent(url.username);
  const authorization = user === "" ? "" : `proxy-authorization: Basic ${Buffer.from(`${user}:${decodeURIComponent(url.password)}`).toString("base64")}\r\n`;
  return { hostname: url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname, port: url.port === "" ? 80 : Number(url.port), authorization };
}

function proxyError(why: string): Error {
  return Object.assign(new Error(`the proxy set in the environment ${why}`), { code: "ERR_INVALID_PROXY" });
}

/**
 * NO_PROXY: entries separated by commas or spaces; `*` bypasses every host; an entry matches its host and
 * every subdomain (`example.com` and `.example.com` both match `api.example.com`); `host:port` only that port.
 */
export function bypassed(hostname: string, port: number, noProxy: string): boolean {
  const host = hostname.toLowerCase();
  for (const raw of noProxy.split(/[\s,]+/)) {
    let entry = raw.trim().toLowerCase();
    if (entry === "") continue;
    if (entry === "*") return true;
    const colon = entry.lastIndexOf(":");
    if (colon > 0 && !entry.includes("]") && entry.indexOf(":") === colon) {
      if (Number(entry.slice(colon + 1)) !== port) continue;
      entry = entry.slice(0, colon);
    }
    if (entry.startsWith("*.")) entry = entry.slice(1);
    if (entry.startsWith(".")) entry = entry.slice(1);
    if (entry.startsWith("[") && entry.endsWith("]")) entry = entry.slice(1, -1);
    if (host === entry || host.endsWith(`.${entry}`)) return true;
  }
  return false;
}

/** The CONNECT request that opens a tunnel to `authority` (host:port). */
export function connectRequest(authority: string, proxy: Proxy): string {
  return `CONNECT ${authority} HTTP/1.1\r\nhost: ${authority}\r\n${proxy.authorization}\r\n`;
}
