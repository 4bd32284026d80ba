// A headless Chromium for the browser sign-in tests: Debian's package (the machines reach no browser
// download site, so playwright-core is only the driver and never fetches a browser of its own).
import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";
const INSTALL_TIMEOUT_MS = 10 * 60_000;

// One install attempt per run, shared by every caller.
let installing: Promise<string> | undefined;

/** The path of Debian's chromium, installed with apt-get when missing and running as root. */
export function ensureChromium(): Promise<string> {
  if (existsSync(CHROMIUM)) return Promise.resolve(CHROMIUM);
  installing ??= install();
  return installing;
}

async function install(): Promise<string> {
  if (process.getuid?.() !== 0) {
    throw new Error(`${CHROMIUM} is missing and this is not root: install Debian's chromium package (apt-get install chromium)`);
  }
  const end = Date.now() + INSTALL_TIMEOUT_MS;
  for (const args of [["update", "-qq"], ["install", "-y", "-qq", "chromium"]]) {
    const proc = Bun.spawn(["apt-get", ...args], {
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    const timer = setTimeout(() => proc.kill("SIGKILL"), Math.max(0, end - Date.now()));
    const [stderr] = await Promise.all([new Response(proc.stderr).text(), new Response(proc.stdout).text()]);
    clearTimeout(timer);
    if ((await proc.exited) !== 0) {
      throw new Error(`apt-get ${args.join(" ")} failed (${proc.exitCode ?? proc.signalCode}, bound ${INSTALL_TIMEOUT_MS / 60_000} min): ${stderr.slice(-2000)}`);
    }
  }
  if (!existsSync(CHROMIUM)) throw new Error(`apt-get installed chromium but ${CHROMIUM} is not there`);
  return CHROMIUM;
}

// Needed on these machines' closed network: no GPU, no sandbox as root, and none of the background
// fetches (component updates, sync, QUIC probes) that would otherwise stall on unreachable hosts.
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** A headless Debian chromium driven by playwright-core; the caller closes it. */
export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: await ensureChromium(), args: CHROMIUM_ARGS });
}
