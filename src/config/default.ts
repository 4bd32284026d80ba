// The embedded default: what a fresh install runs with no config file anywhere. It must work with no
// network and no keys (the built-in mock provider), and pick up a vendor's key when one is set.
import { yaml } from "./yaml-package.ts";

const BASE = `# The gateway's embedded default config (gateway --print-default-config).
# Save it as ./gateway.yaml or pass --config PATH to change anything.
listen: 127.0.0.1:8080          # data plane, loopback only
admin_listen: 127.0.0.1:8081    # admin plane, loopback only
store: {module: sqlite, settings: {path: ./gateway.db}}

providers:
  local:
    protocol: mock              # built in: answers without any network; for demos and CI

models:
  mock-1:
    provider: local

pools:
  default:
    members:
      - {model: mock-1, weight: 1}

auth:
  chain: []                     # open data plane: anyone who can reach the listener may use it
  admin_auth: []                # open admin plane, safe only because it listens on loopback
`;

/**
 * Vendors whose key variable, when set, adds a provider, a model and a pool named after the protocol.
 * `baseUrl`: the variable the vendor's own SDK reads for its endpoint (openai, @anthropic-ai/sdk,
 * google-genai, cohere's Python SDK), in the same convention as base_url; when set, the provider calls it.
 */
export const AUTO_PROVIDERS = [
  { protocol: "openai", variable: "OPENAI_API_KEY", baseUrl: "OPENAI_BASE_URL", model: "gpt-4o-mini" },
  { protocol: "anthropic", variable: "ANTHROPIC_API_KEY", baseUrl: "ANTHROPIC_BASE_URL", model: "claude-haiku-4-5" },
  { protocol: "gemini", variable: "GEMINI_API_KEY", baseUrl: "GOOGLE_GEMINI_BASE_URL", model: "gemini-2.5-flash" },
  { protocol: "cohere", variable: "COHERE_API_KEY", baseUrl: "CO_API_URL", model: "command-a-03-2025" },
] as const;

export function embeddedDefaultText(env: Readonly<Record<string, string | undefined>>): string {
  const found = AUTO_PROVIDERS.filter((p) => (env[p.variable] ?? "") !== "");
  if (found.length === 0) return BASE;
  const doc = yaml().parseDocument(BASE);
  const variables: string[] = [];
  for (const p of found) {
    // Taken as a ${VAR} reference: checked as an http(s) URL like any base_url, and never quoted in an error.
    const baseUrl = (env[p.baseUrl] ?? "") === "" ? {} : { base_url: `\${${p.baseUrl}}` };
    variables.push(p.variable, ...("base_url" in baseUrl ? [p.baseUrl] : []));
    doc.setIn(["providers", p.protocol], doc.createNode({ protocol: p.protocol, ...baseUrl, api_key: { env: p.variable } }, { flow: !("base_url" in baseUrl) }));
    doc.setIn(["models", p.model], doc.createNode({ provider: p.protocol }, { flow: true }));
    doc.setIn(["pools", p.protocol], doc.createNode({ members: [{ model: p.model, weight: 1 }] }));
  }
  doc.commentBefore = `${doc.commentBefore ?? ""}\nProviders added because their key variable is set: ${variables.join(", ")}`;
  return doc.toString();
}
