// The systemd unit as shipped (packaging/gateway.service) and docs/operations.md "Install on a VM": the
// docs print the unit byte for byte; `systemd-analyze verify` accepts it with no complaint (on a copy whose
// only change is where the binary is, since verify needs ExecStart's file to exist); the hardening, the
// restart and reload settings are there and TimeoutStopSec outlasts the default drain; and the install
// steps that can run without systemd (the files, their modes, the --check) run as printed, with /etc/gateway
// moved to a temporary directory and `sudo` dropped. systemctl and journalctl need systemd as PID 1 and are
// not run here.
import { beforeAll, describe, expect, test } from "bun:test";
import { chownSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { GatewayConfig } from "../../src/config/schema.ts";
import { blocksUnder } from "../support/doc-blocks.ts";
import { baseEnv, ensureBinary, LISTEN_ANY, ROOT, tempDir } from "../support/gateway.ts";
import { until } from "../support/until.ts";
import { startOpenAIUpstream } from "../support/upstreams/openai.ts";

const UNIT_PATH = join(ROOT, "packaging/gateway.service");
const UNIT = readFileSync(UNIT_PATH, "utf8");
const SHIPPED_BINARY = "/usr/local/bin/gateway";

/** The texts of the blocks of one language under `heading` in operations.md, in order. */
const blocks = (heading: string, lang: string) =>
  blocksUnder(ROOT, "docs/operations.md", heading)
    .filter((block) => block.lang === lang)
    .map((block) => block.text);

/** `Key=value` lines of [Service], every value of a repeated key kept in order. */
function serviceSettings(unit: string): Map<string, string[]> {
  const settings = new Map<string, string[]>();
  let inService = false;
  for (const line of unit.split("\n")) {
    if (line.startsWith("[")) inService = line === "[Service]";
    const match = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (inService && match) settings.set(match[1]!, [...(settings.get(match[1]!) ?? []), match[2]!]);
  }
  return settings;
}

/** A tool on the machine, else Debian's `pkg` installed (bounded, once per run); else the reason it cannot be. */
function tool(name: string, pkg: string): string | { skip: string } {
  const found = Bun.which(name);
  if (found) return found;
  if (process.getuid?.() !== 0 || !Bun.which("apt-get")) return { skip: `${name} is missing and this is not a root shell with apt-get to install Debian's ${pkg} package` };
  const env = { ...baseEnv(), DEBIAN_FRONTEND: "noninteractive" };
  Bun.spawnSync(["apt-get", "update"], { env, timeout: 120_000, stdout: "ignore", stderr: "inherit" });
  Bun.spawnSync(["apt-get", "install", "-y", "--no-install-recommends", pkg], { env, timeout: 240_000, stdout: "ignore", stderr: "inherit" });
  return Bun.which(name) ?? { skip: `apt-get install ${pkg} did not provide ${name}` };
}
const systemdAnalyze = () => tool("systemd-analyze", "systemd");

describe("packaging/gateway.service", () => {
  let analyze: string | { skip: string };
  beforeAll(() => {
    analyze = systemdAnalyze();
  }, 400_000);

  test("docs/operations.md prints the unit exactly as shipped", () => {
    expect(blocks("The unit file", "ini")).toEqual([UNIT]);
  });

  test("no value line carries a trailing comment (systemd would read it as part of the value)", () => {
    const values = UNIT.split("\n").filter((line) => /^[A-Za-z]+=/.test(line));
    expect(values.filter((line) => /\s[#;]/.test(line))).toEqual([]);
  });

  test("systemd-analyze verify accepts it with nothing to say", () => {
    if (typeof analyze !== "string") return console.warn(`SKIPPED systemd-analyze verify: ${analyze.skip}`);
    // verify wants ExecStart's binary to exist: the copy names the built one, and that is its only change.
    const binary = ensureBinary();
    expect(UNIT).not.toContain(binary);
    const copy = UNIT.replaceAll(SHIPPED_BINARY, binary);
    expect(copy.replaceAll(binary, SHIPPED_BINARY)).toBe(UNIT);
    const path = join(tempDir("gw-unit-"), "gateway.service");
    writeFileSync(path, copy);
    const verified = Bun.spawnSync([analyze, "verify", path], { env: baseEnv(), timeout: 60_000 });
    expect({ code: verified.exitCode, stderr: verified.stderr.toString() }).toEqual({ code: 0, stderr: "" });
  });

  test("verify does complain about a trailing comment, so the test above would see one", () => {
    if (typeof analyze !== "string") return console.warn(`SKIPPED systemd-analyze verify: ${analyze.skip}`);
    const binary = ensureBinary();
    const broken = UNIT.replaceAll(SHIPPED_BINARY, binary).replace("TimeoutStopSec=45s", "TimeoutStopSec=45s   # above the drain");
    const path = join(tempDir("gw-unit-"), "gateway.service");
    writeFileSync(path, broken);
    const verified = Bun.spawnSync([analyze, "verify", path], { env: baseEnv(), timeout: 60_000 });
    expect(verified.stderr.toString()).toContain("45s   # above the drain");
  });

  test("it runs as its own sandboxed user, with the store in its state directory", () => {
    const s = serviceSettings(UNIT);
    const one = (key: string) => s.get(key);
    expect(one("DynamicUser")).toEqual(["yes"]);
    expect(one("StateDirectory")).toEqual(["gateway"]);
    expect(one("WorkingDirectory")).toEqual(["/var/lib/gateway"]);
    expect(one("ConfigurationDirectory")).toEqual(["gateway"]);
    expect(one("EnvironmentFile")).toEqual(["/etc/gateway/gateway.env"]);
    expect(one("ExecStart")).toEqual([`${SHIPPED_BINARY} --config /etc/gateway/gateway.yaml`]);
    for (const [key, value] of Object.entries({
      ProtectSystem: "strict",
      ProtectHome: "yes",
      PrivateTmp: "yes",
      PrivateDevices: "yes",
      NoNewPrivileges: "yes",
      CapabilityBoundingSet: "",
      AmbientCapabilities: "",
      RestrictAddressFamilies: "AF_INET AF_INET6 AF_UNIX",
      RestrictNamespaces: "yes",
      LockPersonality: "yes",
      SystemCallArchitectures: "native",
      UMask: "0077",
    })) {
      expect([key, one(key)]).toEqual([key, [value]]);
    }
    expect(one("SystemCallFilter")).toContain("@system-service");
    // The JavaScriptCore JIT writes the code it runs: this one would stop the binary.
    expect(s.has("MemoryDenyWriteExecute")).toBe(false);
  });

  test("restarts on failure and after POST /restart's exit 75; reload sends SIGHUP; stop outlasts the drain", () => {
    const s = serviceSettings(UNIT);
    expect(s.get("Restart")).toEqual(["on-failure"]);
    expect(s.get("RestartForceExitStatus")).toEqual(["75"]);
    expect(s.get("SuccessExitStatus")).toEqual(["75"]);
    expect(s.get("ExecReload")).toEqual(["/bin/kill -HUP $MAINPID", `${SHIPPED_BINARY} --check --config /etc/gateway/gateway.yaml`]);
    const drainSecs = (GatewayConfig.properties.limits as unknown as { properties: { shutdown_drain_secs: { default: number } } }).properties.shutdown_drain_secs.default;
    expect(drainSecs).toBe(30);
    const stop = /^(\d+)s$/.exec(s.get("TimeoutStopSec")![0]!);
    expect(Number(stop![1])).toBeGreaterThan(drainSecs);
  });
});

describe("Install on a VM, the steps that run without systemd", () => {
  /** A printed command as it runs here: no sudo, /etc/gateway in `etc`, the built binary on PATH. */
  const runnable = (line: string, etc: string) => line.replace(/^sudo /, "").replace(/\| sudo /g, "| ").replaceAll("/etc/gateway", etc);
  /** Steps 2 to 4 (config, secrets, check), as one script. */
  const installScript = (etc: string) =>
    ["2. The config", "3. The secrets", "4. Check the config"]
      .flatMap((heading) => blocks(heading, "sh"))
      .join("")
      .trimEnd()
      .split("\n")
      .map((line) => runnable(line, etc))
      .join("\n");
  const sh = (script: string, cwd: string) => {
    const env = baseEnv({ PATH: `${dirname(ensureBinary())}:${process.env.PATH ?? "/usr/bin:/bin"}` });
    return Bun.spawnSync(["sh", "-ec", script], { cwd, env, timeout: 15_000 });
  };

  test("the config and the secrets file land with their modes, and the config checks with those secrets", () => {
    const work = tempDir("gw-vm-");
    const etc = join(work, "etc-gateway");
    const [config] = blocks("2. The config", "yaml");
    writeFileSync(join(work, "gateway.yaml"), config!);
    const script = installScript(etc);
    expect(script).not.toContain("/etc/gateway");
    // The printed check is the one the unit's `systemctl reload` runs.
    expect(blocks("4. Check the config", "sh")[0]).toContain(serviceSettings(UNIT).get("ExecReload")![1]!.replace(SHIPPED_BINARY, "gateway"));
    const ran = sh(script, work);
    expect({ code: ran.exitCode, stderr: ran.stderr.toString() }).toMatchObject({ code: 0 });
    expect(ran.stdout.toString()).toBe(`config ok: ${join(etc, "gateway.yaml")}\n`);
    expect(statSync(join(etc, "gateway.yaml")).mode & 0o777).toBe(0o644);
    expect(statSync(join(etc, "gateway.env")).mode & 0o777).toBe(0o600);
    const names = readFileSync(join(etc, "gateway.env"), "utf8").trimEnd().split("\n").map((line) => line.split("=")[0]);
    expect(names).toEqual(["OPENAI_API_KEY", "GATEWAY_SIGNING_KEY", "GATEWAY_ADMIN_TOKEN"]);
    // Every variable the config references is in the file, and nothing else is needed.
    const referenced = [...config!.matchAll(/\{env: ([A-Z_]+)\}/g)].map((m) => m[1]!);
    expect([...names].sort()).toEqual([...referenced].sort());
  });

  test("a config that does not load fails the printed check, which names the path", () => {
    const work = tempDir("gw-vm-");
    const etc = join(work, "etc-gateway");
    const [config] = blocks("2. The config", "yaml");
    writeFileSync(join(work, "gateway.yaml"), `${config}pools_typo: 1\n`);
    const ran = sh(installScript(etc), work);
    expect(ran.exitCode).toBe(1);
    expect(ran.stderr.toString()).toContain("pools_typo: unknown member");
  });
});

// The sandbox cannot be entered without systemd as PID 1, so what the binary asks of the kernel is traced
// instead, as an unprivileged user like DynamicUser's, through a boot, a request, SIGHUP and SIGTERM: every
// system call must pass the unit's SystemCallFilter=, every socket its RestrictAddressFamilies=, and
// every file written must be in the working directory (ProtectSystem=strict leaves only that writable).
describe("what the binary needs fits the unit's sandbox", () => {
  let strace: string | { skip: string };
  let analyze: string | { skip: string };
  beforeAll(() => {
    analyze = systemdAnalyze();
    strace = tool("strace", "strace");
  }, 400_000);

  /** The syscalls a list of SystemCallFilter= values allows: allow-list groups, minus `~` ones. */
  function allowed(filters: readonly string[], analyzer: string): Set<string> {
    const groups = new Map<string, string[]>();
    let current: string[] = [];
    for (const line of Bun.spawnSync([analyzer, "syscall-filter"], { env: baseEnv() }).stdout.toString().split("\n")) {
      if (line.startsWith("@")) groups.set(line.trim(), (current = []));
      else if (line.trim() !== "" && !line.trim().startsWith("#")) current.push(line.trim());
    }
    const expand = (name: string): string[] => (name.startsWith("@") ? (groups.get(name) ?? []).flatMap(expand) : [name]);
    const out = new Set<string>();
    for (const filter of filters.filter((f) => !f.startsWith("~"))) for (const name of filter.split(/\s+/).flatMap(expand)) out.add(name);
    for (const filter of filters.filter((f) => f.startsWith("~"))) for (const name of filter.slice(1).split(/\s+/).flatMap(expand)) out.delete(name);
    return out;
  }

  test("syscalls, socket families and writes of a boot, a request, a reload and a stop", async () => {
    if (typeof strace !== "string" || typeof analyze !== "string") return console.warn(`SKIPPED the traced run: ${[strace, analyze].flatMap((t) => (typeof t === "string" ? [] : [t.skip])).join("; ")}`);
    const work = tempDir("gw-sandbox-");
    // An upstream reached by host name, so the trace holds a name lookup and an outgoing connection too.
    const upstream = startOpenAIUpstream();
    const config = `${LISTEN_ANY}store: {module: sqlite, settings: {path: ./gateway.db}}
providers:
  up: {protocol: openai, base_url: "http://localhost:${upstream.port}/v1", api_key: ${upstream.apiKey}}
models:
  gpt-4o-mini: {provider: up}
pools:
  chat: {members: [{model: gpt-4o-mini}]}
auth:
  chain: []
`;
    writeFileSync(join(work, "gateway.yaml"), config);
    const trace = join(tempDir("gw-trace-"), "trace");
    // As root, drop to nobody as DynamicUser would (root alone would also fchown sqlite's files).
    const asUser = process.getuid?.() === 0 && Bun.which("setpriv") ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"] : [];
    if (asUser.length > 0) chownSync(work, 65534, 65534);
    const proc = Bun.spawn([strace, "-f", "-qq", "-o", trace, ...asUser, ensureBinary(), "--config", join(work, "gateway.yaml")], { cwd: work, env: baseEnv(), stdout: "ignore", stderr: "pipe", stdin: "ignore" });
    const lines: string[] = [];
    const reader = (async () => {
      for await (const chunk of proc.stderr) lines.push(...new TextDecoder().decode(chunk).split("\n").filter(Boolean));
    })();
    try {
      await until(() => lines.some((l) => l.includes('"gateway started"')), 15_000);
      const data = JSON.parse(lines.find((l) => l.includes('"gateway started"'))!).data as string;
      const answered = await fetch(`http://${data}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "chat", messages: [{ role: "user", content: "hi" }] }) });
      expect(answered.status).toBe(200);
      expect(upstream.requests.length).toBe(1);
      // strace's child is the gateway (setpriv execs into it).
      const pid = Number(readFileSync(`/proc/${proc.pid}/task/${proc.pid}/children`, "utf8").trim().split(" ")[0]);
      process.kill(pid, "SIGHUP");
      await until(() => lines.some((l) => l.includes('"config reloaded"')));
      process.kill(pid, "SIGTERM");
      await until(() => lines.some((l) => l.includes('"stopped"')), 10_000);
    } finally {
      const killer = setTimeout(() => proc.kill("SIGKILL"), 10_000);
      await proc.exited;
      clearTimeout(killer);
      await reader;
      await upstream.stop();
    }
    // From the gateway's own start: setpriv's calls before its exec are not the service's.
    const traced = readFileSync(trace, "utf8").split("\n");
    const calls = traced.slice(traced.findIndex((line) => line.includes(`execve("${ensureBinary()}"`) && line.endsWith("= 0")));
    const settings = serviceSettings(UNIT);
    const permitted = allowed(settings.get("SystemCallFilter")!, analyze);
    const used = new Set(calls.flatMap((line) => /^\d+ +([a-z_0-9]+)\(/.exec(line)?.[1] ?? []));
    expect(used.size).toBeGreaterThan(20);
    expect([...used].filter((name) => !permitted.has(name))).toEqual([]);
    const families = new Set(calls.flatMap((line) => /\bsocket\((AF_[A-Z0-9]+)/.exec(line)?.[1] ?? []));
    expect(families.size).toBeGreaterThan(0);
    expect([...families].filter((f) => !settings.get("RestrictAddressFamilies")![0]!.split(" ").includes(f))).toEqual([]);
    // Files opened for writing, created, renamed or removed, unless the call failed (a call another thread
    // interrupted shows no result on its line, and counts).
    const written = calls.flatMap((line) => {
      if (/ = -1 /.test(line)) return [];
      const opened = /\bopenat\([^"]*"([^"]+)", [^)]*O_(?:WRONLY|RDWR|CREAT)/.exec(line);
      const changed = /\b(?:rename|renameat2?|unlink|unlinkat|mkdir|mkdirat)\((?:AT_FDCWD, )?"([^"]+)"/.exec(line);
      return [opened?.[1], changed?.[1]].filter((p): p is string => p !== undefined);
    });
    expect(written.length).toBeGreaterThan(0);
    expect(written.filter((path) => !path.startsWith(`${work}/`) && path !== "/dev/null")).toEqual([]);
  }, 30_000);
});
