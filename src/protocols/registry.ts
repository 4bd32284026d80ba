// Protocol name -> adapter. Adding a protocol is one folder and one line here.
import { anthropic } from "./anthropic/index.ts";
import { bedrock } from "./bedrock/index.ts";
import { cohere } from "./cohere/index.ts";
import { gemini } from "./gemini/index.ts";
import { openai } from "./openai/index.ts";
import { responses } from "./responses/index.ts";
import type { ProtocolAdapter, WireProtocol } from "./types.ts";

const ADAPTERS: Partial<Record<WireProtocol, ProtocolAdapter>> = { openai, anthropic, cohere, responses, gemini, bedrock };

export function adapterFor(name: string): ProtocolAdapter | undefined {
  return ADAPTERS[name as WireProtocol];
}

/**
 * A client credential in any protocol's header, for routes no protocol owns (/stats, /metrics): the
 * adapters' own readers, so every header a model route accepts is accepted here too (Anthropic's covers
 * `x-api-key` and Bearer, Gemini's `x-goog-api-key` and `?key=`).
 */
export function anyClientCredential(request: Request): string | undefined {
  return anthropic.clientCredential(request) ?? gemini.clientCredential(request);
}
