// SIGHUP re-reads the config file (`systemctl reload`, `kill -HUP`): the same audited change as POST
// /config/reload, under the principal `signal:SIGHUP`. A file that does not load changes nothing: each
// error is logged with its path and the process keeps serving the config it has.
import type { Refused } from "../config/lifecycle.ts";
import type { Snapshot } from "../config/snapshot.ts";
import type { Logger } from "../telemetry/logger.ts";

export const HANGUP_PRINCIPAL = "signal:SIGHUP";

export type ReloadFile = (principal: string, refused: (r: Refused) => void) => Promise<{ snapshot: Snapshot }>;

/**
 * `file` is the config file the process booted from; undefined for the embedded default, where there is
 * nothing to re-read. `current` is the version still served after a refusal; `stopping` skips a signal
 * that arrives while the process drains (the store is about to close).
 */
export function reloadOnHangup(reload: ReloadFile, logger: Logger, file: string | undefined, current: () => number, stopping: () => boolean): void {
  // Windows has no SIGHUP; its console-close event must keep its default (the process ends).
  if (process.platform === "win32") return;
  const fields = { signal: "SIGHUP", config: file ?? "embedded default" };
  const onHangup = async () => {
    if (stopping()) return logger.warn("SIGHUP ignored: the gateway is shutting down", fields);
    if (file === undefined) return logger.warn("SIGHUP: no config file to reload (running the embedded default); start with --config FILE to reload one", fields);
    let errors: readonly string[] | undefined;
    try {
      const { snapshot } = await reload(HANGUP_PRINCIPAL, (r) => (errors = r.errors ?? [r.message]));
      logger.info("config reloaded", { ...fields, config_version: snapshot.version });
    } catch (error) {
      for (const message of errors ?? [(error as Error).message]) logger.error("config reload error", { ...fields, error: message });
      logger.error("config reload refused; still serving the running config", { ...fields, config_version: current(), errors: errors?.length ?? 1 });
    }
  };
  process.on("SIGHUP", () => void onHangup());
}
