// The caller's body as IR, with the output-token cap checked: what a lane of another protocol needs, and
// what a gate that sees the prompt needs before any lane is chosen.
import { irError, type IrRequest } from "../ir/index.ts";
import { MAX_TOKENS_LIMIT, maxTokensValid } from "../ir/request.ts";
import type { Decoded, IngressContext, ProtocolAdapter, WireProtocol } from "../protocols/types.ts";

export type DecodedIr = Decoded<IrRequest>;

export function decodeIr(ingress: ProtocolAdapter, body: Record<string, unknown>, context: IngressContext): DecodedIr {
  const decoded = ingress.decodeRequest(body, context);
  if (!decoded.ok) return decoded;
  if (!maxTokensValid(decoded.value.sampling.maxTokens)) {
    const member = maxTokensMember(ingress.name, body);
    return { ok: false, error: irError("invalid_request", `${member}: must be an integer from 1 to ${MAX_TOKENS_LIMIT}`, { param: member }) };
  }
  return { ok: true, value: decoded.value, warnings: decoded.warnings };
}

/** The member each protocol carries the IR's output-token cap in, as its callers write it. */
const MAX_TOKENS_MEMBER: Readonly<Record<WireProtocol, string>> = {
  openai: "max_tokens",
  anthropic: "max_tokens",
  responses: "max_output_tokens",
  cohere: "max_tokens",
  gemini: "generationConfig.maxOutputTokens",
  bedrock: "inferenceConfig.maxTokens",
};

function maxTokensMember(protocol: WireProtocol, body: Record<string, unknown>): string {
  // OpenAI has two names for the cap; the newer one wins when both are sent (protocols/openai/request.ts).
  return protocol === "openai" && body.max_completion_tokens != null ? "max_completion_tokens" : MAX_TOKENS_MEMBER[protocol];
}
