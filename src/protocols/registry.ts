// Protocol name -> adapter. Adding a protocol is one folder and one line here.
import type * as Anthropic from "./anthropic/index.ts";
import type * as Bedrock from "./bedrock/index.ts";
import type * as Cohere from "./cohere/index.ts";
import type * as Gemini from "./gemini/index.ts";
import type * as OpenAi from "./openai/index.ts";
import type * as Responses from "./responses/index.ts";
import type { ProtocolAdapter, WireProtocol } from "./types.ts";

/**
 * Each protocol's modules are evaluated on its first use, by a synchronous require (in the compiled
 * binary, one module initialiser): a start evaluated all six, their schemas and tables (~2 ms of a cold
 * start), though its first request speaks one or two. `loadAll` evaluates the rest once the boot is idle.
 */
const LOADERS: Record<WireProtocol, () => ProtocolAdapter> = {
  openai: () => (require("./openai/index.ts") as typeof OpenAi).openai,
  anthropic: () => (require("./anthropic/index.ts") as typeof Anthropic).anthropic,
  cohere: () => (require("./cohere/index.ts") as typeof Cohere).cohere,
  responses: () => (require("./responses/index.ts") as typeof Responses).responses,
  gemini: () => (require("./gemini/index.ts") as typeof Gemini).gemini,
  bedrock: () => (require("./bedrock/index.ts") as typeof Bedrock).bedrock,
};

const loaded: Partial<Record<WireProtocol, ProtocolAdapter>> = {};

/** Whether this build speaks `name`, without loading its adapter. */
export const hasAdapter = (name: string): name is WireProtocol => Object.hasOwn(LOADERS, name);

export function adapterFor(name: string): ProtocolAdapter | undefined {
  const adapter = loaded[name as WireProtocol];
  if (adapter !== undefined) return adapter;
  return hasAdapter(name) ? (loaded[name] = LOADERS[name]()) : undefined;
}

/** Loads every adapter not loaded yet: the boot calls it once the first requests have had their turn. */
export function loadAll(): void {
  for (const name of Object.keys(LOADERS)) adapterFor(name);
}

/**
 * A client credential in any protocol's header, for routes no protocol owns (/stats, /metrics): the
 * adapters' own readers, so every header a model route accepts is accepted here too (Anthropic's covers
 * `x-api-key` and Bearer, Gemini's `x-goog-api-key` and `?key=`).
 */
export function anyClientCredential(request: Request): string | undefined {
  return adapterFor("anthropic")!.clientCredential(request) ?? adapterFor("gemini")!.clientCredential(request);
}
