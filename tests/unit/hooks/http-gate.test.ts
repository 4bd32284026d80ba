// The compiled-in http-gate reads its policy server like an upstream: each answer it cannot take
// (a non-2xx, one past the size bound, one nested past the JSON depth bound, one that is not JSON)
// throws, so the hook's on_error applies; a good answer is the decision.
import { afterAll, expect, test } from "bun:test";
import { httpGate, MAX_ANSWER_BYTES } from "../../../src/hooks/http-gate.ts";
import type { GateCall, HookInstance } from "../../../src/hooks/types.ts";

const ANSWERS: Record<string, () => Response> = {
  "/ok": () => Response.json({ verb: "continue" }),
  "/500": () => new Response("down", { status: 500 }),
  "/big": () => new Response(`{"verb":"continue","pad":"${"x".repeat(MAX_ANSWER_BYTES)}"}`),
  "/deep": () => new Response(`${"[".repeat(5000)}${"]".repeat(5000)}`),
  "/text": () => new Response("not json"),
};
const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (request) => (ANSWERS[new URL(request.url).pathname] ?? (() => new Response("", { status: 404 })))() });
afterAll(() => server.stop(true));

const CALL: GateCall = { stage: "request", hook: "h", pool: "p", model: "m", ingress_protocol: "openai", stream: false, candidates: [], request_id: "r" };
const gateAt = async (path: string) => {
  const instance = (await httpGate.create({ url: `http://127.0.0.1:${server.port}${path}` }, { name: "h", log: () => undefined })) as HookInstance;
  return instance.gate!(CALL);
};

test("a 2xx JSON answer is the decision", async () => {
  expect(await gateAt("/ok")).toEqual({ verb: "continue" });
});

test("a non-2xx, an answer past the size bound, one nested too deep, and one that is not JSON each throw", async () => {
  await expect(gateAt("/500")).rejects.toThrow("policy server answered 500");
  await expect(gateAt("/big")).rejects.toThrow(`policy answer over ${MAX_ANSWER_BYTES} bytes`);
  await expect(gateAt("/deep")).rejects.toThrow("policy answer nests JSON deeper than 64 levels");
  await expect(gateAt("/text")).rejects.toThrow();
});
