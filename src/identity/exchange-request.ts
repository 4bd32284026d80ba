// What a POST /auth/token (or /refresh) asks for (design/identity.md): the ID token, from the JSON body
// `{"id_token", "provider"}` or from `Authorization: Bearer <jwt>` (the body then optional, `{"provider"}`
// at most), and the oidc instance to verify it with: the one named, else the only oidc instance, else the
// one whose `issuer` is the token's own `iss` (read unverified, only to choose; the chosen instance then
// verifies everything). Refusals follow the design's table: 400 for the request's shape or provider,
// 401 for no token. Nothing is verified or issued here.
import { decodeJwt } from "jose";
import { jsonTextTooDeep } from "../http/json-depth.ts";

export interface ProviderInstance {
  readonly name: string;
  readonly module: "oidc" | "forge";
  /** oidc only. */
  readonly issuer?: string;
}

export type ExchangeRequest =
  | { readonly ok: true; readonly token: string; readonly instance: ProviderInstance }
  | { readonly ok: false; readonly status: 400 | 401; readonly code: "invalid_request" | "unauthorized"; readonly message: string };

const MEMBERS = new Set(["id_token", "provider"]);
const refuse = (message: string): ExchangeRequest => ({ ok: false, status: 400, code: "invalid_request", message });

/** `text` is the body as read (bounded by the listener); `authorization` the header, if any. */
export function readExchangeRequest(text: string, authorization: string | null, instances: readonly ProviderInstance[]): ExchangeRequest {
  let body: Record<string, unknown> = {};
  if (text.trim() !== "") {
    if (jsonTextTooDeep(text)) return refuse("request body nests JSON too deep");
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return refuse("request body is not valid JSON");
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return refuse("request body must be a JSON object");
    body = parsed as Record<string, unknown>;
    for (const key of Object.keys(body)) if (!MEMBERS.has(key)) return refuse(`/${key}: unknown member (allowed: id_token, provider)`);
    if (body.id_token !== undefined && (typeof body.id_token !== "string" || body.id_token === "")) return refuse("/id_token: expected a non-empty string");
    if (body.provider !== undefined && (typeof body.provider !== "string" || body.provider === "")) return refuse("/provider: expected a non-empty string");
  }
  const bearer = authorization !== null && /^Bearer\s+/i.test(authorization) ? authorization.replace(/^Bearer\s+/i, "").trim() : undefined;
  const fromBody = body.id_token as string | undefined;
  if (fromBody !== undefined && bearer !== undefined && bearer !== "") return refuse("give the ID token once: in the body's id_token or as Authorization: Bearer, not both");
  const token = fromBody ?? (bearer === "" ? undefined : bearer);
  // The provider's name is checked first: a wrong name is the request's fault whether or not a token came.
  const named = body.provider as string | undefined;
  let instance: ProviderInstance | undefined;
  if (named !== undefined) {
    instance = instances.find((i) => i.name === named);
    if (!instance) return refuse(`/provider: no identity provider named ${JSON.stringify(named.slice(0, 100))}`);
    if (instance.module !== "oidc") return refuse(`/provider: ${named} is a ${instance.module} provider; an ID token is exchanged with an oidc one`);
  }
  if (token === undefined) return { ok: false, status: 401, code: "unauthorized", message: "no ID token: send {\"id_token\": \"<jwt>\"} or Authorization: Bearer <jwt>" };
  if (instance) return { ok: true, token, instance };
  const oidc = instances.filter((i) => i.module === "oidc");
  if (oidc.length === 0) return refuse("no oidc identity provider is configured on this gateway");
  if (oidc.length === 1) return { ok: true, token, instance: oidc[0]! };
  const issuer = unverifiedIssuer(token);
  const matching = issuer === undefined ? [] : oidc.filter((i) => i.issuer === issuer);
  if (matching.length === 1) return { ok: true, token, instance: matching[0]! };
  return refuse(`/provider: several oidc providers are configured and ${matching.length === 0 ? "none has the token's issuer" : "more than one has the token's issuer"}; name one (${oidc.map((i) => i.name).join(", ")})`);
}

/** The token's `iss`, undefined when it is not a JWT: it only chooses an instance, and is never trusted. */
function unverifiedIssuer(token: string): string | undefined {
  try {
    const iss = decodeJwt(token).iss;
    return typeof iss === "string" ? iss : undefined;
  } catch {
    return undefined;
  }
}
