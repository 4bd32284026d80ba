// A client's member names and type tags are data, never keys into the adapters' own tables: a content
// part typed "toString", "constructor" or "__proto__" is what any unknown type is in that protocol (a 400
// naming the member, or dropped with a warning naming it), never an exception (which the pipeline would
// answer as a 500; OpenAI's and Responses' part tables were read without an own-key check).
import { expect, test } from "bun:test";
import { adapterFor } from "../../../src/protocols/registry.ts";
import type { WireProtocol } from "../../../src/protocols/types.ts";

const NAMES = ["toString", "constructor", "__proto__", "hasOwnProperty", "valueOf"];

const BODIES: Record<WireProtocol, (name: string) => unknown> = {
  openai: (name) => ({ model: "m", messages: [{ role: "user", content: [{ type: name }] }] }),
  responses: (name) => ({ model: "m", input: [{ role: "user", content: [{ type: name }] }] }),
  anthropic: (name) => ({ model: "m", max_tokens: 8, messages: [{ role: "user", content: [{ type: name }] }] }),
  cohere: (name) => ({ model: "m", messages: [{ role: "user", content: [{ type: name }] }] }),
  gemini: (name) => ({ contents: [{ role: "user", parts: [{ [name]: {} }] }] }),
  bedrock: (name) => ({ messages: [{ role: "user", content: [{ [name]: {} }] }] }),
};

test("content parts named after Object.prototype members are an unknown type like any other, in every protocol", () => {
  for (const [protocol, body] of Object.entries(BODIES) as [WireProtocol, (name: string) => unknown][]) {
    for (const name of NAMES) {
      const decoded = adapterFor(protocol)!.decodeRequest(JSON.parse(JSON.stringify(body(name))), { pathModel: "m" });
      const outcome = decoded.ok ? { dropped: decoded.value.messages[0]!.content.length === 0 && decoded.warnings.length > 0 } : { status: decoded.error.status, named: decoded.error.message.includes(name) };
      expect({ protocol, name, outcome }).toEqual({ protocol, name, outcome: protocol === "openai" || protocol === "responses" ? { status: 400, named: true } : { dropped: true } });
    }
  }
});
