// Config this build cannot honour yet (src/config/unsupported.ts) is refused with its path by the real
// binary everywhere a config is judged: `--check`, boot, POST /config/validate and /config/apply, and a
// reload of the file. Nothing is applied by a refusal.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { blocksUnder } from "../support/doc-blocks.ts";
import { json, LISTEN_ANY, ROOT, runGateway, startGateway, tempDir, type RunningGateway } from "../support/gateway.ts";

const CONFIG = `${LISTEN_ANY}store: {module: sqlite, settings: {path: ":memory:"}}
providers: {local: {protocol: mock}}
models: {mock-1: {provider: local}}
`;
const EXTRA = `advanced: {response_headers: {server_timing: true}}
`;
const REFUSALS = ["advanced.response_headers.server_timing: not supported by this build yet"];

describe("the binary refuses config it cannot honour yet, naming its path", () => {
  test("gateway --check, as docs/operations.md prints it", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "gateway.yaml"), CONFIG + EXTRA);
    const [block] = blocksUnder(ROOT, "docs/operations.md", "Config this build cannot honour yet");
    const command = block!.text.trimEnd().replace(/\s+# .*$/, "");
    expect(command).toBe("gateway --check --config gateway.yaml");
    const run = await runGateway(command.split(" ").slice(1), { cwd: dir });
    expect(run.code).toBe(1);
    for (const line of REFUSALS) expect(run.stdout + run.stderr).toContain(line);
  });

  test("boot", async () => {
    const error = await startGateway(CONFIG + EXTRA).then(
      async (gw) => (await gw.stop(), "started"),
      (e: Error) => e.message,
    );
    expect(error).toContain("gateway exited before starting");
    for (const line of REFUSALS) expect(error).toContain(line);
  });
});

describe("the admin API refuses it too", () => {
  let gw: RunningGateway;
  beforeAll(async () => {
    gw = await startGateway(CONFIG);
  });
  afterAll(async () => {
    await gw?.stop();
  });
  const post = (path: string, body?: unknown) =>
    fetch(`${gw.admin}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });

  test("POST /config/validate: 200 ok:false with each path (the spec's verdict shape)", async () => {
    const answer = await post("/config/validate", { yaml: CONFIG + EXTRA });
    expect(answer.status).toBe(200);
    const verdict = await json(answer);
    expect(verdict.ok).toBe(false);
    for (const line of REFUSALS) expect(verdict.errors.join("\n")).toContain(line);
  });

  test("POST /config/apply: 400 naming each path; nothing applied", async () => {
    const answer = await post("/config/apply", { yaml: CONFIG + EXTRA });
    expect(answer.status).toBe(400);
    const text = await answer.text();
    for (const line of REFUSALS) expect(text).toContain(line);
    expect((await json(await fetch(`${gw.admin}/info`))).config_version).toBe(0);
  });

  test("POST /config/reload of a file that gained them: refused naming each path, the running config kept", async () => {
    writeFileSync(join(gw.dir, "gateway.test.yaml"), CONFIG + EXTRA);
    const answer = await post("/config/reload");
    expect(answer.status).toBe(400);
    const text = await answer.text();
    for (const line of REFUSALS) expect(text).toContain(line);
    expect((await json(await fetch(`${gw.admin}/info`))).config_version).toBe(0);
  });
});
