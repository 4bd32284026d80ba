// Boot: parse the command line, load the config, open the store, start both listeners, and drain on
// SIGTERM/SIGINT. Every failure before the listeners are up stops the process with a named cause.
import { resolve as resolvePath } from "node:path";
import type { Server } from "bun";
import { buildApps } from "./app.ts";
import { CliError, HELP, parseCli } from "./cli.ts";
import { embeddedDefaultText } from "./config/default.ts";
import { loadConfigText, locateConfig } from "./config/load.ts";
import { ConfigHolder } from "./config/snapshot.ts";
import { listenerAddress, startListener } from "./http/serve.ts";
import { SqliteStore, StoreOpenError } from "./store/sqlite.ts";
import { createLogger, type Logger } from "./telemetry/logger.ts";
import { VERSION } from "./version.ts";

const env = process.env as Record<string, string | undefined>;

function out(text: string): void {
  process.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
}

async function main(argv: readonly string[]): Promise<number> {
  let cli;
  try {
    cli = parseCli(argv, env);
  } catch (error) {
    if (!(error instanceof CliError)) throw error;
    process.stderr.write(`gateway: ${error.message}\nRun gateway --help for the options.\n`);
    return 2;
  }
  if (cli.help) return out(HELP), 0;
  if (cli.version) return out(`gateway ${VERSION}`), 0;
  if (cli.printDefaultConfig) return out(embeddedDefaultText(env)), 0;

  const logger = createLogger({ level: cli.logLevel });
  const located = locateConfig(cli.config, env);
  const result = "error" in located ? { ok: false as const, errors: [located.error] } : loadConfigText(located.text, located.source, { env });
  const source = "error" in located ? cli.config! : located.source;

  if (cli.check) {
    if (result.ok) {
      for (const warning of result.snapshot.warnings) process.stderr.write(`warning: ${warning}\n`);
      out(`config ok: ${source}`);
      return 0;
    }
    for (const error of result.errors) process.stderr.write(`${error}\n`);
    process.stderr.write(`${result.errors.length} error${result.errors.length === 1 ? "" : "s"} in ${source}\n`);
    return 1;
  }
  if (!result.ok) {
    for (const error of result.errors) logger.error("config error", { source, error });
    logger.error("config invalid; not starting", { source, errors: result.errors.length });
    return 1;
  }
  const snapshot = result.snapshot;
  for (const warning of snapshot.warnings) logger.warn(warning, { source });

  const storeSettings = snapshot.config.store?.settings?.path ?? "./gateway.db";
  const storePath = storeSettings === ":memory:" ? storeSettings : resolvePath(storeSettings);
  let store: SqliteStore;
  try {
    store = SqliteStore.open(storePath);
  } catch (error) {
    if (!(error instanceof StoreOpenError)) throw error;
    logger.error("store unavailable; not starting", { error: error.message });
    return 1;
  }

  const holder = new ConfigHolder(snapshot);
  const startedAt = Math.floor(Date.now() / 1000);
  const apps = buildApps({ holder, store, logger, now: Date.now, startedAt, env });
  const servers: Server<undefined>[] = [];
  // Live settings are read from the current snapshot when used, not copied at boot.
  const security = () => holder.current.config.security ?? {};

  // Handlers go in before any listener exists, so a signal at any moment after this drains cleanly.
  let stopping = false;
  let stopped: (code: number) => void = () => {};
  const exit = new Promise<number>((resolveExit) => (stopped = resolveExit));
  const shutdown = async (signal: string) => {
    if (stopping) {
      logger.warn("second signal: closing open connections now", { signal });
      for (const server of servers) server.stop(true);
      return;
    }
    stopping = true;
    const drainMs = (holder.current.config.limits?.shutdown_drain_secs ?? 30) * 1000;
    logger.info("shutting down: draining in-flight requests", { signal, drain_secs: drainMs / 1000 });
    await drain(servers, drainMs, logger);
    await store.close();
    logger.info("stopped");
    stopped(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));

  for (const [plane, settings, fetch, maxBodyBytes] of [
    ["data", snapshot.listeners.data, apps.data, () => security().max_body_bytes ?? 33554432],
    ["admin", snapshot.listeners.admin, apps.admin, () => security().admin_max_body_bytes ?? 8388608],
  ] as const) {
    if (stopping) break;
    try {
      servers.push(startListener({ settings, fetch, maxBodyBytes }));
    } catch (error) {
      logger.error(`cannot start the ${plane} listener; not starting`, { address: `${settings.hostname}:${settings.port}`, error: (error as Error).message });
      for (const server of servers) server.stop(true);
      await store.close();
      return 1;
    }
  }
  if (!stopping) {
    const [data, admin] = servers as [Server<undefined>, Server<undefined>];
    logger.info("gateway started", {
      version: VERSION,
      data: listenerAddress(data),
      admin: listenerAddress(admin),
      config: source,
      store: storePath,
      tls: snapshot.listeners.data.tls !== undefined,
      boot_ms: Math.round(performance.now()),
    });
  }
  return exit;
}

/** Stop accepting, let in-flight requests finish up to the bound, then close what is left. */
async function drain(servers: readonly Server<undefined>[], boundMs: number, logger: Logger): Promise<void> {
  const drained = Promise.all(servers.map((s) => s.stop(false))).then(() => true);
  const timedOut = Bun.sleep(boundMs).then(() => false);
  if (!(await Promise.race([drained, timedOut]))) {
    logger.warn("drain bound reached; closing remaining connections", { drain_secs: boundMs / 1000 });
    await Promise.all(servers.map((s) => s.stop(true)));
  }
}

main(Bun.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    createLogger().error("fatal error", { error });
    process.exit(1);
  },
);
