// The hook runtime without HTTP: per-pool gate lists in priority order, each verb, timeouts, on_error
// (every word, fallback chains, cycles refused at load), instances reused across snapshots and closed
// when removed, and the tap queue's bound.
import { describe, expect, test } from "bun:test";
import { loadConfigText } from "../../../src/config/load.ts";
import type { Snapshot } from "../../../src/config/snapshot.ts";
import { runGates, type GateInput } from "../../../src/hooks/gates.ts";
import { HookRuntime } from "../../../src/hooks/runtime.ts";
import { MAX_QUEUED, TapQueue } from "../../../src/hooks/taps.ts";
import type { GateCall, GateDecision, HookInstance, HookModule } from "../../../src/hooks/types.ts";
import { createLogger } from "../../../src/telemetry/logger.ts";
import { dataPlaneMetrics } from "../../../src/telemetry/metrics.ts";

const BASE = "providers: {p: {protocol: mock}}\nmodels: {a: {provider: p}, b: {provider: p}}\n";

function snapshot(yaml: string): Snapshot {
  const loaded = loadConfigText(BASE + yaml, "t.yaml", { env: {} });
  if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
  return loaded.snapshot;
}

/** Plugins by target: each a gate answering from `decide`. */
function gates(decide: Record<string, (call: GateCall) => GateDecision | Promise<GateDecision>>, made: string[] = [], closed: string[] = []) {
  return async (ref: string): Promise<HookModule> => ({
    kind: "hook",
    create: (_settings, ctx): HookInstance => {
      made.push(ctx.name);
      return { gate: decide[ref], tap: () => undefined, close: () => void closed.push(ctx.name) };
    },
  });
}

function setup(yaml: string, decide: Record<string, (call: GateCall) => GateDecision | Promise<GateDecision>>) {
  const lines: string[] = [];
  const metrics = dataPlaneMetrics();
  const runtime = new HookRuntime({ logger: createLogger({ write: (l) => void lines.push(l) }), metrics, loader: gates(decide), routePolicyHeader: true });
  const snap = snapshot(yaml);
  return { runtime, snap, lines, metrics };
}

const input = (snap: Snapshot, pool: string, text = "hi"): GateInput => ({
  model: pool,
  ingress: "openai",
  stream: false,
  principal: { id: "k1", module: "keys", group: "g" },
  requestId: "r1",
  prompt: { system: null, messages: [{ role: "user", text }] },
  members: snap.pools.get(pool)!.members,
  breakerOf: () => "closed",
});

const gate = (target: string, extra = "") => `{kind: gate, transport: {kind: plugin, target: "${target}"}${extra}}`;

describe("gates", () => {
  test("run in ascending priority, ties by name; transforms chain; the last route wins", async () => {
    const seen: string[] = [];
    const yaml = `pools: {hooks: [z], chat: {members: [{model: a}, {model: b}], hooks: [y, x]}}\nhooks:\n  x: ${gate("t/x", ", prompt: rw, priority: 2")}\n  y: ${gate("t/y", ", prompt: rw, priority: 2")}\n  z: ${gate("t/z", ", priority: 1")}\n`;
    const { runtime, snap, metrics } = setup(yaml, {
      "t/x": (c) => (seen.push(`x:${c.prompt!.messages[0]!.text}`), { verb: "transform", prompt: { messages: [{ role: "user", text: c.prompt!.messages[0]!.text + "+x" }] } }),
      "t/y": (c) => (seen.push(`y:${c.prompt!.messages[0]!.text}`), { verb: "route", order: ["b", "a"] }),
      "t/z": (c) => (seen.push(`z:${c.prompt === undefined}`), { verb: "route", order: ["a"] }),
    });
    const hooks = runtime.forPool(snap, "chat")!;
    await runtime.settled();
    expect(hooks.gates.map((g) => g.name)).toEqual(["z", "x", "y"]);
    const verdict = await runGates(hooks, input(snap, "chat"), runtime.deps);
    expect(seen).toEqual(["z:true", "x:hi", "y:hi+x"]);
    expect(verdict).toMatchObject({ kind: "go", policy: "y", prompt: { messages: [{ role: "user", text: "hi+x" }] } });
    if (verdict.kind === "go") expect(verdict.order!.map((m) => m.lane.name)).toEqual(["b", "a"]);
    expect(metrics.registry.expose()).toContain('gateway_route_policy_selections_total{pool="chat",policy="z"} 1');
  });

  test("the first reject wins and is counted; a reject outside 4xx is an error", async () => {
    const yaml = `pools: {chat: {members: [{model: a}], hooks: [r, s]}}\nhooks:\n  r: ${gate("t/r", ", priority: 1")}\n  s: ${gate("t/s", ", priority: 2, on_error: reject")}\n`;
    let status = 451;
    const { runtime, snap, metrics } = setup(yaml, { "t/r": () => ({ verb: "reject", status, message: "no" }), "t/s": () => ({ verb: "continue" }) });
    runtime.forPool(snap, "chat");
    await runtime.settled();
    expect(await runGates(runtime.forPool(snap, "chat")!, input(snap, "chat"), runtime.deps)).toEqual({ kind: "reject", status: 451, message: "no", policy: "r" });
    expect(metrics.registry.expose()).toContain('gateway_route_policy_rejections_total{pool="chat",policy="r",status="451"} 1');
    status = 500; // invalid: r's on_error (weighted) applies, s continues
    expect(await runGates(runtime.forPool(snap, "chat")!, input(snap, "chat"), runtime.deps)).toMatchObject({ kind: "go", order: undefined });
  });

  test("transform without prompt rw, a bad verb, a throw, a timeout: each takes on_error, logged without the prompt", async () => {
    const yaml = `pools: {chat: {members: [{model: a}, {model: b}], hooks: [t]}}\nhooks:\n  t: ${gate("t/t", ", prompt: ro, timeout_ms: 30, on_error: first")}\n`;
    let answer: () => GateDecision | Promise<GateDecision> = () => ({ verb: "transform", prompt: { messages: [{ role: "user", text: "x" }] } });
    const { runtime, snap, lines } = setup(yaml, { "t/t": () => answer() });
    runtime.forPool(snap, "chat");
    await runtime.settled();
    const hooks = runtime.forPool(snap, "chat")!;
    const firstOrder = async () => {
      const verdict = await runGates(hooks, input(snap, "chat", "private words"), runtime.deps);
      return verdict.kind === "go" ? verdict.order?.map((m) => m.lane.name) : verdict;
    };
    expect(await firstOrder()).toEqual(["a", "b"]);
    answer = () => ({ verb: "shrug" }) as never;
    expect(await firstOrder()).toEqual(["a", "b"]);
    answer = () => {
      throw new Error("boom");
    };
    expect(await firstOrder()).toEqual(["a", "b"]);
    answer = () => new Promise(() => undefined);
    const started = performance.now();
    expect(await firstOrder()).toEqual(["a", "b"]);
    expect(performance.now() - started).toBeLessThan(200);
    const fallbacks = lines.filter((l) => l.includes("hook gate fell back"));
    expect(fallbacks.length).toBe(4);
    expect(fallbacks.join()).toContain("no answer within 30 ms");
    expect(fallbacks.join()).not.toContain("private words");
  });

  test("on_error nothing, reject, and a fallback chain whose own on_error applies", async () => {
    const yaml = `pools: {chat: {members: [{model: a}], hooks: [n]}, two: {members: [{model: a}], hooks: [f1]}, three: {members: [{model: a}], hooks: [j]}}\nhooks:\n  n: ${gate("t/bad", ", on_error: nothing")}\n  f1: ${gate("t/bad", ", on_error: f2")}\n  f2: ${gate("t/bad", ", on_error: reject")}\n  j: ${gate("t/bad", ", on_error: f3")}\n  f3: ${gate("t/route")}\n`;
    const { runtime, snap } = setup(yaml, { "t/bad": () => Promise.reject(new Error("down")), "t/route": () => ({ verb: "route", order: ["a"] }) });
    runtime.forPool(snap, "chat");
    await runtime.settled();
    expect(await runGates(runtime.forPool(snap, "chat")!, input(snap, "chat"), runtime.deps)).toEqual({ kind: "go", order: undefined, policy: undefined, prompt: undefined });
    expect(await runGates(runtime.forPool(snap, "two")!, input(snap, "two"), runtime.deps)).toMatchObject({ kind: "reject", status: 503, policy: null });
    expect(await runGates(runtime.forPool(snap, "three")!, input(snap, "three"), runtime.deps)).toMatchObject({ kind: "go", policy: "f3" });
  });

  test("a cycle of on_error fallbacks, a fallback that is a tap, a bad builtin: config errors at load", () => {
    const cyc = loadConfigText(`${BASE}hooks:\n  a: ${gate("t/a", ", on_error: b")}\n  b: ${gate("t/b", ", on_error: c")}\n  c: ${gate("t/c", ", on_error: a")}\n  t: {kind: tap, at: request, builtin: http-gate, settings: {url: "http://127.0.0.1:1"}}\n  d: ${gate("t/d", ", on_error: t")}\n  e: {kind: gate, builtin: regex-redact, prompt: rw, settings: {patterns: ["("]}}\n  f: {kind: gate, builtin: nope}\n`, "t.yaml", { env: {} });
    expect(cyc.ok).toBe(false);
    const errors = cyc.ok ? [] : cyc.errors;
    expect(errors).toContain("hooks.a.on_error: fallback cycle a -> b -> c -> a");
    expect(errors).toContain('hooks.d.on_error: fallback hook "t" is not a gate');
    expect(errors.some((e) => e.startsWith("hooks.e.settings.patterns[0]: not a valid regular expression"))).toBe(true);
    expect(errors.some((e) => e.startsWith('hooks.f.builtin: unknown compiled-in hook "nope"'))).toBe(true);
  });

  test("a plugin hook without a loader is not loaded: health false, its gate takes on_error", async () => {
    const runtime = new HookRuntime({ logger: createLogger({ write: () => undefined }), metrics: dataPlaneMetrics(), routePolicyHeader: false });
    const snap = snapshot(`pools: {chat: {members: [{model: a}], hooks: [g]}}\nhooks:\n  g: ${gate("t/g", ", on_error: reject")}\n`);
    const hooks = runtime.forPool(snap, "chat")!;
    await runtime.settled();
    expect(runtime.health("g").reachable).toBe(false);
    expect(runtime.health("g").detail).toContain("not loaded");
    expect(await runGates(hooks, input(snap, "chat"), runtime.deps)).toMatchObject({ kind: "reject", status: 503 });
  });
});

describe("snapshots", () => {
  test("no hooks: forPool answers undefined; instances are reused per (name, settings) and closed when removed", async () => {
    const made: string[] = [];
    const closed: string[] = [];
    const runtime = new HookRuntime({ logger: createLogger({ write: () => undefined }), metrics: dataPlaneMetrics(), loader: gates({ "t/g": () => ({ verb: "continue" }), "t/h": () => ({ verb: "continue" }) }, made, closed), routePolicyHeader: true });
    expect(runtime.forPool(snapshot("pools: {chat: {members: [{model: a}]}}\n"), "chat")).toBeUndefined();
    const one = snapshot(`hooks:\n  g: ${gate("t/g", ", settings: {v: 1}, global: true")}\n  h: ${gate("t/h")}\n`);
    expect(runtime.forPool(one, "a")!.gates.map((g) => g.name)).toEqual(["g"]);
    await runtime.settled();
    runtime.forPool(snapshot(`hooks:\n  g: ${gate("t/g", ", settings: {v: 1}, global: true, priority: 3")}\n  h: ${gate("t/h", ", settings: {v: 2}")}\n`), "a");
    await runtime.settled();
    expect(made.sort()).toEqual(["g", "h", "h"]);
    expect(closed).toEqual(["h"]);
    runtime.forPool(snapshot(""), "a");
    expect(closed.sort()).toEqual(["g", "h", "h"]);
  });
});

describe("prepare", () => {
  test("a change's new hooks are created once, before it is live, and reused by its load; unchanged ones are not re-made", async () => {
    const made: string[] = [];
    const closed: string[] = [];
    const runtime = new HookRuntime({ logger: createLogger({ write: () => undefined }), metrics: dataPlaneMetrics(), loader: gates({ "t/g": () => ({ verb: "continue" }) }, made, closed), routePolicyHeader: true });
    const one = snapshot(`hooks:\n  g: ${gate("t/g", ", global: true")}\n`);
    expect(await runtime.prepare(one)).toEqual([]);
    expect(made).toEqual(["g"]);
    runtime.load(one);
    expect(runtime.health("g")).toEqual({ reachable: true, detail: null });
    expect(await runtime.prepare(snapshot(`hooks:\n  g: ${gate("t/g", ", global: true, priority: 4")}\n`))).toEqual([]);
    expect(made).toEqual(["g"]);
    expect(closed).toEqual([]);
  });

  test("a hook that cannot be made refuses the change naming it; what the change made is closed, the running hooks stay", async () => {
    const made: string[] = [];
    const closed: string[] = [];
    const loader = gates({ "t/g": () => ({ verb: "continue" }) }, made, closed);
    const runtime = new HookRuntime({ logger: createLogger({ write: () => undefined }), metrics: dataPlaneMetrics(), loader: (ref) => (ref === "t/bad" ? Promise.reject(new Error("plugin t/bad: not installed")) : loader(ref)), routePolicyHeader: true });
    const one = snapshot(`hooks:\n  g: ${gate("t/g")}\n`);
    await runtime.prepare(one);
    runtime.load(one);
    const refused = await runtime.prepare(snapshot(`hooks:\n  g: ${gate("t/g")}\n  n: ${gate("t/g")}\n  b: ${gate("t/bad")}\n`));
    expect(refused).toEqual(["hooks.b: plugin t/bad: not installed"]);
    expect(closed).toEqual(["n"]);
    expect(runtime.health("g").reachable).toBe(true);
    const slow = new HookRuntime({ logger: createLogger({ write: () => undefined }), metrics: dataPlaneMetrics(), loader: () => new Promise(() => undefined), routePolicyHeader: true });
    expect(await slow.prepare(one, 20)).toEqual(["hooks.g: not loaded within 20 ms"]);
  });
});

describe("tap queue", () => {
  test("never waits; past 1,024 queued events they are dropped and counted; a throwing tap is logged", async () => {
    let dropped = 0;
    const errors: string[] = [];
    let seen = 0;
    const queue = new TapQueue("t", () => ({ tap: () => (seen++, Promise.reject(new Error("tap broke"))) }), 50, () => dropped++, (e) => errors.push(e));
    const started = performance.now();
    for (let i = 0; i < MAX_QUEUED + 10; i++) queue.push({ stage: "request", pool: "p", model: "m", ingress_protocol: "openai", request_id: String(i) });
    expect(performance.now() - started).toBeLessThan(50);
    expect(dropped).toBe(10);
    expect(queue.dropped).toBe(10);
    for (let i = 0; i < 100 && seen < MAX_QUEUED; i++) await Bun.sleep(5);
    expect(seen).toBe(MAX_QUEUED);
    expect(errors[0]).toBe("tap broke");
  });

  test("a hanging tap holds only its own queue, one timeout_ms per event", async () => {
    let seen = 0;
    const queue = new TapQueue("t", () => ({ tap: () => (seen++, new Promise(() => undefined)) }), 10, () => undefined, () => undefined);
    queue.push({ stage: "request", pool: "p", model: "m", ingress_protocol: "openai", request_id: "1" });
    queue.push({ stage: "request", pool: "p", model: "m", ingress_protocol: "openai", request_id: "2" });
    for (let i = 0; i < 40 && seen < 2; i++) await Bun.sleep(5);
    expect(seen).toBe(2);
  });
});
