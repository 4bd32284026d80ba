// Debian's prometheus package for the metrics tests: `promtool check metrics` judges the exposition, and
// a real Prometheus server scrapes the gateway. Installed with apt-get when missing (the machines reach
// Debian's mirror, not GitHub's release downloads), once per run, within a bound.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { aptInstall } from "./apt.ts";
import { until } from "./until.ts";

export const PROMETHEUS = "/usr/bin/prometheus";
export const PROMTOOL = "/usr/bin/promtool";

let installing: Promise<void> | undefined;

/** Both binaries present, installing Debian's `prometheus` package when missing and running as root. */
export function ensurePrometheus(): Promise<void> {
  if (existsSync(PROMETHEUS) && existsSync(PROMTOOL)) return Promise.resolve();
  installing ??= install();
  return installing;
}

async function install(): Promise<void> {
  await aptInstall("prometheus");
  if (!existsSync(PROMETHEUS) || !existsSync(PROMTOOL)) throw new Error(`apt-get installed prometheus but ${PROMETHEUS} or ${PROMTOOL} is not there`);
}

export interface PromtoolResult {
  /** 0 clean, 3 lint problems only, 1 a text it could not parse. */
  readonly code: number;
  /** One line per problem (`<metric> <problem>`), or the parse error. */
  readonly problems: string[];
}

/** `promtool check metrics` over an exposition text. */
export async function promtoolCheckMetrics(text: string): Promise<PromtoolResult> {
  await ensurePrometheus();
  const proc = Bun.spawn([PROMTOOL, "check", "metrics"], { stdin: new Blob([text]), stdout: "pipe", stderr: "pipe" });
  const timer = setTimeout(() => proc.kill("SIGKILL"), 30_000);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  return { code, problems: `${stdout}\n${stderr}`.split("\n").filter((l) => l.trim() !== "") };
}

export interface RunningPrometheus {
  /** http://127.0.0.1:<port> */
  readonly url: string;
  readonly proc: Subprocess<"ignore", "pipe", "pipe">;
  /** One instant-query vector: each sample's labels and value. */
  query(promql: string): Promise<{ metric: Record<string, string>; value: number }[]>;
  /** Every scrape target's health and last error, as /api/v1/targets says. */
  targets(): Promise<{ health: string; lastError: string; scrapeUrl: string }[]>;
  stop(): Promise<void>;
}

/**
 * A Prometheus server on loopback scraping `target` (`host:port`) at `metricsPath` every second, its
 * storage in `dir`. `bearer` goes in the scrape's Authorization header. The web port is the OS's: it is
 * read from the server's own "Listening on" log line, so no port is guessed.
 */
export async function startPrometheus(opts: { dir: string; target: string; metricsPath?: string; bearer?: string; startTimeoutMs?: number }): Promise<RunningPrometheus> {
  await ensurePrometheus();
  mkdirSync(join(opts.dir, "data"), { recursive: true });
  const job = {
    job_name: "gateway",
    scrape_interval: "1s",
    scrape_timeout: "1s",
    metrics_path: opts.metricsPath ?? "/metrics",
    ...(opts.bearer !== undefined && { authorization: { type: "Bearer", credentials: opts.bearer } }),
    static_configs: [{ targets: [opts.target] }],
  };
  // JSON is YAML: no YAML writer needed.
  writeFileSync(join(opts.dir, "prometheus.yml"), JSON.stringify({ global: { scrape_interval: "1s", evaluation_interval: "1s" }, scrape_configs: [job] }));
  const proc = Bun.spawn(
    [PROMETHEUS, `--config.file=${join(opts.dir, "prometheus.yml")}`, `--storage.tsdb.path=${join(opts.dir, "data")}`, "--web.listen-address=127.0.0.1:0", "--log.level=info"],
    { cwd: opts.dir, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: opts.dir }, stdin: "ignore", stdout: "pipe", stderr: "pipe" },
  );
  const log: string[] = [];
  let url: string | undefined;
  void (async () => {
    const decoder = new TextDecoder();
    let pending = "";
    for await (const chunk of proc.stderr) {
      pending += decoder.decode(chunk, { stream: true });
      let newline: number;
      while ((newline = pending.indexOf("\n")) !== -1) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        log.push(line);
        // "Start listening for connections" names the address asked for (port 0); this one the port bound.
        const bound = /msg="Listening on" address=(\S+)/.exec(line);
        if (bound && url === undefined) url = `http://${bound[1]!.replace(/"/g, "")}`;
      }
    }
  })();
  void new Response(proc.stdout).text();
  const stop = async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    proc.kill("SIGTERM");
    const timer = setTimeout(() => proc.kill("SIGKILL"), 5_000);
    await proc.exited;
    clearTimeout(timer);
  };
  try {
    await until(async () => {
      if (proc.exitCode !== null) throw new Error(`prometheus exited ${proc.exitCode}:\n${log.slice(-20).join("\n")}`);
      if (url === undefined) return false;
      return (await fetch(`${url}/-/ready`).catch(() => undefined))?.status === 200;
    }, opts.startTimeoutMs ?? 30_000, 50);
  } catch (error) {
    await stop();
    throw new Error(`prometheus did not become ready: ${error instanceof Error ? error.message : String(error)}\n${log.slice(-20).join("\n")}`);
  }
  const api = async <T>(path: string): Promise<T> => {
    const response = await fetch(`${url}${path}`);
    const body = (await response.json()) as { status: string; data: T; error?: string };
    if (body.status !== "success") throw new Error(`prometheus ${path}: ${body.error ?? response.status}`);
    return body.data;
  };
  return {
    url: url!,
    proc,
    async query(promql) {
      const data = await api<{ result: { metric: Record<string, string>; value: [number, string] }[] }>(`/api/v1/query?query=${encodeURIComponent(promql)}`);
      return data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
    },
    async targets() {
      const data = await api<{ activeTargets: { health: string; lastError: string; scrapeUrl: string }[] }>("/api/v1/targets");
      return data.activeTargets;
    },
    stop,
  };
}
