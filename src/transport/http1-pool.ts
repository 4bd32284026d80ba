// The upstream HTTP/1.1 client's connections (http1.ts): one keep-alive pool per origin for the life of the
// process, Bun.connect's socket handlers, and the one shared sweep that bounds silence and idleness. A
// connection carries one exchange at a time; what it tells the exchange is the Carried interface.
import type { Socket, SocketHandler } from "bun";
import { badResponse, MAX_HEAD_BYTES, parseHead } from "./http1-head.ts";
import { connectRequest, proxyFor } from "./http1-proxy.ts";
import type { PoolSettings } from "./upstream.ts";

/** What a connection carries (http1.ts's exchange): told of each read, of drains, of the close. */
export interface Carried {
  /** The consumer paused the body: silence is then the client's, not the upstream's. */
  readonly paused: boolean;
  readonly timeoutMs: number;
  /**
   * The client's signal, looked at by the sweep rather than listened to: adding and removing a listener
   * on every call cost ~2 µs a request (docs/performance.md), and a client that left is let go within a tick.
   */
  readonly signal: AbortSignal;
  /** The client went away before the answer was taken whole (its signal aborted). */
  clientLeft(): void;
  /** Writes (more of) the request. */
  write(conn: Conn): void;
  received(conn: Conn, data: Buffer): void;
  /** The connection closed or never opened while it carried this. */
  closed(conn: Conn, error: Error | undefined): void;
  /** Gives the exchange up with `error` (a timeout, an abort, a bad answer); the connection is reset. */
  abandon(error: Error): void;
}

/** How often silence and idle connections are looked at; a silence bound fires between it and ~3 ticks late. */
const TICK_MS = 250;

export function coded(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

class UpstreamTimeout extends Error {
  override readonly name = "TimeoutError";
}

// ---- origins and their pools

export class Origin {
  readonly idle: Conn[] = [];
  constructor(
    /** Where connections go: the origin, or its proxy. */
    readonly hostname: string,
    readonly port: number,
    readonly tls: { serverName: string } | undefined,
    /** `host: ...\r\n`, with the proxy's credentials for a request sent through an http proxy. */
    readonly hostLine: string,
    /** Before the path in the request line: "" or, through an http proxy, `http://host:port` (absolute form). */
    readonly target: string,
    /** The CONNECT request of an https origin reached through a proxy. */
    readonly tunnel: string | undefined,
    readonly maxIdle: number,
    readonly idleMs: number,
  ) {}
}

const origins = new Map<string, Origin>();

export function originFor(key: string, pool: PoolSettings): Origin {
  let origin = origins.get(key);
  if (origin !== undefined) return origin;
  let url: URL;
  try {
    url = new URL(key);
  } catch {
    throw coded("ERR_INVALID_URL", "the upstream URL is not a URL");
  }
  const https = url.protocol === "https:";
  if (!https && url.protocol !== "http:") throw coded("ERR_INVALID_URL", "the upstream URL is neither http nor https");
  const hostname = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  const port = url.port === "" ? (https ? 443 : 80) : Number(url.port);
  // Certificates are verified (Bun's root store, plus NODE_EXTRA_CA_CERTS) against serverName, also sent as SNI.
  const tls = https ? { serverName: hostname } : undefined;
  const idleMs = pool.maxIdlePerHost > 0 ? pool.idleTimeoutSecs * 1000 : 0;
  const proxy = proxyFor(https, hostname, port);
  const hostLine = `host: ${url.host}\r\n`;
  if (proxy === undefined) origin = new Origin(hostname, port, tls, hostLine, "", undefined, pool.maxIdlePerHost, idleMs);
  else if (https) origin = new Origin(proxy.hostname, proxy.port, tls, hostLine, "", connectRequest(`${url.hostname}:${port}`, proxy), pool.maxIdlePerHost, idleMs);
  else origin = new Origin(proxy.hostname, proxy.port, undefined, hostLine + proxy.authorization, `http://${url.host}`, undefined, pool.maxIdlePerHost, idleMs);
  origins.set(key, origin);
  return origin;
}

// ---- connections, and the one sweep that bounds silence and idleness

export class Conn {
  socket: Socket<Conn> | undefined = undefined;
  /** The exchange the connection carries now; none while idle or once given up. */
  ex: Carried | undefined = undefined;
  /** `clock` when a byte last moved (or the connection went idle). */
  lastActive = clock;
  /** Answers completed on it: a reused connection may be one the server has already closed. */
  used = 0;
  idle = false;
  /** Given up (timed out, aborted, not reusable): closed as soon as it opens. */
  dead = false;
  /** Why the TLS handshake or the proxy's tunnel failed, for the close that follows. */
  error: Error | undefined = undefined;
  /** Through a proxy's tunnel: the CONNECT answer as far as it came, and whether the tunnel is open. */
  tunnelHead: Buffer | undefined = undefined;
  tunnelled = false;
  constructor(readonly origin: Origin) {}
}

/** A coarse clock: performance.now() at the last sweep. Reads stamp it; the sweep allows a tick for its lag. */
export let clock = performance.now();
let sweeper: Timer | undefined;
/** Every connection open or opening: the sweep looks at each. */
const live = new Set<Conn>();

function track(conn: Conn): void {
  live.add(conn);
  if (sweeper !== undefined) return;
  clock = performance.now();
  sweeper = setInterval(sweep, TICK_MS);
  sweeper.unref();
}

function untrack(conn: Conn): void {
  conn.dead = true;
  if (!live.delete(conn) || live.size > 0 || sweeper === undefined) return;
  clearInterval(sweeper);
  sweeper = undefined;
}

function sweep(): void {
  clock = performance.now();
  for (const conn of live) {
    const ex = conn.ex;
    if (ex !== undefined) {
      if (ex.signal.aborted) ex.clientLeft();
      // A paused body is the client's slowness, not the upstream's silence.
      else if (!ex.paused && clock - conn.lastActive > ex.timeoutMs + TICK_MS) ex.abandon(new UpstreamTimeout(`the upstream stayed silent for ${ex.timeoutMs} ms`));
    } else if (conn.idle && clock - conn.lastActive > conn.origin.idleMs + TICK_MS) close(conn);
  }
}

/** Opens a new connection to carry `ex`; it writes the request once the connection is ready. */
export function connect(origin: Origin, ex: Carried): Conn {
  const conn = new Conn(origin);
  conn.ex = ex;
  track(conn);
  if (origin.tunnel !== undefined) void Bun.connect<Conn>({ hostname: origin.hostname, port: origin.port, data: conn, socket: TUNNEL_HANDLERS });
  else void Bun.connect<Conn>({ hostname: origin.hostname, port: origin.port, tls: origin.tls, data: conn, socket: HANDLERS });
  return conn;
}

/** Closes a connection no exchange will use (gracefully: the server sees a FIN). */
function close(conn: Conn): void {
  dropIdle(conn);
  conn.ex = undefined;
  untrack(conn);
  conn.socket?.end();
}

/** Closes a connection at once (an abort, a timeout, a bad answer): the server sees a reset and stops. */
export function destroy(conn: Conn): void {
  dropIdle(conn);
  conn.ex = undefined;
  untrack(conn);
  conn.socket?.terminate();
}

function dropIdle(conn: Conn): void {
  if (!conn.idle) return;
  conn.idle = false;
  const idle = conn.origin.idle;
  const at = idle.indexOf(conn);
  if (at !== -1) idle.splice(at, 1);
}

/** An answer ended whole: the connection goes back to its pool (LIFO) if it may carry another request. */
export function release(conn: Conn, reusable: boolean): void {
  conn.ex = undefined;
  conn.used++;
  const origin = conn.origin;
  if (!reusable || origin.idleMs <= 0 || origin.idle.length >= origin.maxIdle) return close(conn);
  conn.idle = true;
  conn.lastActive = clock;
  origin.idle.push(conn);
}

function ready(conn: Conn): void {
  const ex = conn.ex;
  if (ex === undefined || conn.dead) return void conn.socket?.terminate();
  ex.write(conn);
}

const HANDLERS: SocketHandler<Conn> = {
  open(socket) {
    const conn = socket.data;
    conn.socket = socket;
    // A TLS connection is ready only after its handshake (a write before it is dropped).
    if (conn.origin.tls === undefined) ready(conn);
  },
  handshake(socket, success, error) {
    const conn = socket.data;
    if (success) return ready(conn);
    conn.error = error ?? coded("ERR_TLS_HANDSHAKE", "TLS handshake failed");
    socket.terminate();
  },
  connectError(socket, error) {
    const conn = socket.data;
    const ex = conn.ex;
    conn.ex = undefined;
    untrack(conn);
    if (ex !== undefined) ex.closed(conn, error);
  },
  data(socket, data) {
    const conn = socket.data;
    const ex = conn.ex;
    // Bytes on an idle connection answer nothing that was asked: it cannot carry a request any more.
    if (ex === undefined) return destroy(conn);
    conn.lastActive = clock;
    try {
      ex.received(conn, data);
    } catch (error) {
      // A sink that threw: the body is given up like a cancelled one.
      ex.abandon(error instanceof Error ? error : new Error(String(error)));
    }
  },
  drain(socket) {
    const conn = socket.data;
    conn.lastActive = clock;
    conn.ex?.write(conn);
  },
  close(socket, error) {
    const conn = socket.data;
    dropIdle(conn);
    untrack(conn);
    const ex = conn.ex;
    conn.ex = undefined;
    if (ex !== undefined) ex.closed(conn, conn.error ?? error);
  },
  error(socket, error) {
    socket.data.error ??= error;
  },
};

/**
 * A connection to a proxy that is to become a tunnel: CONNECT, its answer, then TLS to the origin over the
 * same socket (upgradeTLS), whose events go to HANDLERS. The raw socket goes on hearing the ciphertext,
 * which the TLS socket reads itself.
 */
const TUNNEL_HANDLERS: SocketHandler<Conn> = {
  open(socket) {
    const conn = socket.data;
    conn.socket = socket;
    if (conn.dead || conn.ex === undefined) return socket.terminate();
    socket.write(conn.origin.tunnel!);
  },
  data(socket, data) {
    const conn = socket.data;
    if (conn.tunnelled) return;
    conn.lastActive = clock;
    const buf = conn.tunnelHead === undefined ? data : Buffer.concat([conn.tunnelHead, data]);
    const end = buf.indexOf("\r\n\r\n");
    if (end === -1 || end > MAX_HEAD_BYTES) {
      if (buf.byteLength <= MAX_HEAD_BYTES) conn.tunnelHead = buf;
      else tunnelFailed(socket, badResponse("the proxy's answer to CONNECT is too large"));
      return;
    }
    conn.tunnelHead = undefined;
    const head = parseHead(buf.toString("latin1", 0, end));
    if (head instanceof Error) return tunnelFailed(socket, head);
    if (head.status < 200 || head.status > 299) return tunnelFailed(socket, coded("EPROXY", `the proxy answered CONNECT with ${head.status}`));
    conn.tunnelled = true;
    socket.upgradeTLS<Conn>({ data: conn, tls: conn.origin.tls!, socket: HANDLERS });
  },
  close(socket, error) {
    if (!socket.data.tunnelled) HANDLERS.close!(socket, error);
  },
  connectError(socket, error) {
    HANDLERS.connectError!(socket, error);
  },
  error(socket, error) {
    socket.data.error ??= error;
  },
};

function tunnelFailed(socket: Socket<Conn>, error: Error): void {
  socket.data.error = error;
  socket.terminate();
}
