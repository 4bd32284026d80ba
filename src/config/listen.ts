// The one reader of a listen address: the config's `listen` and `admin_listen`, and the command line's
// --listen, --admin-listen, --port and GATEWAY_LISTEN / GATEWAY_ADMIN_LISTEN, which override them.
import { ListenAddress } from "./schema.ts";

export interface ListenAddressParts {
  /** Without IPv6 brackets; an empty host is every interface (0.0.0.0). */
  readonly hostname: string;
  /** 0 lets the OS pick a free port (the "gateway started" line names the one it got). */
  readonly port: number;
}

const SHAPE = new RegExp(ListenAddress.pattern!);
export const MAX_PORT = 65535;

/** `host:port` (IPv6 as `[::1]:port`), or what is wrong with it. */
export function parseListenAddress(address: string): ListenAddressParts | { error: string } {
  if (!SHAPE.test(address)) return { error: `expected ${ListenAddress["x-expected"]}` };
  const colon = address.lastIndexOf(":");
  const port = Number(address.slice(colon + 1));
  if (port > MAX_PORT) return { error: `port ${port} is above ${MAX_PORT}` };
  let hostname = address.slice(0, colon);
  if (hostname.startsWith("[")) hostname = hostname.slice(1, -1);
  return { hostname: hostname === "" ? "0.0.0.0" : hostname, port };
}

/** The host part of an address as written (brackets kept), for `--port` to go with. */
export const hostOf = (address: string) => address.slice(0, address.lastIndexOf(":"));

/** What the command line (or its variables) sets: a layer over the config file and the overlay. */
export interface ListenOverrides {
  readonly listen: string | undefined;
  readonly adminListen: string | undefined;
  readonly port: number | undefined;
}

/**
 * The overrides as a config tree, merged over every tree the process loads (boot, --check, reloads,
 * applies), so a restart with the same command line comes back on the same addresses. `--port` keeps
 * the host of the address otherwise in force: `configured` is the `listen` of the file and overlay.
 */
export function overrideTree(o: ListenOverrides, configured: unknown): Record<string, string> {
  const tree: Record<string, string> = {};
  const host = o.listen !== undefined ? hostOf(o.listen) : typeof configured === "string" && !("error" in parseListenAddress(configured)) ? hostOf(configured) : "127.0.0.1";
  if (o.port !== undefined) tree.listen = `${host}:${o.port}`;
  else if (o.listen !== undefined) tree.listen = o.listen;
  if (o.adminListen !== undefined) tree.admin_listen = o.adminListen;
  return tree;
}
