// The binary takes nothing from its working directory but the config it is told to read (and
// ./gateway.yaml when told nothing): Bun's standalone executables load `.env` into the environment and
// run `bunfig.toml`'s preload scripts by default, so any file dropped where the gateway starts could set
// its secrets or run code inside it. Both are turned off at compile (scripts/compile.ts).
import { describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runGateway, tempDir } from "../support/gateway.ts";

const CONFIG = `listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
store: {module: sqlite, settings: {path: ":memory:"}}
providers:
  up: {protocol: openai, base_url: "http://127.0.0.1:9/v1", api_key: "\${GW_DOTENV_KEY}"}
models:
  m: {provider: up, model: gpt-4o-mini}
`;

describe("the working directory", () => {
  test("a .env file there sets no variable the config reads", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, ".env"), "GW_DOTENV_KEY=sk-from-dotenv\n");
    writeFileSync(join(dir, "gw.yaml"), CONFIG);
    const run = await runGateway(["--check", "--config", "gw.yaml"], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("environment variable GW_DOTENV_KEY is not set");
    expect(run.stdout).not.toContain("config ok");
  });

  test("a bunfig.toml there runs no preload script", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "bunfig.toml"), 'preload = ["./preload.js"]\n');
    writeFileSync(join(dir, "preload.js"), 'require("node:fs").writeFileSync(require("node:path").join(__dirname, "preloaded"), "ran");\n');
    const run = await runGateway(["--version"], { cwd: dir });
    expect(run.code).toBe(0);
    expect(run.stdout).toStartWith("gateway ");
    expect(existsSync(join(dir, "preloaded"))).toBe(false);
  });
});
