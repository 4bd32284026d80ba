// Every fenced code block of README.md and docs/*.md is run exactly as printed, or checked the way that
// fits what it is, as tests/fixtures/doc-blocks.ts says; a block missing from that table fails, so a doc
// cannot print a command no test runs. Sessions use the README's fixed ports 127.0.0.1:8080/8081, one at
// a time, in a temp working copy (./dist/gateway, bin/gateway on PATH, node_modules for SDK snippets).
import { afterAll, test } from "bun:test";
import type { Subprocess } from "bun";
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { BLOCKS, type How, SESSIONS, type Session, type SessionName, sessionOf } from "../fixtures/doc-blocks.ts";
import { allBlocks, type DocBlock, firstLine, portFree } from "../support/doc-blocks.ts";
import { baseEnv, ensureBinary, ROOT, runGateway, tempDir } from "../support/gateway.ts";

const blocks = allBlocks(ROOT);
const how = (block: DocBlock): How | undefined => BLOCKS[block.key];
const where = (block: DocBlock) => `${block.file}:${block.line} (under "${block.heading}") ${JSON.stringify(firstLine(block))}`;
/** The admin and data-plane error envelopes both start so; a recipe that prints one did not work. */
const ERROR_ENVELOPE = /"error"\s*:\s*\{/;
const report = (failures: string[]) => {
  if (failures.length > 0) throw new Error(failures.join("\n\n"));
};

test("every block of README.md and docs/*.md is classified in tests/fixtures/doc-blocks.ts", () => {
  const missing = blocks.filter((block) => how(block) === undefined);
  const keys = new Set(blocks.map((block) => block.key));
  const stale = Object.keys(BLOCKS).filter((key) => !keys.has(key));
  const lines = [
    ...missing.map((block) => `${where(block)} is not classified; add to BLOCKS in tests/fixtures/doc-blocks.ts:\n  "${block.key}": { shown: "<why it is not run>" },`),
    ...stale.map((key) => `${key} in BLOCKS: no block has this text any more; an edited block has a new key, so move the entry there once it holds`),
  ];
  if (missing.length > 0)
    lines.push(
      `instead of shown: { run: "sh", session: "<${Object.keys(SESSIONS).join(" | ")} | fresh:<name>>", expect?: [...], serves?: true | "<health URL>" }, { run: "bun", session },\n` +
        `  { check: "config" | "fragment" | "commands" | "agents" | "file" | "runBy", ... }: see How in tests/fixtures/doc-blocks.ts`,
    );
  if (lines.length > 0) throw new Error(lines.join("\n"));
});

test("config blocks pass ./dist/gateway --check --config; fragments merged into their session's config do too", async () => {
  const failures: string[] = [];
  for (const block of blocks) {
    const rule = how(block);
    if (!rule || !("check" in rule) || (rule.check !== "config" && rule.check !== "fragment")) continue;
    const dir = tempDir("gw-docs-check-");
    let text = block.text;
    let env: Record<string, string> | undefined;
    if (rule.check === "fragment") {
      const session = sessionOf(rule.session);
      text = `${session.files?.[session.fragmentsInto ?? ""] ?? ""}\n${block.text}`;
      env = { ...session.env };
    } else env = rule.env ? { ...rule.env } : undefined;
    writeFileSync(join(dir, "doc.yaml"), text);
    const checked = await runGateway(["--check", "--config", join(dir, "doc.yaml")], { cwd: dir, env });
    if (checked.code !== 0) failures.push(`${where(block)}: --check exited ${checked.code}\n${checked.stdout}${checked.stderr}`);
    if (rule.check === "config" && rule.equalsDefault) {
      const printed = await runGateway(["--print-default-config"], { cwd: dir });
      if (printed.stdout !== block.text) failures.push(`${where(block)}: differs from --print-default-config`);
    }
  }
  report(failures);
});

test("command blocks not run here name npm scripts, files and flags that exist", () => {
  const scripts = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).scripts as Record<string, string>;
  const failures: string[] = [];
  for (const block of blocks) {
    const rule = how(block);
    if (!rule || !("check" in rule) || rule.check !== "commands") continue;
    for (const command of block.text.replace(/#.*$/gm, "").split(/&&|\n/)) {
      const words = command.trim().split(/\s+/).filter(Boolean);
      if (words[0] === "npm" && words[1] !== "install") {
        const script = words[1] === "run" ? words[2]! : words[1]!;
        if (!(script in scripts)) failures.push(`${where(block)}: no npm script "${script}" in package.json`);
      }
      if (words[0] === "npx" && words[1] === "bun") {
        const target = words[2] === "test" ? words[3]! : words[2]!;
        if (!existsSync(join(ROOT, target))) failures.push(`${where(block)}: ${target} does not exist`);
        else if (target.endsWith(".ts")) {
          const source = readFileSync(join(ROOT, target), "utf8");
          for (const flag of words.filter((word) => word.startsWith("--")))
            if (!source.includes(flag)) failures.push(`${where(block)}: ${target} does not read ${flag}`);
        }
      }
    }
  }
  report(failures);
});

test("coding-agent blocks print only variables, flags and settings tests/agents runs the CLIs with", () => {
  const failures: string[] = [];
  for (const block of blocks) {
    const rule = how(block);
    if (!rule || !("check" in rule) || rule.check !== "agents") continue;
    const harness = readFileSync(join(ROOT, rule.file), "utf8");
    const names = [
      ...block.text.matchAll(/\b([A-Z][A-Z0-9_]+)=/g), // environment variables
      ...block.text.matchAll(/(?:^|\s)(-{1,2}[a-z][a-z-]*)/g), // flags
      ...block.text.matchAll(/^\s*([a-z_]+)\s*=/gm), // TOML keys
      ...block.text.matchAll(/^\[([a-z_.]+)\]/gm), // TOML tables
      ...block.text.matchAll(/"([A-Za-z@][\w@/.-]*)"\s*:/g), // JSON keys
    ].map((match) => match[1]!);
    for (const name of new Set(names)) if (!harness.includes(name)) failures.push(`${where(block)}: ${name} is not in ${rule.file}`);
  }
  report(failures);
});

test("blocks that are a file, or that another test runs, match that file", () => {
  const failures: string[] = [];
  for (const block of blocks) {
    const rule = how(block);
    if (!rule || !("check" in rule) || (rule.check !== "file" && rule.check !== "runBy")) continue;
    const path = rule.check === "file" ? rule.path : rule.file;
    if (!existsSync(join(ROOT, path))) {
      failures.push(`${where(block)}: ${path} does not exist`);
      continue;
    }
    const text = readFileSync(join(ROOT, path), "utf8");
    if (rule.check === "file" && text !== block.text) failures.push(`${where(block)}: differs from ${path}`);
    if (rule.check === "runBy") {
      const reads = `blocksUnder(ROOT, ${JSON.stringify(block.file)}`;
      if (!text.includes(reads) || !text.includes(JSON.stringify(block.heading)))
        failures.push(`${where(block)}: ${path} does not read it from the doc: no ${reads}, ...) naming ${JSON.stringify(block.heading)}`);
    }
  }
  report(failures);
});

test("source-tree blocks name only files and folders that exist", () => {
  const names = new Set<string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (["node_modules", "dist", ".git"].includes(entry.name)) continue;
      names.add(entry.isDirectory() ? `${entry.name}/` : entry.name);
      if (entry.isDirectory()) walk(join(dir, entry.name));
    }
  };
  walk(ROOT);
  const failures: string[] = [];
  for (const block of blocks) {
    const rule = how(block);
    if (!rule || !("check" in rule) || rule.check !== "tree") continue;
    // A name is its last segment: the tree shows `openai/stream-usage.ts` under its folder.
    for (const [, named] of block.text.matchAll(/(?<![\w/.-])((?:[\w-]+\/)*[\w-]+(?:\.[\w-]+)*\.(?:ts|sh|yaml|json)|[\w-]+\/)(?!\w)/g)) {
      const last = named!.endsWith("/") ? named! : named!.split("/").pop()!;
      if (!names.has(last)) failures.push(`${where(block)}: names ${named}, which does not exist`);
    }
  }
  report(failures);
});

// ---- sessions: the blocks that run, against the gateway the doc says is running ----

const spawned: Subprocess[] = [];
let workDirs: string[] = [];
afterAll(async () => {
  for (const proc of spawned) if (proc.exitCode === null) killGroup(proc);
  for (const dir of workDirs) await stopSuccessors(dir);
});

function killGroup(proc: Subprocess, signal: NodeJS.Signals = "SIGTERM") {
  try {
    process.kill(-proc.pid, signal);
  } catch {
    proc.kill(signal);
  }
}

/** POST /restart's successor is detached from our process group: found by its working directory. */
async function stopSuccessors(dir: string) {
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      if (readlinkSync(`/proc/${pid}/cwd`) === dir) process.kill(Number(pid), "SIGTERM");
    } catch {
      // gone, or not ours to read
    }
  }
}

async function waitHealthy(url: string, proc: Subprocess, log: () => string) {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`exited ${proc.exitCode} before ${url} answered:\n${log()}`);
    const ok = await fetch(url).then((r) => r.ok, () => false);
    if (ok) return;
    await Bun.sleep(50);
  }
  throw new Error(`${url} did not answer within 10 s:\n${log()}`);
}

function workingCopy(name: SessionName): { dir: string; env: Record<string, string> } {
  const session = sessionOf(name);
  const dir = realpathSync(tempDir(`gw-docs-${name.replace(/\W/g, "-")}-`));
  workDirs.push(dir);
  for (const sub of ["dist", "bin"]) mkdirSync(join(dir, sub));
  symlinkSync(ensureBinary(), join(dir, "dist/gateway"));
  symlinkSync(ensureBinary(), join(dir, "bin/gateway"));
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
  const files: Record<string, string> = { ...session.files };
  for (const block of blocks) {
    const rule = how(block);
    if (rule && "check" in rule && rule.check === "fragment" && rule.session === name) files[session.fragmentsInto!] += `\n${block.text}`;
    if (rule && "check" in rule && rule.check === "config" && rule.session === name) files[rule.saveAs!] = block.text;
  }
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return { dir, env: baseEnv({ ...session.env, PATH: `${join(dir, "bin")}:${process.env.PATH ?? "/usr/bin:/bin"}` }) };
}

/** The block as printed, with only the session's declared absolute paths moved under the working copy. */
function asRun(block: DocBlock, session: Session, dir: string): string {
  let text = block.text;
  for (const path of session.rewrite ?? []) text = text.replaceAll(path, join(dir, path) + "/");
  return text;
}

function checkOutput(block: DocBlock, rule: { expect?: readonly string[] }, output: string, failures: string[]) {
  if (process.env.DOCS_RECIPES_VERBOSE) console.log(`--- ${where(block)}\n${output}`);
  for (const wanted of rule.expect ?? []) if (!output.includes(wanted)) failures.push(`${where(block)}: printed no ${JSON.stringify(wanted)}:\n${output}`);
  if (ERROR_ENVELOPE.test(output)) failures.push(`${where(block)}: answered an error:\n${output}`);
}

async function runSession(name: SessionName) {
  const session = sessionOf(name);
  const runs = blocks.filter((block) => {
    const rule = how(block);
    return rule && "run" in rule && rule.session === name;
  });
  const missingTools = ["bash", "curl", "jq"].filter((tool) => Bun.which(tool) === null);
  if (missingTools.length > 0) throw new Error(`the docs' recipes use ${missingTools.join(", ")}: install it to run them`);
  for (const port of [8080, 8081])
    if (!(await portFree(port))) throw new Error(`127.0.0.1:${port} is taken: the docs' recipes use the README's ports 8080 and 8081; stop whatever listens there (another gateway?) and run again`);
  const { dir, env } = workingCopy(name);
  const failures: string[] = [];
  const started: Subprocess[] = [];
  const serve = async (argv: string[], label: string, health = "http://127.0.0.1:8080/healthz") => {
    const logPath = join(dir, `.${started.length}.log`);
    const proc = Bun.spawn(argv, { cwd: dir, env, stdin: "ignore", stdout: Bun.file(logPath), stderr: Bun.file(logPath), detached: true });
    spawned.push(proc);
    started.push(proc);
    await waitHealthy(health, proc, () => `${label}\n${existsSync(logPath) ? readFileSync(logPath, "utf8") : ""}`);
  };
  try {
    if (session.gateway) await serve([ensureBinary(), ...session.gateway], `the session's gateway (${session.what})`);
    let script: DocBlock[] = [];
    const flush = async () => {
      if (script.length === 0) return;
      const parts = script.map((block, i) => {
        const waitFor = (how(script[i - 1] ?? block) as { waitAfter?: string }).waitAfter;
        const wait = i > 0 && waitFor ? `for _ in $(seq 100); do curl -sf -o /dev/null ${waitFor} && break; sleep 0.1; done\n` : "";
        return `${wait}printf '\\n@@doc-block ${i}\\n'\n${asRun(block, session, dir)}`;
      });
      writeFileSync(join(dir, ".recipe.sh"), parts.join("\n"));
      const proc = Bun.spawn(["bash", "-e", join(dir, ".recipe.sh")], { cwd: dir, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
      const timer = setTimeout(() => proc.kill("SIGKILL"), 30_000);
      const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
      clearTimeout(timer);
      const outputs = stdout.split(/\n@@doc-block \d+\n/).slice(1);
      if (code !== 0) failures.push(`${where(script[Math.max(0, outputs.length - 1)]!)}: exited ${code}\n${stdout}\n${stderr}`);
      script.forEach((block, i) => checkOutput(block, how(block) as { expect?: string[] }, outputs[i] ?? "", failures));
      script = [];
    };
    for (const block of runs) {
      const rule = how(block)!;
      if (!("run" in rule)) continue;
      if (rule.run === "sh" && !rule.serves) {
        script.push(block);
        continue;
      }
      await flush();
      if (rule.run === "sh")
        await serve(["bash", "-e", "-c", asRun(block, session, dir)], where(block), typeof rule.serves === "string" ? rule.serves : undefined).catch((error: Error) => failures.push(`${where(block)}: ${error.message}`));
      else {
        const file = join(dir, `snippet-${block.line}.mjs`);
        writeFileSync(file, block.text);
        const done = Bun.spawn([process.execPath, file], { cwd: dir, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
        const timer = setTimeout(() => done.kill("SIGKILL"), 20_000);
        const [stdout, stderr, code] = await Promise.all([new Response(done.stdout).text(), new Response(done.stderr).text(), done.exited]);
        clearTimeout(timer);
        if (code !== 0) failures.push(`${where(block)}: bun exited ${code}\n${stdout}${stderr}`);
        checkOutput(block, rule, stdout, failures);
      }
    }
    await flush();
  } finally {
    for (const proc of started) if (proc.exitCode === null) killGroup(proc);
    await Promise.all(started.map((proc) => Promise.race([proc.exited, Bun.sleep(10_000)])));
    // The README: SIGTERM drains and exits 0.
    if (session.gateway && started[0]?.exitCode !== 0) failures.push(`the session's gateway exited ${started[0]?.exitCode} on SIGTERM, not 0`);
    await stopSuccessors(dir);
    workDirs = workDirs.filter((d) => d !== dir);
    for (let i = 0; i < 100 && !((await portFree(8080)) && (await portFree(8081))); i++) await Bun.sleep(50);
  }
  report(failures);
}

const sessionNames = new Set(blocks.flatMap((block) => {
  const rule = how(block);
  return rule && "run" in rule ? [rule.session] : [];
}));
for (const name of sessionNames) test(`session ${name}: ${sessionOf(name).what}: its blocks run as printed`, () => runSession(name), 60_000);
