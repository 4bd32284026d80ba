// One way to read JSON from an identity provider (discovery, a token endpoint, a forge's REST API): within
// a deadline, bounded in size and nesting, redirects not followed. A network or TLS fault and a body that
// is not JSON are the provider's (IssuerUnreachable: the caller answers 500 / 502); a status is handed back
// for the caller to judge, since a refused code is the sign-in's fault, not the provider's.
import { boundedText } from "../http/bounded-body.ts";
import { jsonTextTooDeep } from "../http/json-depth.ts";
import type * as Tls from "node:tls";

export const ISSUER_TIMEOUT_MS = 5_000;
/** A discovery document, a key set or a token answer larger than this is refused (real ones are a few KiB). */
export const ISSUER_MAX_BYTES = 256 * 1024;

export class IssuerUnreachable extends Error {}

export async function issuerJson(http: typeof fetch, url: string, init: RequestInit, what: string): Promise<{ status: number; body: unknown }> {
  let answer: Response;
  try {
    answer = await http(url, { ...init, redirect: "manual", signal: AbortSignal.timeout(ISSUER_TIMEOUT_MS) });
  } catch (error) {
    throw new IssuerUnreachable(`${what}: ${(error as Error).message}`);
  }
  let text: string;
  try {
    text = await boundedText(answer, ISSUER_MAX_BYTES, what);
  } catch (error) {
    throw new IssuerUnreachable((error as Error).message);
  }
  if (jsonTextTooDeep(text)) throw new IssuerUnreachable(`${what}: JSON nested too deep`);
  try {
    return { status: answer.status, body: JSON.parse(text) };
  } catch {
    throw new IssuerUnreachable(`${what}: HTTP ${answer.status}, not JSON`);
  }
}

/**
 * `base` trusting `caPem` besides the public roots (a provider's ca_cert_pem; never instead of them). Bun's
 * `tls.ca` replaces the default roots, so the public ones are passed along. node:tls is required only then:
 * the bundle hoists a builtin's import, and every start would load it.
 */
export function trusting(caPem: string | undefined, base: typeof fetch = fetch): typeof fetch {
  if (!caPem) return base;
  const ca = [...(require("node:tls") as typeof Tls).rootCertificates, caPem];
  return ((url: string | URL | Request, init?: RequestInit) => base(url, { ...init, tls: { ca } } as RequestInit)) as typeof fetch;
}
