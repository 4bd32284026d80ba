// The trust posture (config `plugins:`): who may sign (trusted_keys), what may be installed (allowlist),
// and where plugins live (dir). Built from the running config each time it is asked: an install or a
// load is rare, and a reload that changes a key must be honoured at once.
import { resolve } from "node:path";
import * as ed from "@noble/ed25519";
import type { GatewayConfig } from "../config/schema.ts";

export interface TrustPosture {
  /** Absolute. */
  readonly dir: string;
  /** publisher -> ed25519 public key. */
  readonly keys: ReadonlyMap<string, Uint8Array>;
  readonly allowlist: readonly string[];
}

export function trustPosture(config: Readonly<GatewayConfig>): TrustPosture {
  const plugins = config.plugins ?? {};
  return {
    dir: resolve(plugins.dir ?? "./plugins"),
    keys: new Map(Object.entries(plugins.trusted_keys ?? {}).map(([publisher, hex]) => [publisher, Buffer.from(hex, "hex")])),
    allowlist: plugins.allowlist ?? [],
  };
}

/** `*` matches any run of characters within one segment (`acme/*`, `*-labs/redact-*`). */
function patternRegex(pattern: string): RegExp {
  const source = pattern
    .split("*")
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
    .join("[^/]*");
  return new RegExp(`^${source}$`);
}

export const isAllowed = (posture: TrustPosture, publisher: string, name: string): boolean =>
  posture.allowlist.some((pattern) => patternRegex(pattern).test(`${publisher}/${name}`));

/** `manifest.sig`'s text: base64 (surrounding whitespace allowed) of a 64-byte signature; undefined if not. */
export function decodeSignature(text: string): Uint8Array | undefined {
  const trimmed = text.trim();
  const bytes = strictBase64(trimmed);
  return bytes?.length === 64 ? bytes : undefined;
}

/** Base64 that decodes to exactly what it says: no stray characters, padding or non-canonical tail. */
export function strictBase64(text: string): Buffer | undefined {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return undefined;
  const bytes = Buffer.from(text, "base64");
  return bytes.toString("base64") === text ? bytes : undefined;
}

/** ed25519 over the exact manifest bytes, under the publisher's trusted key. */
export async function signatureValid(key: Uint8Array, signature: Uint8Array, manifest: Uint8Array): Promise<boolean> {
  try {
    return await ed.verifyAsync(signature, manifest, key);
  } catch {
    return false; // a key that is not a curve point
  }
}
