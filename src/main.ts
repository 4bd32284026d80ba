// Boot: parse the command line, load the config, open the store, start both listeners, and drain on
// SIGTERM/SIGINT. Every failure before the listeners are up stops the process with a named cause.
import type * as ChildProcess from "node:child_process";
import { existsSync } from "node:fs";
import { resolve as resolvePath } from "node:path";
import type { Server } from "bun";
import { reloadOnHangup } from "./admin/reload-signal.ts";
import { buildApps } from "./app.ts";
import { CliError, HELP, parseCli, type CliOptions } from "./cli.ts";
import { embeddedDefaultText } from "./config/default.ts";
import { ConfigLifecycle, loadBoot, type ConfigTree } from "./config/lifecycle.ts";
import type { FleetConfig } from "./config/fleet.ts";
import type { SpoolingLedger } from "./store/postgres/spool.ts";
import type { StoreSet } from "./store/set.ts";
import { overrideTree } from "./config/listen.ts";
import type { Concealed } from "./config/interpolate.ts";
import { locateConfig, parseConfigText, type ConfigSource, type LoadResult } from "./config/load.ts";
import { overlaySettings, readOverlay, stageOverlay, type OverlaySettings } from "./config/overlay.ts";
import { ConfigHolder, type Snapshot } from "./config/snapshot.ts";
import { listenerAddress, startListener } from "./http/serve.ts";
import { SqliteStore, StoreOpenError } from "./store/sqlite.ts";
import { sqliteStores } from "./store/set.ts";
import type { AuditStore } from "./store/audit.ts";
import { markRunning as markRunningIn, markStopped as markStoppedIn, markUnsaved as markUnsavedIn, takeUnsaved as takeUnsavedIn } from "./store/ledger.ts";
import { openStore, type OpenedStore } from "./store/open.ts";
import type { ReplicaRegistry } from "./store/postgres/replicas.ts";
import type { ReplicaDirectory } from "./admin/replicas.ts";
import type { StoreStatus } from "./admin/views.ts";
import { METERING_AT_RISK_MS } from "./governance/metering.ts";
import { verifyAudit } from "./governance/audit.ts";
import { createLogger, type Logger } from "./telemetry/logger.ts";
import type { HookModuleLoader } from "./hooks/types.ts";
import { HooksNotLoaded } from "./hooks/runtime.ts";
import { VERSION, VERSION_LINE } from "./version.ts";

const env = process.env as Record<string, string | undefined>;
/** Epoch seconds of process start (performance.now() counts from it): InfoView.started_at. */
const startedAt = Math.floor((Date.now() - performance.now()) / 1000);

function out(text: string): void {
  process.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
}

async function main(argv: readonly string[]): Promise<number> {
  let cli: CliOptions;
  try {
    cli = parseCli(argv, env);
  } catch (error) {
    if (!(error instanceof CliError)) throw error;
    process.stderr.write(`gateway: ${error.message}\nRun gateway --help for the options.\n`);
    return 2;
  }
  if (cli.help) return out(HELP), 0;
  if (cli.version) return out(VERSION_LINE), 0;
  if (cli.printDefaultConfig) return out(embeddedDefaultText(env)), 0;

  const located = locateConfig(cli.config, env);
  const source = "error" in located ? cli.config! : located.source;
  const boot = "error" in located ? { result: { ok: false, errors: [located.error] } as LoadResult, base: {}, overlay: {}, settings: undefined, concealed: undefined, commandLine: {} } : bootConfig(located, cli);
  const result = boot.result;
  if (cli.check) return check(result, source);
  if (cli.verifyAudit) return verifyAuditCommand(result, source);

  const logger = createLogger({ level: cli.logLevel, format: cli.logFormat });
  if (!result.ok) {
    for (const error of result.errors) logger.error("config error", { source, error });
    logger.error("config invalid; not starting", { source, errors: result.errors.length });
    return 1;
  }
  return run(result.snapshot, source, logger, new BootConfig(located as ConfigSource, boot.base, boot.overlay, boot.settings!, boot.concealed, boot.commandLine), cli.logFormat);
}

/** The file, the overlay over it (gateway.overlay.yaml, from PUT /config/settings), and the first snapshot. */
function bootConfig(located: ConfigSource, cli: CliOptions) {
  // One parse of the file: it names the overlay, and is then merged with it and validated.
  const parsed = parseConfigText(located.text, located.source, env);
  const settings = overlaySettings(parsed);
  // A fleet keeps its overlay in the store's config versions: the file's is not read.
  const fleet = parsed.ok && (parsed.tree as { store?: { module?: unknown } } | null)?.store?.module === "postgres";
  const overlay: ReturnType<typeof readOverlay> = fleet ? { ok: true, overlay: {} } : readOverlay(settings);
  if (!overlay.ok) return { result: { ok: false, errors: [overlay.error] } as LoadResult, base: {}, overlay: {}, settings, concealed: undefined, commandLine: {} };
  const commandLine = overrideTree(cli, overlay.overlay.listen ?? (parsed.ok ? (parsed.tree as ConfigTree | null)?.listen : undefined));
  const { result, base, concealed } = loadBoot(parsed, located.source, overlay.overlay, env, commandLine);
  return { result, base, overlay: overlay.overlay, settings, concealed, commandLine };
}

class BootConfig {
  constructor(
    readonly located: ConfigSource,
    readonly base: ConfigTree,
    readonly overlay: ConfigTree,
    readonly settings: OverlaySettings,
    readonly concealed: Concealed | undefined,
    readonly commandLine: ConfigTree,
  ) {}

  /** The config file booted from; undefined for the embedded default. */
  get file(): string | undefined {
    return this.located.source === "embedded default" ? undefined : this.located.source;
  }

  lifecycle(holder: ConfigHolder, fleet?: Pick<FleetConfig, "written">): ConfigLifecycle {
    const file = this.file;
    return new ConfigLifecycle({
      versionWritten: fleet?.written,
      holder,
      env,
      now: Date.now,
      bootBase: this.base,
      bootOverlay: this.overlay,
      bootConcealed: this.concealed,
      readFile: file === undefined ? undefined : () => readConfigFile(file),
      // A fleet keeps the overlay in its config versions, not in a file (replicas.md: config.overlay is not used).
      stageOverlay: fleet ? async () => ({ install: () => {}, discard: async () => {} }) : (overlay) => stageOverlay(this.settings.path, overlay),
      commandLine: this.commandLine,
    });
  }
}

function readConfigFile(path: string): { ok: true; text: string } | { ok: false; error: string } {
  const located = locateConfig(path, env);
  return "error" in located ? { ok: false, error: located.error } : { ok: true, text: located.text };
}

/** `--check`: plain lines for a person or a CI log, not JSON. */
function check(result: LoadResult, source: string): number {
  if (result.ok) {
    for (const warning of result.snapshot.warnings) process.stderr.write(`warning: ${warning}\n`);
    out(`config ok: ${source}`);
    return 0;
  }
  for (const error of result.errors) process.stderr.write(`${error}\n`);
  process.stderr.write(`${result.errors.length} error${result.errors.length === 1 ? "" : "s"} in ${source}\n`);
  return 1;
}

/** `--verify-audit`: the store's audit chain, checked end to end, as plain lines. */
async function verifyAuditCommand(result: LoadResult, source: string): Promise<number> {
  if (!result.ok) return check(result, source);
  if (result.snapshot.store.module === "postgres") return verifyFleetAudit(result.snapshot);
  const path = storePathOf(result.snapshot);
  // Verifying must not create the store it was asked about (an empty one would verify as intact).
  if (path === ":memory:" || !existsSync(path)) {
    const why = path === ":memory:" ? "keeps nothing between runs" : "does not exist";
    process.stderr.write(`store unavailable: store ${path} ${why}; there is no audit log to verify\n`);
    return 1;
  }
  let store: SqliteStore;
  try {
    store = SqliteStore.open(path);
  } catch (error) {
    if (!(error instanceof StoreOpenError)) throw error;
    process.stderr.write(`store unavailable: ${error.message}\n`);
    return 1;
  }
  try {
    return await reportAudit(sqliteStores(store).audit, `store ${path}`);
  } finally {
    await store.close();
  }
}

/** The chain checked end to end, as plain lines; `named` is how the store is named in an unreadable one. */
async function reportAudit(audit: AuditStore, named: string): Promise<number> {
  try {
    const verdict = await verifyAudit(audit);
    if (verdict.ok) return out(`audit log intact: ${verdict.checked} entries checked`), 0;
    process.stderr.write(`audit log broken at entry ${verdict.first_bad_seq}: ${verdict.reason} (${verdict.checked} entries before it are intact)\n`);
    return 1;
  } catch (error) {
    if (!isStoreError(error)) throw error;
    process.stderr.write(`store unreadable: ${named}: ${(error as Error).message}\n`);
    return 1;
  }
}

/** `--verify-audit` of a fleet: the one chain in its PostgreSQL, as any replica would read it. */
async function verifyFleetAudit(snapshot: Snapshot): Promise<number> {
  let opened: OpenedStore;
  try {
    opened = await openStore(snapshot.store, "", snapshot.auth.signingKey?.reveal());
  } catch (error) {
    if (!(error instanceof StoreOpenError)) throw error;
    process.stderr.write(`store unavailable: ${error.message}\n`);
    return 1;
  }
  try {
    return await reportAudit(opened.stores.audit, opened.label);
  } finally {
    await opened.stores.store.close().catch(() => undefined);
  }
}

/**
 * What reading the store at boot can throw: our own named refusal, sqlite's (a column or table it cannot
 * read), or PostgreSQL's (the database gone or refusing between the connect and the load).
 */
const isStoreError = (error: unknown) => error instanceof StoreOpenError || (error instanceof Error && (error.name === "SQLiteError" || error.name === "PostgresError"));

function storePathOf(snapshot: Snapshot): string {
  const configuredPath = snapshot.store.module === "sqlite" ? snapshot.store.path : "./gateway.db";
  return configuredPath === ":memory:" ? configuredPath : resolvePath(configuredPath);
}

async function run(snapshot: Snapshot, source: string, logger: Logger, boot: BootConfig, logFormat: "json" | "text"): Promise<number> {
  for (const warning of snapshot.warnings) logger.warn(warning, { source });
  // Loaded only when there is something to fetch: a boot without plugins pays nothing for them.
  if ((snapshot.config.plugins?.fetch ?? []).length > 0 && !(await (await import("./plugins/fetch.ts")).fetchAtBoot(snapshot.config, logger))) return 1;
  let opened: OpenedStore;
  try {
    opened = await openStore(snapshot.store, storePathOf(snapshot), snapshot.auth.signingKey?.reveal());
  } catch (error) {
    if (!(error instanceof StoreOpenError)) throw error;
    logger.error("store unavailable; not starting", { store: snapshot.store.module === "sqlite" ? storePathOf(snapshot) : snapshot.store.module, error: error.message });
    return 1;
  }
  const store = opened.stores.store;
  const storePath = opened.label;
  // A fleet's ledger goes through this replica's spool while the database is away (one live process per spool file).
  let spool: SpoolingLedger | undefined;
  try {
    spool = opened.spool?.({
      spooling: (error) => logger.warn("store unavailable: ledger write failed; metering spooled to disk", { store: storePath, spool: snapshot.store.module === "postgres" ? snapshot.store.spoolPath : undefined, error: error instanceof Error ? error.message : String(error) }),
      replayed: (batches, rows) => logger.warn("store available again: spooled metering written", { store: storePath, batches, rows }),
    });
  } catch (error) {
    if (!(error instanceof StoreOpenError)) throw error;
    logger.error("store unavailable; not starting", { store: storePath, error: error.message });
    await opened.stores.store.close().catch(() => undefined);
    return 1;
  }
  const stores: StoreSet = spool ? { ...opened.stores, ledger: spool } : opened.stores;
  // What an earlier run spooled is written before the ledger is read (usage restored at boot counts it).
  if (spool && spool.spooledRows > 0) await spool.replay().catch((error: unknown) => logger.warn("spooled metering not written yet; retried while serving", { store: storePath, error: error instanceof Error ? error.message : String(error) }));
  /** How a line names the store: `store <path>`, or the fleet's `store postgres (user@host:port/db)`. */
  const storeName = opened.single ? `store ${storePath}` : storePath;
  if (opened.created) logger.info(`creating new store at ${storePath}`, { store: storePath });
  // A fleet's store is shared: run state and unsaved rows are one process's facts, kept only in its own store.
  // A replica's run state is kept beside its spool (the shared store holds no one process's facts).
  const markRunning = opened.single ? markRunningIn : async () => spool?.markRunning() ?? { unclean: false, lastWrittenAt: null };
  const takeUnsaved = opened.single ? takeUnsavedIn : async () => 0;
  const markStopped = opened.single ? markStoppedIn : async () => spool?.markStopped();
  const markUnsaved = opened.single ? markUnsavedIn : async () => {};

  const holder = new ConfigHolder(snapshot);
  // A fleet's config is the fleet's newest version (or this file becomes its first); config.locked serves the file only.
  const versions = snapshot.config.config?.locked ? undefined : opened.stores.configVersions;
  let fleetConfig: FleetConfig | undefined;
  const lifecycle = boot.lifecycle(holder, versions && { written: (content) => fleetConfig!.written(content) });
  if (versions) {
    const { FleetConfig: Fleet, VersionNotLoaded } = await import("./config/fleet.ts");
    fleetConfig = new Fleet({ store: versions, lifecycle, env, logger });
    try {
      await fleetConfig.join();
    } catch (error) {
      if (!(error instanceof VersionNotLoaded) && !isStoreError(error)) throw error;
      logger.error("config unavailable; not starting", { store: storePath, error: (error as Error).message });
      await store.close().catch(() => undefined);
      return 1;
    }
  }
  const servers: Server<undefined>[] = [];
  let requestStop: (reason: string) => void = () => {};
  const restart = () => {
    restartRequested = true;
    requestStop("POST /restart");
  };
  let apps: Awaited<ReturnType<typeof buildApps>>;
  let stopListening: (() => Promise<void>) | undefined;
  // GET /replicas: filled in once the data listener's address is known.
  const replicas: ReplicaDirectory = { list: async () => [] };
  let registry: ReplicaRegistry | undefined;
  let metering: { readonly unavailable: boolean; readonly unsavedRows: number } | undefined;
  try {
    const previous = await markRunning(store);
    const unsaved = await takeUnsaved(store);
    if (previous.unclean) {
      const since = previous.lastWrittenAt === null ? "" : ` (requests that ended after ${new Date(previous.lastWrittenAt).toISOString()}, the last ledger write)`;
      // A stop while the store refused writes lost everything kept since then, not the crash window.
      if (unsaved > 0) logger.warn(`previous run stopped with ${unsaved} metering rows the store refused; their requests are missing from usage and limits${since}`, { store: storePath });
      else logger.warn(`previous run did not stop cleanly; up to ${METERING_AT_RISK_MS} ms of metering before it stopped may be missing${since}`, { store: storePath });
    }
    // Signed plugins (tar reader, ed25519) load on the first hook that names one: a static import cost every start ~2 ms.
    const hookLoader: HookModuleLoader = async (ref) => (await import("./plugins/index.ts")).hookModuleLoader(holder)(ref);
    const schemaVersion = await store.schemaVersion();
    const storeStatus = (): StoreStatus => ({
      module: store.module === "postgres" ? "postgres" : "sqlite",
      state: metering?.unavailable || registry?.failing ? "unavailable" : "ok",
      replica_id: opened.replicaId ?? null,
      schema_version: schemaVersion,
      spooled_rows: metering?.unsavedRows ?? 0,
    });
    apps = await buildApps({ holder, stores, fleet: opened.listen !== undefined, fleetConfig, replicas, storeStatus, logger, now: Date.now, startedAt, env, lifecycle, restart, hookLoader, logFormat });
    metering = apps.metering;
    const sync = apps.fleetSync;
    if (opened.listen && sync) {
      stopListening = await opened.listen((resources) => void sync.changed(resources), () => void sync.reconcile()).catch((error: unknown) => {
        throw new StoreOpenError(`cannot listen for the other replicas' changes: ${error instanceof Error ? error.message : String(error)}`);
      });
      sync.start();
    }
  } catch (error) {
    if (error instanceof HooksNotLoaded) {
      logger.error("hooks cannot be loaded; not starting", { source, error: error.message });
      await markStopped(store);
      await store.close();
      return 1;
    }
    // A stored row that does not parse, or a table sqlite cannot read: named in one line, not a stack trace.
    if (!isStoreError(error)) throw error;
    logger.error("store unreadable; not starting", { store: storePath, error: `${storeName}: ${(error as Error).message}` });
    await store.close().catch(() => undefined);
    return 1;
  }
  // Handlers go in before any listener exists, so a signal at any moment after this drains cleanly.
  const shutdown = shutdownOnSignals(servers, logger, async () => {
    // The ledger's last batch goes in before the store closes; then this run counts as a clean stop.
    apps.fleetSync?.stop();
    // Settled before the others may take this replica for gone and free its leases as spent.
    await opened.stores.limits?.drain();
    await registry?.stop();
    await Promise.all([apps.metering.flush(), apps.telemetry.close(), stopListening?.().catch(() => undefined)]);
    if (apps.metering.keptRows > 0) {
      logger.error("stopping with metering the store refused; these rows are lost", { rows: apps.metering.keptRows });
      await markUnsaved(store, apps.metering.keptRows);
    } else await markStopped(store);
    spool?.close();
    await store.close();
  }, () => (holder.current.config.limits?.shutdown_drain_secs ?? 30) * 1000, () => apps.telemetry.live.closeAll());
  requestStop = shutdown.stop;
  reloadOnHangup(apps.reloadFile, logger, boot.file, () => holder.current.version, shutdown.stopping);

  // Live settings are read from the current snapshot when used, not copied at boot.
  const security = () => holder.current.config.security ?? {};
  const planes = [
    ["data", snapshot.listeners.data, apps.data, () => security().max_body_bytes ?? 33554432],
    ["admin", snapshot.listeners.admin, apps.admin, () => security().admin_max_body_bytes ?? 8388608],
  ] as const;
  for (const [plane, settings, handlers, maxBodyBytes] of planes) {
    if (shutdown.stopping()) return shutdown.exit;
    try {
      servers.push(startListener({ settings, fetch: handlers.fetch, routes: handlers.routes, tooLarge: handlers.tooLarge, maxBodyBytes }));
    } catch (error) {
      logger.error(`cannot start the ${plane} listener; not starting`, { address: `${settings.hostname}:${settings.port}`, error: (error as Error).message });
      for (const server of servers) server.stop(true);
      await markStopped(store);
      await store.close();
      return 1;
    }
  }
  const dataAddress = listenerAddress(servers[0]!);
  // node:os only here, after the listeners: the boot imports no builtin every start does not use.
  const { hostname } = await import("node:os");
  if (opened.registry) {
    registry = opened.registry({ host: hostname(), listen: dataAddress, version: VERSION }, () => holder.current.version, (error) => logger.warn("replica heartbeat failed", { store: storePath, error: error instanceof Error ? error.message : String(error) }));
    const fleet = registry;
    try {
      await fleet.register();
    } catch (error) {
      logger.error("store unavailable; not starting", { store: storePath, error: `cannot register this replica: ${error instanceof Error ? error.message : String(error)}` });
      for (const server of servers) server.stop(true);
      await store.close().catch(() => undefined);
      return 1;
    }
    fleet.start();
    replicas.list = () => fleet.list();
  } else {
    replicas.list = async () => [{ id: "local", host: hostname(), listen: dataAddress, started_at: startedAt, last_seen: Math.floor(Date.now() / 1000), version: VERSION, config_version: holder.current.version, state: "up" }];
  }
  const stopProbes = apps.health.start();
  void shutdown.exit.then(stopProbes);
  logger.info("gateway started", {
    version: VERSION,
    data: listenerAddress(servers[0]!),
    admin: listenerAddress(servers[1]!),
    config: source,
    store: storePath,
    tls: snapshot.listeners.data.tls !== undefined,
    boot_ms: Math.round(performance.now()),
  });
  // The routers are not needed by the first requests; they are built once those have had their turn.
  // Then the JIT gets its normal tier-up thresholds back (the binary starts with them raised: build.ts).
  // The policy is restored whatever warming does: a binary left with raised thresholds stays slow for good.
  // The admin router is loaded by import(), so the policy waits for it: built under the normal policy,
  // Elysia's composition was compiled by the JIT and the idle process held ~5 MB more.
  setTimeout(() => {
    let warming: Promise<void>;
    try {
      warming = apps.warm();
    } catch {
      warming = Promise.resolve();
    }
    void warming.finally(() => Bun.unsafe.setJITPolicy(1));
  }, WARM_DELAY_MS).unref();
  return shutdown.exit;
}

/**
 * How long after the listeners are up the admin and data-plane routers are built (unless a request built
 * them first) and the JIT's normal policy is back.
 */
const WARM_DELAY_MS = 100;

/**
 * SIGTERM/SIGINT: end the admin event streams, stop accepting, let in-flight requests finish up to the
 * drain bound, close what is left, run `close`, resolve `exit` with 0. A second signal cuts open connections at once.
 */
function shutdownOnSignals(servers: readonly Server<undefined>[], logger: Logger, close: () => Promise<void>, drainMs: () => number, endStreams: () => void) {
  let stopping = false;
  let done: (code: number) => void = () => {};
  const exit = new Promise<number>((resolveExit) => (done = resolveExit));
  const onSignal = async (signal: string) => {
    if (stopping) {
      logger.warn("second signal: closing open connections now", { signal });
      for (const server of servers) server.stop(true);
      return;
    }
    stopping = true;
    // Admin event streams never end by themselves: a drain would wait its whole bound on them.
    endStreams();
    const boundMs = drainMs();
    logger.info("shutting down: draining in-flight requests", { signal, drain_secs: boundMs / 1000 });
    const drained = Promise.all(servers.map((s) => s.stop(false))).then(() => true);
    if (!(await Promise.race([drained, Bun.sleep(boundMs).then(() => false)]))) {
      logger.warn("drain bound reached; closing remaining connections", { drain_secs: boundMs / 1000 });
      await Promise.all(servers.map((s) => s.stop(true)));
    }
    await close();
    logger.info("stopped");
    done(0);
  };
  process.on("SIGTERM", () => void onSignal("SIGTERM"));
  process.on("SIGINT", () => void onSignal("SIGINT"));
  return { exit, stopping: () => stopping, stop: (reason: string) => void onSignal(reason) };
}

/** Set by POST /restart: once drained, the process starts its successor and exits. */
let restartRequested = false;

/**
 * The exit status of a drained POST /restart under systemd (INVOCATION_ID set): EX_TEMPFAIL, which the
 * shipped unit names in RestartForceExitStatus= (so Restart=on-failure still restarts it) and in
 * SuccessExitStatus= (so it is not logged as a failure). A stop by signal still exits 0 and stays stopped.
 */
const SYSTEMD_RESTART_STATUS = 75;

/**
 * The successor: the same binary, arguments, environment and working directory, sharing stdout and
 * stderr. Under systemd the unit starts it instead (exit status above), so no second copy races the one
 * systemd starts. Answers the exit status.
 */
function startSuccessor(): number {
  if (env.INVOCATION_ID) return SYSTEMD_RESTART_STATUS;
  // Loaded here, on a restart only: importing node:child_process cost every start ~0.5 ms.
  const { spawn } = require("node:child_process") as typeof ChildProcess;
  const child = spawn(process.execPath, Bun.argv.slice(2), { detached: true, stdio: ["ignore", "inherit", "inherit"], env: process.env, cwd: process.cwd() });
  child.unref();
  return 0;
}

main(Bun.argv.slice(2)).then(
  (code) => {
    process.exit(restartRequested && code === 0 ? startSuccessor() : code);
  },
  (error) => {
    createLogger().error("fatal error", { error });
    process.exit(1);
  },
);
