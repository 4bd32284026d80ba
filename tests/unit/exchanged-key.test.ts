// An exchanged key's id is derived from the signing key, the identity and the generation: the same
// inputs give the same id (and, minted with the generation's expiry, the same token), any other input
// another id, in the shape of a minted key's random id.
import { describe, expect, test } from "bun:test";
import { exchangedKeyId, mintToken, verifyToken } from "../../src/governance/token.ts";

const SIGNING = "s".repeat(48);

describe("exchanged key ids", () => {
  test("one id per identity and generation, the same on every call", () => {
    const id = exchangedKeyId("user:alice", 1, SIGNING);
    expect(id).toMatch(/^key_[0-9a-f]{24}$/);
    expect(exchangedKeyId("user:alice", 1, SIGNING)).toBe(id);
    const others = [exchangedKeyId("user:alice", 2, SIGNING), exchangedKeyId("user:bob", 1, SIGNING), exchangedKeyId("forge:alice", 1, SIGNING), exchangedKeyId("user:alice", 1, "t".repeat(48)), exchangedKeyId("1:user:alice", 0, SIGNING)];
    expect(new Set([id, ...others]).size).toBe(others.length + 1);
  });

  test("minted with the generation's expiry, the token is the same on every exchange and verifies", () => {
    const exp = 1_800_000_000;
    const claims = { kid: exchangedKeyId("user:alice", 3, SIGNING), sub: "user:alice", exp };
    const token = mintToken(claims, SIGNING);
    expect(mintToken(claims, SIGNING)).toBe(token);
    expect(verifyToken(token, SIGNING, exp - 1)).toEqual({ ok: true, claims });
    expect(verifyToken(token, SIGNING, exp)).toEqual({ ok: false, reason: "expired" });
  });
});
