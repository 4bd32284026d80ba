// The `file` exporter (design/telemetry.md "Exporters"): request-log records as JSON Lines, appended at
// least once a second. `log()` only serialises into a bounded buffer, so a slow or full disk never makes a
// request wait; the disk is touched by one background writer at a time, through async fs.
import { Type, type Static } from "@sinclair/typebox";
import type { FileHandle } from "node:fs/promises";
import { fsPromises } from "../../store/fs-promises.ts";
import type { Logger } from "../logger.ts";
import type { Exporter, RequestRecord } from "../records.ts";

export const FILE_DEFAULT_MAX_BYTES = 104_857_600;

export const FileSettings = Type.Object(
  {
    path: Type.String({ minLength: 1, description: "file the records are appended to (created 0600); rotation renames it <path>.1" }),
    max_bytes: Type.Optional(Type.Integer({ minimum: 0, default: FILE_DEFAULT_MAX_BYTES, description: "a line that would take the file past this first renames it <path>.1; 0: never rotate" })),
  },
  { additionalProperties: false },
);
export type FileSettings = Static<typeof FileSettings>;

/** The design's "at least once a second". */
const WRITE_EVERY_MS = 1_000;
/** How long an open file is written to before the path is opened again (see `open` below). */
const REOPEN_MS = 1_000;
/**
 * Pending lines past this many characters are written at the next turn, not at the second's end: under
 * load a second of lines is megabytes, and lines held that long outlive the young generation, so every
 * request would pay for old-generation collections.
 */
const EAGER_CHARS = 64 * 1024;
/** What may wait in memory for the disk; past either bound the newest records are shed and counted. */
export const FILE_MAX_PENDING_RECORDS = 10_000;
/** Measured in UTF-16 units, so no request pays for a byte count: about 8 MiB of ASCII JSON. */
const MAX_PENDING_CHARS = 8 * 1024 * 1024;
/** A disk that never answers (a hung network mount) must not hold SIGTERM or a reload forever. */
const FLUSH_BOUND_MS = 5_000;
/** Shedding and write failures repeat for as long as their cause lasts: one warning a minute says so. */
const WARN_EVERY_MS = 60_000;

export interface FileExporterDeps {
  readonly logger: Logger;
  readonly now?: () => number;
  /** Counts records shed (buffer full) or lost (write failed), when the caller keeps such a counter. */
  readonly dropped?: { inc(by?: number): void };
}

export function fileExporter(name: string, settings: FileSettings, deps: FileExporterDeps): Exporter {
  const path = settings.path;
  const maxBytes = settings.max_bytes ?? FILE_DEFAULT_MAX_BYTES;
  const now = deps.now ?? Date.now;
  const logger = deps.logger.child({ exporter: name, module: "file" });

  let pending: string[] = [];
  let pendingChars = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let writing: Promise<void> | undefined;
  let eager = false;
  let closed = false;
  /** Lost since the last warning, and when that warning was. */
  let shed = 0;
  let lost = 0;
  let lastError = "";
  let warnedAt = -Infinity;

  const drop = (n: number) => {
    try {
      deps.dropped?.inc(n);
    } catch {
      // A caller's counter failing must not reach log().
    }
  };

  function schedule(): void {
    if (timer !== undefined || closed) return;
    timer = setTimeout(() => {
      timer = undefined;
      void drain();
    }, WRITE_EVERY_MS);
    // Never what keeps the process alive: SIGTERM flushes explicitly.
    timer.unref();
  }

  function log(record: RequestRecord): void {
    try {
      if (closed) return void drop(1);
      const line = JSON.stringify(record);
      if (pending.length >= FILE_MAX_PENDING_RECORDS || pendingChars + line.length > MAX_PENDING_CHARS) {
        shed++;
        return void drop(1);
      }
      pending.push(line);
      pendingChars += line.length;
      if (pendingChars >= EAGER_CHARS && writing === undefined && !eager) {
        eager = true;
        setImmediate(() => {
          eager = false;
          void drain();
        });
      }
      schedule();
    } catch {
      // An unserialisable record is the caller's bug; the request it describes is not failed for it.
      shed++;
      drop(1);
    }
  }

  /**
   * One writer at a time. It goes on while a full buffer's worth (EAGER_CHARS) waits, or, for a flush,
   * until nothing does; what is left waits for the next full buffer or the second's timer. Writing on
   * whenever anything at all waited made one small write per handful of requests under load.
   */
  function drain(all = false): Promise<void> {
    if (writing) return writing;
    if (pending.length === 0) return Promise.resolve();
    writing = (async () => {
      try {
        do {
          const lines = pending;
          pending = [];
          pendingChars = 0;
          await append(lines);
        } while (pending.length > 0 && (all || pendingChars >= EAGER_CHARS));
      } finally {
        writing = undefined;
        if (pending.length > 0) schedule();
        warnIfDue();
      }
    })();
    return writing;
  }

  /** Everything pending written, including what arrives while a write is under way. */
  async function drainAll(): Promise<void> {
    while (writing !== undefined || pending.length > 0) await (writing ?? drain(true));
  }

  /**
   * The open file and its size, kept from one write to the next for up to REOPEN_MS: under load the
   * writes come many times a second, and opening, sizing and closing the file for each cost more than
   * the write. Reopened after that, so a file renamed or removed by something else (logrotate, an
   * operator) is replaced within about a second, as it was when every write opened the path.
   */
  let open: { handle: FileHandle; size: number; at: number } | undefined;

  async function file(): Promise<{ handle: FileHandle; size: number; at: number }> {
    if (open !== undefined && now() - open.at < REOPEN_MS) return open;
    await closeFile();
    const handle = await fsPromises().open(path, "a", 0o600);
    try {
      open = { handle, size: maxBytes > 0 ? (await handle.stat()).size : 0, at: now() };
    } catch (error) {
      await handle.close().catch(() => undefined);
      throw error;
    }
    return open;
  }

  async function closeFile(): Promise<void> {
    const was = open;
    open = undefined;
    await was?.handle.close().catch(() => undefined);
  }

  /** Appends whole lines, rotating before a line that would take the file past max_bytes. */
  async function append(lines: string[]): Promise<void> {
    let written = 0;
    try {
      let current = await file();
      let chunk: string[] = [];
      let chunkBytes = 0;
      const writeChunk = async () => {
        if (chunk.length === 0) return;
        await current.handle.appendFile(`${chunk.join("\n")}\n`);
        written += chunk.length;
        current.size += chunkBytes;
        chunk = [];
        chunkBytes = 0;
      };
      for (const line of lines) {
        const bytes = Buffer.byteLength(line) + 1;
        // An empty file takes even a line longer than max_bytes: lines are never split, and renaming an
        // empty file would only push the previous generation out.
        if (maxBytes > 0 && current.size + chunkBytes > 0 && current.size + chunkBytes + bytes > maxBytes) {
          await writeChunk();
          await closeFile();
          await fsPromises().rename(path, `${path}.1`);
          current = await file();
        }
        chunk.push(line);
        chunkBytes += bytes;
      }
      await writeChunk();
    } catch (error) {
      const n = lines.length - written;
      lost += n;
      drop(n);
      lastError = describe(error);
      // The next write starts from the path again (it may have been a full disk, a removed directory).
      await closeFile();
    }
  }

  function warnIfDue(): void {
    if (shed === 0 && lost === 0) return;
    const at = now();
    if (at - warnedAt < WARN_EVERY_MS) return;
    warnedAt = at;
    if (lost > 0) logger.warn("request-log records not written", { path, records: lost, error: lastError });
    if (shed > 0) logger.warn("request-log records shed: more were waiting for the disk than the buffer holds", { path, records: shed });
    shed = 0;
    lost = 0;
  }

  async function flush(): Promise<void> {
    if (timer !== undefined) {
      clearTimeout(timer);
      timer = undefined;
    }
    let bound: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([drainAll(), new Promise<void>((resolve) => (bound = setTimeout(resolve, FLUSH_BOUND_MS)))]);
    clearTimeout(bound);
  }

  return {
    name,
    module: "file",
    streams: ["logs"],
    log,
    flush,
    async close() {
      // Records arriving from here on are dropped and counted, not left pending with no timer to write them.
      closed = true;
      await flush();
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      // A write still hanging past flush's bound keeps the file until it returns; close never waits on it.
      if (writing === undefined) await closeFile();
      else void writing.finally(closeFile);
    },
  };
}

/** An fs error's code and message (they name the path, never a record's content). */
function describe(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === "string" ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}
