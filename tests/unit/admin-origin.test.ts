// Which Host and Origin the admin listener accepts, for the listener shapes an e2e test cannot bind
// safely (0.0.0.0, ::, a named host) or that need TLS. The loopback case runs on the binary in
// tests/e2e/admin-hardening.test.ts.
import { describe, expect, test } from "bun:test";
import { siteRefusal, type BoundListener } from "../../src/admin/origin.ts";
import type { Snapshot } from "../../src/config/snapshot.ts";

type Site = { snapshot: Snapshot; listener: BoundListener };
const snapshot = (hostname: string, security: object = {}, tls = false): Site => ({
  snapshot: { config: { security } } as unknown as Snapshot,
  listener: { hostname, port: 8081, tls: tls ? { cert: "", key: "", ca: undefined } : undefined },
});
const request = (headers: Record<string, string>) => new Request("http://127.0.0.1:8081/api/v1/admin/info", { headers });
const accepts = (s: Site, headers: Record<string, string>) => siteRefusal(s.snapshot, request(headers), s.listener) === undefined;

describe("a wildcard listener (0.0.0.0, ::)", () => {
  for (const hostname of ["0.0.0.0", "::"]) {
    const s = snapshot(hostname, { admin_allowed_hosts: ["gateway.internal"] });
    test(`${hostname}: any IP literal on its port, localhost, and configured names`, () => {
      for (const host of ["10.1.2.3:8081", "192.168.0.7:8081", "[fe80::1]:8081", "[::1]:8081", "localhost:8081", "127.0.0.1:8081", "gateway.internal:8081", "gateway.internal"]) expect({ host, ok: accepts(s, { host }) }).toEqual({ host, ok: true });
    });
    test(`${hostname}: a DNS name it was not given, or another port, is refused`, () => {
      for (const host of ["attacker.example:8081", "10.1.2.3:8082", "10.1.2.3", "localhost:9", "1.2.3.4.evil.example:8081"]) expect({ host, ok: accepts(s, { host }) }).toEqual({ host, ok: false });
    });
  }
});

describe("a named or TLS listener", () => {
  test("a listener bound to a LAN address answers to that address only (no localhost)", () => {
    const s = snapshot("10.0.0.5");
    expect(accepts(s, { host: "10.0.0.5:8081" })).toBe(true);
    expect(accepts(s, { host: "localhost:8081" })).toBe(false);
    expect(accepts(s, { host: "10.0.0.6:8081" })).toBe(false);
  });

  test("an IPv6 loopback listener", () => {
    const s = snapshot("::1");
    for (const host of ["[::1]:8081", "localhost:8081", "127.0.0.1:8081"]) expect(accepts(s, { host })).toBe(true);
  });

  test("TLS: the own origin is https, and a Host without a port means 443", () => {
    const s = snapshot("127.0.0.1", {}, true);
    expect(accepts(s, { host: "127.0.0.1:8081", origin: "https://127.0.0.1:8081" })).toBe(true);
    expect(accepts(s, { host: "127.0.0.1:8081", origin: "http://127.0.0.1:8081" })).toBe(false);
    const on443 = snapshot("127.0.0.1", {}, true);
    expect(siteRefusal(on443.snapshot, request({ host: "localhost" }), { ...on443.listener, port: 443 })).toBeUndefined();
  });

  test("an Origin naming the listener by another of its names; the default port may be left out, as browsers do", () => {
    const s = snapshot("127.0.0.1");
    for (const origin of ["http://localhost:8081", "http://[::1]:8081"]) expect({ origin, ok: accepts(s, { host: "127.0.0.1:8081", origin }) }).toEqual({ origin, ok: true });
    for (const origin of ["http://localhost:8082", "https://localhost:8081", "http://localhost", "http://10.0.0.5:8081"]) expect({ origin, ok: accepts(s, { host: "127.0.0.1:8081", origin }) }).toEqual({ origin, ok: false });
    const on443 = snapshot("127.0.0.1", {}, true);
    expect(siteRefusal(on443.snapshot, request({ host: "127.0.0.1:443", origin: "https://localhost" }), { ...on443.listener, port: 443 })).toBeUndefined();
    // A LAN listener does not answer to localhost, so neither is it its origin.
    expect(accepts(snapshot("10.0.0.5"), { host: "10.0.0.5:8081", origin: "http://localhost:8081" })).toBe(false);
  });

  test("Sec-Fetch-Site cross-site or same-site without Origin refuses a change, not a read", () => {
    const s = snapshot("127.0.0.1");
    const post = (headers: Record<string, string>) => siteRefusal(s.snapshot, new Request("http://127.0.0.1:8081/api/v1/admin/keys", { method: "POST", headers }), s.listener);
    expect(post({ "sec-fetch-site": "cross-site" })).toContain("Sec-Fetch-Site");
    expect(post({ "sec-fetch-site": "same-site" })).toContain("Sec-Fetch-Site");
    expect(post({ "sec-fetch-site": "same-origin" })).toBeUndefined();
    expect(post({})).toBeUndefined();
    expect(accepts(s, { "sec-fetch-site": "cross-site" })).toBe(true);
  });

  test("the lists are read per snapshot: a new snapshot with a new origin accepts it", () => {
    expect(accepts(snapshot("127.0.0.1"), { origin: "https://ui.example" })).toBe(false);
    expect(accepts(snapshot("127.0.0.1", { admin_allowed_origins: ["https://ui.example"] }), { origin: "https://ui.example" })).toBe(true);
  });
});
