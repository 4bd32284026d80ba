// Which browsers may talk to the admin plane. A web page can make a developer's browser send requests
// to 127.0.0.1:8081 (a simple POST needs no preflight) or, through DNS rebinding, read the answers under
// its own name. So `Origin`, when a browser sends it, must be the listener's own origin or a configured
// one, and `Host` must name the listener. Clients that are not browsers (curl, SDKs, the admin client)
// send no Origin and dial the listener by an address it accepts, so they are not affected.
import type { ListenerSettings, Snapshot } from "../config/snapshot.ts";

interface AdminSite {
  /** `host:port` values (lowercase) that name this listener. */
  readonly hosts: ReadonlySet<string>;
  /** Configured names without a port: accepted on any port (a proxy in front may use another). */
  readonly names: ReadonlySet<string>;
  /** A wildcard listener (0.0.0.0, ::) answers on every address of the machine: any IP literal on its port. */
  readonly anyAddress: boolean;
  readonly port: string;
  readonly defaultPort: string;
  readonly scheme: string;
  readonly origins: ReadonlySet<string>;
}

const LOOPBACK = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|localhost)$/i;
const WILDCARD = new Set(["0.0.0.0", "::"]);
const IP_LITERAL = /^(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-f:.]+\])$/i;
const LOOPBACK_NAMES = ["localhost", "127.0.0.1", "[::1]"];

const bracketed = (host: string) => (host.includes(":") ? `[${host}]` : host);

/** The listener as bound: `hostname` and `tls` from boot, `port` the one the OS gave. */
export type BoundListener = Pick<ListenerSettings, "hostname" | "tls"> & { readonly port: number };

function siteOf(snapshot: Snapshot, listener: BoundListener): AdminSite {
  const { hostname, tls, port } = listener;
  const security = snapshot.config.security ?? {};
  const p = String(port);
  const hosts = new Set([`${bracketed(hostname.toLowerCase())}:${p}`]);
  if (LOOPBACK.test(hostname)) for (const name of LOOPBACK_NAMES) hosts.add(`${name}:${p}`);
  if (WILDCARD.has(hostname)) for (const name of LOOPBACK_NAMES) hosts.add(`${name}:${p}`);
  const names = new Set<string>();
  for (const entry of security.admin_allowed_hosts ?? []) {
    const lower = entry.toLowerCase();
    if (/:\d+$/.test(lower)) hosts.add(lower);
    else names.add(lower);
  }
  return {
    hosts,
    names,
    anyAddress: WILDCARD.has(hostname),
    port: p,
    defaultPort: tls ? "443" : "80",
    scheme: tls ? "https" : "http",
    origins: new Set((security.admin_allowed_origins ?? []).map((o) => o.toLowerCase())),
  };
}

/** Built once per config snapshot (the lists are live on a config change), not per request. */
const sites = new WeakMap<Snapshot, AdminSite>();

/** Splits `host[:port]` (IPv6 in brackets); the port defaults to the scheme's. */
function splitHost(value: string, defaultPort: string): [string, string] {
  const close = value.lastIndexOf("]");
  const colon = value.lastIndexOf(":");
  if (colon > close) return [value.slice(0, colon), value.slice(colon + 1)];
  return [value, defaultPort];
}

/**
 * Why a request must be refused (403) for where it comes from, or undefined. The listener is the one
 * bound at boot: a restart-only `admin_listen` change waiting in the live snapshot does not move it.
 */
export function siteRefusal(snapshot: Snapshot, request: Request, listener: BoundListener): string | undefined {
  let site = sites.get(snapshot);
  if (site === undefined || site.port !== String(listener.port)) sites.set(snapshot, (site = siteOf(snapshot, listener)));
  const host = request.headers.get("host")?.toLowerCase();
  if (host !== undefined && host !== "") {
    const [name, hostPort] = splitHost(host, site.defaultPort);
    const named =
      site.hosts.has(`${name}:${hostPort}`) || site.names.has(name) || (site.anyAddress && hostPort === site.port && IP_LITERAL.test(name));
    if (!named) return `Host ${JSON.stringify(host.slice(0, 200))} does not name this admin listener; add it to security.admin_allowed_hosts to accept it`;
  }
  const origin = request.headers.get("origin");
  if (origin === null) return crossSiteWithoutOrigin(request);
  const lower = origin.toLowerCase();
  if (host !== undefined && lower === `${site.scheme}://${host}`) return undefined;
  if (site.origins.has(lower)) return undefined;
  // A page of this listener under another of its names (http://localhost:<port> calling 127.0.0.1:<port>).
  if (lower.startsWith(`${site.scheme}://`)) {
    const [name, originPort] = splitHost(lower.slice(site.scheme.length + 3), site.defaultPort);
    if (site.hosts.has(`${name}:${originPort}`)) return undefined;
  }
  return `Origin ${JSON.stringify(origin.slice(0, 200))} may not use the admin API; add it to security.admin_allowed_origins to allow it`;
}

/**
 * A browser that sends no Origin still says where a request comes from in Sec-Fetch-Site. A change sent
 * from another site is refused even then; reads are not (a link to the admin plane stays a link).
 */
function crossSiteWithoutOrigin(request: Request): string | undefined {
  if (request.method === "GET" || request.method === "HEAD") return undefined;
  const site = request.headers.get("sec-fetch-site");
  if (site !== "cross-site" && site !== "same-site") return undefined;
  return `a ${site} browser request (Sec-Fetch-Site) may not change the admin plane; serve the console from an origin in security.admin_allowed_origins`;
}
