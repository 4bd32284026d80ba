// docs/hooks.md "A complete example": the module as the guide prints it, imported from a file, created
// through the hook runtime from the guide's own hook config, and asked as a request would ask it.
import { afterAll, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { tempDir } from "../../support/temp.ts";
import { loadConfigText } from "../../../src/config/load.ts";
import { runGates } from "../../../src/hooks/gates.ts";
import { HookRuntime } from "../../../src/hooks/runtime.ts";
import type { HookModule } from "../../../src/hooks/types.ts";
import { createLogger } from "../../../src/telemetry/logger.ts";
import { dataPlaneMetrics } from "../../../src/telemetry/metrics.ts";
import { blocksUnder } from "../../support/doc-blocks.ts";

const ROOT = resolve(import.meta.dir, "../../..");
const [moduleBlock, configBlock] = blocksUnder(ROOT, "docs/hooks.md", "A complete example");
const dir = tempDir("gw-hook-guide-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("the guide's module runs through the runtime: reject, abstain, route", async () => {
  const file = join(dir, "budget-router.mjs");
  writeFileSync(file, moduleBlock!.text);
  const yaml = `providers: {p: {protocol: mock}}\nmodels: {fast: {provider: p}, smart: {provider: p}}\npools: {chat: {members: [{model: fast}, {model: smart}], hooks: [budget]}}\n${configBlock!.text}`;
  const loaded = loadConfigText(yaml, "guide.yaml", { env: {} });
  if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
  const targets: string[] = [];
  const loader = async (ref: string) => (targets.push(ref), (await import(file)).default as HookModule);
  const runtime = new HookRuntime({ logger: createLogger({ write: () => undefined }), metrics: dataPlaneMetrics(), loader, routePolicyHeader: true });
  runtime.forPool(loaded.snapshot, "chat");
  await runtime.settled();
  expect(targets).toEqual(["acme/budget-router"]);
  expect(runtime.health("budget")).toEqual({ reachable: true, detail: null });
  expect(runtime.schema("budget")).toMatchObject({ required: ["long_chars", "long_lanes"] });
  const hooks = runtime.forPool(loaded.snapshot, "chat")!;
  const ask = (text: string) =>
    runGates(hooks, { model: "chat", ingress: "openai", stream: false, principal: { id: "k", module: "keys" }, requestId: "r", prompt: { system: null, messages: [{ role: "user", text }] }, members: loaded.snapshot.pools.get("chat")!.members, breakerOf: () => "closed" }, runtime.deps);
  expect(await ask("please do a Password Dump")).toMatchObject({ kind: "reject", status: 403 });
  expect(await ask("short")).toEqual({ kind: "go", order: undefined, policy: undefined, prompt: undefined });
  const long = await ask("x".repeat(20_000));
  expect(long.kind === "go" && long.order?.map((m) => m.lane.name)).toEqual(["smart"]);
  expect(await runtime.reported("budget", 1000)).toMatchObject({ settings_keys: ["blocked", "long_chars", "long_lanes"], metrics: [{ name: "routed_total", value: 1 }] });
});
