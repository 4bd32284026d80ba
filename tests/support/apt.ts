// Installing a Debian package a test needs and the machine lacks (the machines reach Debian's mirror,
// not release downloads): as root only, `apt-get update` then `install`, both within one bound.
const INSTALL_TIMEOUT_MS = 10 * 60_000;

/** Installs `pkg` (`--no-install-recommends` unless `recommends`); throws naming what to do when not root or when apt-get fails. */
export async function aptInstall(pkg: string, opts: { recommends?: boolean } = {}): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error(`Debian's ${pkg} package is missing and this is not root: install it (apt-get install ${pkg})`);
  const end = Date.now() + INSTALL_TIMEOUT_MS;
  const install = ["install", "-y", "-qq", ...(opts.recommends ? [] : ["--no-install-recommends"]), pkg];
  for (const args of [["update", "-qq"], install]) {
    const proc = Bun.spawn(["apt-get", ...args], { env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const timer = setTimeout(() => proc.kill("SIGKILL"), Math.max(0, end - Date.now()));
    const [stderr] = await Promise.all([new Response(proc.stderr).text(), new Response(proc.stdout).text()]);
    clearTimeout(timer);
    if ((await proc.exited) !== 0) throw new Error(`apt-get ${args.join(" ")} failed (${proc.exitCode ?? proc.signalCode}, bound ${INSTALL_TIMEOUT_MS / 60_000} min): ${stderr.slice(-2000)}`);
  }
}
