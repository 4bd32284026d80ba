// Command-line parsing and the texts the binary prints for --help and --version.
import type * as NodeUtil from "node:util";
import { parseListenAddress } from "./config/listen.ts";
import { LOG_LEVELS, type LogLevel } from "./telemetry/logger.ts";
import { VERSION } from "./version.ts";

export interface CliOptions {
  readonly config: string | undefined;
  readonly check: boolean;
  readonly verifyAudit: boolean;
  readonly printDefaultConfig: boolean;
  readonly version: boolean;
  readonly help: boolean;
  readonly logLevel: LogLevel;
  /** `text`: readable log lines and an access line per model request, for a terminal. */
  readonly logFormat: "json" | "text";
  /** The data-plane address: --listen, else $GATEWAY_LISTEN; over the config's `listen`. */
  readonly listen: string | undefined;
  /** --admin-listen, else $GATEWAY_ADMIN_LISTEN; over the config's `admin_listen`. */
  readonly adminListen: string | undefined;
  /** --port: the data plane's port, on the host of the address otherwise in force. */
  readonly port: number | undefined;
}

export const HELP = `gateway ${VERSION}: one binary between AI clients and model providers

Usage: gateway [options]

Options:
  --config PATH            config file (default: ./gateway.yaml if present, else the embedded default)
  --check                  validate the config and exit: 0 when valid, 1 listing every error
  --verify-audit           check the audit log's hash chain in the config's store, and its
                           head anchor (<store>.audit-head), and exit: 0 when intact, 1 naming
                           the first broken entry (altered, missing, reordered or truncated)
  --print-default-config   print the embedded default config and exit
  --listen HOST:PORT       data-plane address (default: $GATEWAY_LISTEN, else the config's listen)
  --admin-listen HOST:PORT admin-plane address (default: $GATEWAY_ADMIN_LISTEN, else admin_listen)
  --port N                 data-plane port, on the host --listen, $GATEWAY_LISTEN or listen names
                           (else 127.0.0.1). Port 0 picks a free port; the "gateway started" log
                           line names the one bound. A flag beats its variable, which beats the
                           config file; POST /config/reload and /config/apply keep them
  --log-level LEVEL        debug | info | warn | error (default: info, or $GATEWAY_LOG_LEVEL)
  --log-format FORMAT      json | text (default: json, or $GATEWAY_LOG_FORMAT); text writes readable
                           lines and one access line per model request
  --version                print the version, the commit and target it was built from, and exit
  --help                   print this help and exit

Logs are JSON lines on stderr (text lines with --log-format text). SIGTERM or SIGINT drains in-flight requests, then exits 0.
Docs: README.md and docs/ in the source tree.
`;

export class CliError extends Error {}

const OPTIONS = {
  config: { type: "string" },
  check: { type: "boolean" },
  "verify-audit": { type: "boolean" },
  "print-default-config": { type: "boolean" },
  "log-level": { type: "string" },
  "log-format": { type: "string" },
  listen: { type: "string" },
  "admin-listen": { type: "string" },
  port: { type: "string" },
  version: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;
type Values = { -readonly [K in keyof typeof OPTIONS]?: (typeof OPTIONS)[K]["type"] extends "string" ? string : boolean };

/** The command line, checked. `full`: always through node:util's parseArgs (the tests hold the two ways to the same result). */
export function parseCli(argv: readonly string[], env: Readonly<Record<string, string | undefined>>, options: { full?: boolean } = {}): CliOptions {
  const values = (!options.full && plainArgs(argv)) || parsedArgs(argv);
  const logLevel = values["log-level"] ?? env.GATEWAY_LOG_LEVEL ?? "info";
  if (!(LOG_LEVELS as string[]).includes(logLevel)) throw new CliError(`unknown log level ${JSON.stringify(logLevel)} (one of ${LOG_LEVELS.join(", ")})`);
  const logFormat = values["log-format"] ?? env.GATEWAY_LOG_FORMAT ?? "json";
  if (logFormat !== "json" && logFormat !== "text") throw new CliError(`unknown log format ${JSON.stringify(logFormat)} (json or text)`);
  if (values.config === "") throw new CliError("--config needs a path");
  if (values.listen !== undefined && values.port !== undefined) throw new CliError("--listen and --port both set the data-plane address: give one");
  return {
    config: values.config,
    check: values.check ?? false,
    verifyAudit: values["verify-audit"] ?? false,
    printDefaultConfig: values["print-default-config"] ?? false,
    version: values.version ?? false,
    help: values.help ?? false,
    logLevel: logLevel as LogLevel,
    logFormat,
    listen: address(values.listen, "--listen", env.GATEWAY_LISTEN, "GATEWAY_LISTEN"),
    adminListen: address(values["admin-listen"], "--admin-listen", env.GATEWAY_ADMIN_LISTEN, "GATEWAY_ADMIN_LISTEN"),
    port: values.port === undefined ? undefined : portOf(values.port),
  };
}

/** The flag's address, else the variable's (an empty variable is unset), checked as the config's are. */
function address(flag: string | undefined, flagName: string, variable: string | undefined, variableName: string): string | undefined {
  const value = flag ?? (variable || undefined);
  if (value === undefined) return undefined;
  const parts = parseListenAddress(value);
  if (!("error" in parts)) return value;
  // As in config errors, a value from the environment is named by its variable, never quoted.
  throw new CliError(flag !== undefined ? `${flagName}: ${parts.error}, got ${JSON.stringify(value)}` : `${variableName}: ${parts.error}, got the value of \${${variableName}} (not shown)`);
}

function portOf(value: string): number {
  const parts = parseListenAddress(`:${value}`);
  if ("error" in parts) throw new CliError(`--port: expected a port number 0-65535, got ${JSON.stringify(value)}`);
  return parts.port;
}

/**
 * The argument lists of nearly every start (`--config PATH`, `--check`, ...), read without node:util,
 * whose import cost every start ~0.6 ms. Anything else (`-h`, `--name=value`, an unknown option, a
 * value starting with `-`, a positional) is undefined here and goes to parseArgs, which names its errors.
 */
function plainArgs(argv: readonly string[]): Values | undefined {
  const values: Record<string, string | boolean> = {};
  for (let i = 0; i < argv.length; i++) {
    const name = argv[i]!.startsWith("--") ? argv[i]!.slice(2) : "";
    if (!Object.hasOwn(OPTIONS, name)) return undefined;
    if (OPTIONS[name as keyof typeof OPTIONS].type === "boolean") {
      values[name] = true;
      continue;
    }
    const value = argv[i + 1];
    if (value === undefined || value.startsWith("-")) return undefined;
    values[name] = value;
    i++;
  }
  return values as Values;
}

function parsedArgs(argv: readonly string[]): Values {
  const { parseArgs } = require("node:util") as typeof NodeUtil;
  try {
    return parseArgs({ args: [...argv], strict: true, allowPositionals: false, options: OPTIONS }).values;
  } catch (error) {
    throw new CliError((error as Error).message);
  }
}
