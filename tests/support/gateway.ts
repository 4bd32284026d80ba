// Starts the real built binary (dist/gateway) as a child process, on ports the OS picks (port 0), and
// reads the addresses it bound from its "gateway started" log line. Nothing of ours is mocked.
import type { Subprocess } from "bun";
import { existsSync, writeFileSync } from "node:fs";
import { tempDir as makeTempDir } from "./temp.ts";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const ROOT = resolve(import.meta.dir, "../..");
export const BINARY = join(ROOT, "dist/gateway");

/** `npm test` builds first; a bare `bun test` builds here once if the binary is missing. */
export function ensureBinary(): string {
  if (!existsSync(BINARY)) {
    const built = Bun.spawnSync([process.execPath, "build.ts"], { cwd: ROOT, stdout: "inherit", stderr: "inherit" });
    if (built.exitCode !== 0) throw new Error("building dist/gateway failed");
  }
  return BINARY;
}

/** Only what a process needs, so no developer or CI variable (a real API key) leaks into a test. */
export function baseEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", ...extra };
}

export const tempDir = (prefix = "gw-e2e-") => makeTempDir(prefix);

/** The base of every test config: both listeners on OS-chosen loopback ports, a throwaway store. */
export const LISTEN_ANY = "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\n";

export interface RunResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the binary to completion (for --check, --version and failing boots). */
export async function runGateway(args: string[], options: { env?: Record<string, string>; cwd?: string; timeoutMs?: number } = {}): Promise<RunResult> {
  const proc = Bun.spawn([ensureBinary(), ...args], { cwd: options.cwd ?? tempDir(), env: baseEnv(options.env), stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const timer = setTimeout(() => proc.kill("SIGKILL"), options.timeoutMs ?? 15_000);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  return { code, stdout, stderr };
}

export interface RunningGateway {
  readonly data: string;
  readonly admin: string;
  readonly dir: string;
  readonly proc: Subprocess<"ignore", "pipe", "pipe">;
  /** Every stderr line so far (JSON log records). */
  readonly logs: string[];
  /** Sends a signal and resolves with the exit code (SIGKILL after timeoutMs). */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<number>;
}

/**
 * `dir` reuses a directory (a restart over the same store and overlay); else a fresh one. `configYaml`
 * undefined starts on the embedded default; `args` follow `--config PATH`; `binary` another build (a benchmark's before and after).
 */
export async function startGateway(configYaml: string | undefined, options: { env?: Record<string, string>; scheme?: "http" | "https"; dir?: string; args?: string[]; binary?: string } = {}): Promise<RunningGateway> {
  const dir = options.dir ?? tempDir();
  const configPath = join(dir, "gateway.test.yaml");
  if (configYaml !== undefined) writeFileSync(configPath, configYaml);
  const config = configYaml === undefined ? [] : ["--config", configPath];
  const proc = Bun.spawn([options.binary ?? ensureBinary(), ...config, ...(options.args ?? [])], { cwd: dir, env: baseEnv(options.env), stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const logs: string[] = [];
  let readerDone: Promise<void> = Promise.resolve();
  const started = new Promise<{ data: string; admin: string }>((resolveStarted, reject) => {
    const decoder = new TextDecoder();
    let pending = "";
    readerDone = (async () => {
      for await (const chunk of proc.stderr) {
        pending += decoder.decode(chunk, { stream: true });
        let newline: number;
        while ((newline = pending.indexOf("\n")) !== -1) {
          const line = pending.slice(0, newline);
          pending = pending.slice(newline + 1);
          logs.push(line);
          try {
            const record = JSON.parse(line);
            if (record.msg === "gateway started") resolveStarted({ data: record.data, admin: record.admin });
          } catch {
            // Not JSON: `--log-format text` writes `... INFO  gateway started ... data=H:P admin=H:P`.
            const text = / gateway started .*\bdata=(\S+) admin=(\S+)/.exec(line);
            if (text) resolveStarted({ data: text[1]!, admin: text[2]! });
          }
        }
      }
      reject(new Error(`gateway exited before starting:\n${logs.join("\n")}`));
    })();
  });
  const timeout = Bun.sleep(10_000).then(() => {
    throw new Error(`gateway did not start within 10 s:\n${logs.join("\n")}`);
  });
  const addresses = await Promise.race([started, timeout]);
  const scheme = options.scheme ?? "http";
  return {
    data: `${scheme}://${addresses.data}`,
    admin: `${scheme}://${addresses.admin}/api/v1/admin`,
    dir,
    proc,
    logs,
    async stop(signal = "SIGTERM", timeoutMs = 10_000) {
      if (proc.exitCode !== null) return proc.exitCode;
      proc.kill(signal);
      const killer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
      const code = await proc.exited;
      clearTimeout(killer);
      await readerDone; // the last log lines are read before the caller looks at them
      return code;
    },
  };
}

/** A response body as JSON, loosely typed: tests assert its shape themselves. */
export const json = (response: Response): Promise<any> => response.json();

/** A loopback port free a moment ago: for a config that must name its own address (public_url) before it starts. */
export function freePort(): number {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  return port;
}
