// Structured logs: one JSON object per line on stderr ({ts, level, msg, ...fields}).
// Secrets cannot reach a line: Secret objects print as a placeholder, and any field whose name says
// it holds a credential is masked whatever its value.
import { Secret } from "../config/secret.ts";
import { isoTime } from "./iso-time.ts";

export type LogLevel = "debug" | "info" | "warn" | "error";
const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };
export const LOG_LEVELS = Object.keys(RANK) as LogLevel[];

export type Fields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: Fields): void;
  info(msg: string, fields?: Fields): void;
  warn(msg: string, fields?: Fields): void;
  error(msg: string, fields?: Fields): void;
  child(fields: Fields): Logger;
  /** Whether a line at `level` would be written: lets a hot path skip building fields nobody reads. */
  enabled(level: LogLevel): boolean;
}

// Singular names only: `input_tokens: 12` is a usage count, `access_token` is a credential.
const CREDENTIAL_FIELD = /(^|[_-])(token|secret|password|passwd|api[_-]?key|authorization|signing[_-]?key|cookie|credential)$/i;

function replacer(this: unknown, key: string, value: unknown): unknown {
  if (value instanceof Secret) return String(value);
  if (key !== "" && CREDENTIAL_FIELD.test(key) && value !== null && value !== undefined && typeof value !== "boolean") return "[redacted]";
  if (value instanceof Error) return { name: value.name, message: value.message, stack: value.stack };
  if (typeof value === "bigint") return value.toString();
  return value;
}

/**
 * Bun's own sink on fd 2, the one under `process.stderr.write`'s fast path: it writes what the fd takes
 * at once and queues the rest in the same order. Reaching it through `process.stderr` first loads
 * node:stream and the fs streams (~1.6 ms of a cold start, paid by the "gateway started" line).
 */
let stderrSink: import("bun").FileSink | undefined;
export function writeStderr(line: string): void {
  (stderrSink ??= Bun.stderr.writer()).write(line);
  stderrSink.flush();
}

/** A record as a terminal reader wants it: time, level, message, then key=value (values as JSON). */
function textLine(record: Record<string, unknown>): string {
  const { ts, level, msg, ...fields } = record;
  const rest = Object.entries(fields).map(([key, value]) => `${key}=${typeof value === "string" && /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value)}`);
  return [ts, String(level).toUpperCase().padEnd(5), msg, ...rest].join(" ");
}

export function createLogger(options: { level?: LogLevel; write?: (line: string) => void; base?: Fields; format?: "json" | "text" } = {}): Logger {
  const text = options.format === "text";
  const threshold = RANK[options.level ?? "info"];
  const write = options.write ?? writeStderr;
  const make = (base: Fields): Logger => {
    const emit = (level: LogLevel, msg: string, fields?: Fields) => {
      if (RANK[level] < threshold) return;
      let line: string;
      try {
        line = JSON.stringify({ ts: isoTime(Date.now()), level, msg, ...base, ...fields }, replacer);
        if (text) line = textLine(JSON.parse(line) as Record<string, unknown>);
      } catch {
        line = JSON.stringify({ ts: isoTime(Date.now()), level, msg, ...base, note: "fields could not be serialised" }, replacer);
      }
      write(`${line}\n`);
    };
    return {
      debug: (msg, fields) => emit("debug", msg, fields),
      info: (msg, fields) => emit("info", msg, fields),
      warn: (msg, fields) => emit("warn", msg, fields),
      error: (msg, fields) => emit("error", msg, fields),
      child: (fields) => make({ ...base, ...fields }),
      enabled: (level) => RANK[level] >= threshold,
    };
  };
  return make(options.base ?? {});
}
