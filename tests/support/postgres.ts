// A real PostgreSQL server for the replica tests, from Debian's packages: initdb and the server run as the
// unprivileged `postgres` user (as root; as anyone else, as that user) in a temp dir, on a free loopback
// port, with password (SCRAM) authentication over TCP, and are stopped by PID. Installed with apt-get when
// missing (the machines reach Debian's mirror), once per run, within a bound.
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { afterAll, beforeAll } from "bun:test";
import { aptInstall } from "./apt.ts";
import { tempDir } from "./temp.ts";
import { until } from "./until.ts";

const PG_ROOT = "/usr/lib/postgresql";

let installing: Promise<string> | undefined;

/** The directory of Debian's PostgreSQL binaries (initdb, postgres), installing `postgresql` when missing. */
export function ensurePostgres(): Promise<string> {
  const found = binDir();
  if (found) return Promise.resolve(found);
  installing ??= install();
  return installing;
}

/** The newest installed major version's bin directory. */
function binDir(): string | undefined {
  if (!existsSync(PG_ROOT)) return undefined;
  const versions = readdirSync(PG_ROOT)
    .filter((v) => existsSync(join(PG_ROOT, v, "bin", "initdb")) && existsSync(join(PG_ROOT, v, "bin", "postgres")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(PG_ROOT, versions[0], "bin");
}

async function install(): Promise<string> {
  await aptInstall("postgresql");
  const found = binDir();
  if (!found) throw new Error(`apt-get installed postgresql but no initdb is under ${PG_ROOT}`);
  return found;
}

export interface RunningPostgres {
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly password: string;
  /** `postgres://user:password@127.0.0.1:port/<database>` */
  url(database?: string): string;
  /** Runs SQL as the superuser through psql-free means: a one-off connection of Bun's client. */
  sql(text: string, database?: string): Promise<unknown[]>;
  /** A fresh, empty database. */
  createDatabase(name: string): Promise<string>;
  /** Stops the server (fast shutdown); start() brings it back on the same port and data. */
  stop(): Promise<void>;
  start(): Promise<void>;
}

/** Whether this process must drop to the `postgres` user (initdb and the server refuse to run as root). */
const asRoot = () => process.getuid?.() === 0;
const runAs = (args: string[]) => (asRoot() ? ["runuser", "-u", "postgres", "--", ...args] : args);

async function freePort(): Promise<number> {
  const server = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = server.port;
  server.stop(true);
  return port;
}

/** The running server's PID, from the first line of its postmaster.pid. */
function postmasterPid(data: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(data, "postmaster.pid"), "utf8").split("\n")[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Already gone.
  }
}

async function run(args: string[], what: string): Promise<void> {
  const proc = Bun.spawn(runAs(args), { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const timer = setTimeout(() => proc.kill("SIGKILL"), 60_000);
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  if (code !== 0) throw new Error(`${what} failed (${code}): ${(err || out).slice(-2000)}`);
}

/**
 * A new cluster in `dir` (made and handed to the postgres user), its superuser `gateway` with a random
 * password, listening on 127.0.0.1 only (its Unix socket in `dir`), fsync off (a test server).
 */
export async function startPostgres(opts: { dir: string }): Promise<RunningPostgres> {
  const bin = await ensurePostgres();
  const data = join(opts.dir, "data");
  mkdirSync(data, { recursive: true });
  const user = "gateway";
  const password = `pw-${crypto.randomUUID()}`;
  const pwfile = join(opts.dir, "pwfile");
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  if (asRoot()) {
    const uid = Number(Bun.spawnSync(["id", "-u", "postgres"]).stdout.toString().trim());
    const gid = Number(Bun.spawnSync(["id", "-g", "postgres"]).stdout.toString().trim());
    for (const path of [opts.dir, data, pwfile]) chownSync(path, uid, gid);
  }
  await run([join(bin, "initdb"), "-D", data, "-U", user, `--pwfile=${pwfile}`, "--auth-host=scram-sha-256", "--auth-local=scram-sha-256", "-E", "UTF8", "--no-sync"], "initdb");
  const port = await freePort();
  let proc: Subprocess<"ignore", "pipe", "pipe"> | undefined;
  let log = "";

  const start = async () => {
    proc = Bun.spawn(runAs([join(bin, "postgres"), "-D", data, "-p", String(port), "-h", "127.0.0.1", "-k", opts.dir, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=200"]), { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const running = proc;
    void (async () => {
      for await (const chunk of running.stderr) log = (log + new TextDecoder().decode(chunk)).slice(-8000);
    })();
    await until(async () => {
      if (running.exitCode !== null) throw new Error(`postgres exited (${running.exitCode}): ${log}`);
      // Waiting for postgres to accept connections.
      try {
        await query("SELECT 1");
        return true;
      } catch {
        return false;
      }
    }, 30_000, 100);
  };
  const url = (database = "postgres") => `postgres://${user}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
  const query = async (text: string, database?: string): Promise<unknown[]> => {
    const client = new Bun.SQL(url(database), { max: 1, connectionTimeout: 5 });
    try {
      return [...(await client.unsafe(text))];
    } finally {
      await client.close();
    }
  };
  const stop = async () => {
    const running = proc;
    proc = undefined;
    if (!running || running.exitCode !== null) return;
    // Fast shutdown (clients disconnected, no waiting for them), sent to the postmaster itself: runuser,
    // in between as root, does not pass signals on.
    const postmaster = postmasterPid(data) ?? running.pid;
    signal(postmaster, "SIGINT");
    const timer = setTimeout(() => (signal(postmaster, "SIGKILL"), running.kill("SIGKILL")), 15_000);
    await running.exited;
    clearTimeout(timer);
  };
  await start();
  return {
    host: "127.0.0.1",
    port,
    user,
    password,
    url,
    sql: query,
    async createDatabase(name: string) {
      if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a plain database name: ${name}`);
      await query(`CREATE DATABASE ${name}`);
      return url(name);
    },
    stop,
    start,
  };
}

/** One server for a test file: started before its tests (installing PostgreSQL if need be), stopped after. */
export function usePostgres(prefix: string): () => RunningPostgres {
  let pg: RunningPostgres | undefined;
  beforeAll(async () => {
    pg = await startPostgres({ dir: tempDir(prefix) });
  }, 11 * 60_000);
  afterAll(async () => {
    await pg?.stop();
  });
  return () => {
    if (!pg) throw new Error("the PostgreSQL server did not start (see beforeAll)");
    return pg;
  };
}

/** A replica's config for the e2e tests: a mock model, virtual keys, an admin token; the URL from GW_PG_URL. */
export const replicaConfig = (poolSize: number) => `listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
store: {module: postgres, settings: {url: {env: GW_PG_URL}, pool_size: ${poolSize}}}
providers:
  local: {protocol: mock}
models:
  mock-1: {provider: local}
auth:
  chain: [keys]
  signing_key: {env: GW_SIGNING_KEY}
  admin_auth: [admin-tokens]
  admin_tokens: [{token: {env: GW_ADMIN}}]
`;
