// A provider as resolved at config load: everything the egress path needs, secrets already read.
import type { ProtocolName } from "../config/schema.ts";
import type { Secret } from "../config/secret.ts";

export interface HealthSettings {
  readonly mode: "none" | "dead" | "active";
  readonly interval_secs: number;
  readonly timeout_secs: number;
}

export interface ResolvedProvider {
  readonly name: string;
  readonly protocol: ProtocolName;
  /** Absent only for the in-process mock. */
  readonly baseUrl: string | undefined;
  /** baseUrl for views: userinfo and values from the environment replaced (resolve.ts shownUrl). */
  readonly shownBaseUrl?: string;
  /** scheme://host:port of baseUrl: the key of its connection pool ("" for the mock). */
  readonly origin: string;
  readonly apiKey: Secret | undefined;
  readonly headers: Readonly<Record<string, string>>;
  readonly query: Readonly<Record<string, string>>;
  /** `query` encoded for the URL ("" when there is none), built at config load. */
  readonly queryString: string;
  readonly health: HealthSettings;
  readonly region: string | undefined;
  readonly aws: { readonly accessKeyId: Secret; readonly secretAccessKey: Secret; readonly sessionToken: Secret | undefined } | undefined;
  readonly latencyMs: number;
}

/** Each vendor SDK's own default endpoint (config.md: version segment only for openai/responses). */
export function defaultBaseUrl(protocol: ProtocolName, region: string | undefined): string | undefined {
  switch (protocol) {
    case "openai":
    case "responses":
      return "https://api.openai.com/v1";
    case "anthropic":
      return "https://api.anthropic.com";
    case "gemini":
      return "https://generativelanguage.googleapis.com";
    case "cohere":
      return "https://api.cohere.com";
    case "bedrock":
      return region ? `https://bedrock-runtime.${region}.amazonaws.com` : undefined;
    case "mock":
      return undefined;
  }
}
