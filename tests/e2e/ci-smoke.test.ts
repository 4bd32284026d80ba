// docs/ci.md's smoke test, run exactly as printed: its shell script against a local server holding the
// release (dist/release/), in a throwaway folder, with the openai package the job's `npm install` step
// would put there (the project's own, linked); and its GitHub Actions job is valid YAML that calls the
// script after installing that package. About 3 s once the release is built (once per test run, shared with release.test.ts).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import pkg from "../../package.json" with { type: "json" };
import { hostTarget } from "../../scripts/compile.ts";
import { ROOT, tempDir } from "../support/gateway.ts";
import { blocksUnder } from "../support/doc-blocks.ts";
import { buildRelease, RELEASE_DIR } from "../support/release.ts";

let server: ReturnType<typeof Bun.serve>;
let work: string;
beforeAll(async () => {
  await buildRelease();
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const name = new URL(request.url).pathname.slice(1);
      const file = Bun.file(join(RELEASE_DIR, name));
      return !name.includes("/") && (await file.exists()) ? new Response(file) : new Response("not found", { status: 404 });
    },
  });
  work = tempDir("gw-ci-");
  symlinkSync(join(ROOT, "node_modules"), join(work, "node_modules")); // what `npm install --no-save openai@6` does
}, 240_000);
afterAll(() => {
  server?.stop(true);
  if (work) rmSync(work, { recursive: true, force: true }); // a gateway is 100 MiB
});

/** Runs docs/ci.md's script, saved as the doc says, in `dir` (which has the openai package, as after the job's npm step). */
async function smoke(dir: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const [script] = blocksUnder(ROOT, "docs/ci.md", "The script");
  mkdirSync(join(dir, "ci"), { recursive: true });
  writeFileSync(join(dir, "ci/gateway-smoke.sh"), script!.text);
  const proc = Bun.spawn(["sh", "ci/gateway-smoke.sh"], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, GATEWAY_DOWNLOAD_URL: `http://127.0.0.1:${server.port}` },
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
  });
  const timer = setTimeout(() => proc.kill("SIGKILL"), 50_000);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  return { code, stdout, stderr };
}

describe("docs/ci.md", () => {
  test("the smoke script installs the release, starts it on the mock, calls it with the OpenAI SDK and stops it", async () => {
    const { code, stdout, stderr } = await smoke(work);
    expect({ code, stdout, stderr }).toMatchObject({ code: 0 });
    expect(stderr).toContain(`gateway install: installed gateway ${pkg.version} (commit `);
    expect(stderr).toContain(`, ${hostTarget()}) to ${join(work, ".gateway/bin/gateway")}`);
    expect(stdout).toMatch(/^ok\nmock answered: .+\ngateway smoke test passed\n$/);
  }, 60_000);

  test("a gateway that cannot start fails the job, with its log", async () => {
    writeFileSync(join(work, ".gateway/smoke.db"), "not a sqlite database"); // the store it is told to open
    const { code, stdout } = await smoke(work);
    expect(code).toBe(1);
    expect(stdout).toStartWith("the gateway did not start\n");
    expect(stdout).toContain('"level":"error"');
  }, 60_000);

  test("the GitHub Actions job installs the openai package the script imports, then runs the script", () => {
    const [yaml] = blocksUnder(ROOT, "docs/ci.md", "The GitHub Actions job");
    const steps = parse(yaml!.text).jobs["gateway-smoke"].steps as { run?: string; env?: Record<string, string> }[];
    const runs = steps.flatMap((step) => (step.run ? [step.run] : []));
    expect(runs).toEqual([`npm install --no-save openai@${pkg.devDependencies.openai.split(".")[0]}`, "sh ci/gateway-smoke.sh"]);
    expect(Object.keys(steps.at(-1)!.env!)).toEqual(["GATEWAY_DOWNLOAD_URL"]);
  });
});
