// The admin plane against a web page and against bad bodies, on the built binary (issue 22, classes 2
// and 11): a page cannot reconfigure the open default (non-JSON bodies 415, foreign Origin 403, a Host
// that does not name the listener 403, so DNS rebinding reads nothing either); deep JSON is a 400 at
// once; a route that takes no body refuses one; out-of-range numbers and control characters are 400s
// naming the member; a body that never finishes is a 408 at limits.body_read_timeout_secs. Every answer
// is the admin envelope; refused mutations are audited.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { embeddedDefaultText } from "../../src/config/default.ts";
import { json, LISTEN_ANY, startGateway, type RunningGateway } from "../support/gateway.ts";

const ENV = { GW_ADMIN: "hardening-admin-token-4f1e", GW_SIGNING_KEY: "hardening-signing-key-77aa99" };
const CONFIG = `${LISTEN_ANY}
store: {module: sqlite, settings: {path: ./state/gateway.db}}
limits: {body_read_timeout_secs: 0.5}
security:
  admin_rate_limit: {per_second: 1000, burst: 10000}
  admin_allowed_origins: ["https://console.example.com"]
  admin_allowed_hosts: [gw.internal, "gw-admin.example:9443"]
providers:
  local: {protocol: mock}
models:
  mock-1: {provider: local}
pools:
  chat: {members: [{model: mock-1}]}
auth:
  chain: [keys]
  signing_key: {env: GW_SIGNING_KEY}
  admin_auth: [admin-tokens]
  admin_tokens: [{token: {env: GW_ADMIN}}]
groups:
  org: {limits: [{window: day, requests: 1000}]}
`;

let gw: RunningGateway;
let port: string;
beforeAll(async () => {
  gw = await startGateway(CONFIG, { env: ENV });
  port = new URL(gw.admin).port;
});
afterAll(async () => {
  await gw?.stop();
});

const JSON_TYPE = { "content-type": "application/json" };
const admin = (path: string, init: RequestInit = {}) => fetch(`${gw.admin}${path}`, { ...init, headers: { "x-admin-token": ENV.GW_ADMIN, ...JSON_TYPE, ...init.headers } });

async function envelope(response: Response, status: number, code: string): Promise<string> {
  const body = (await json(response)) as { error: { code: string; message: string } };
  expect({ status: response.status, code: body.error?.code }).toEqual({ status, code });
  expect(response.headers.get("content-type")).toContain("application/json");
  return body.error.message;
}

async function auditTail(n = 5): Promise<{ action: string; outcome: string; resource: string }[]> {
  return ((await json(await admin(`/audit?limit=${n}`))) as { items: { action: string; outcome: string; resource: string }[] }).items;
}

describe("the attack from the issue: a web page reconfigures the open embedded default", () => {
  // The embedded default as shipped (open admin plane, a provider from OPENAI_API_KEY), on free ports.
  const DEFAULT = embeddedDefaultText({ OPENAI_API_KEY: "sk-real" }).replace(/^listen: .*$/m, "listen: 127.0.0.1:0").replace(/^admin_listen: .*$/m, "admin_listen: 127.0.0.1:0");
  const attack = { config: { providers: { openai: { protocol: "openai", base_url: "http://evil.example/v1", api_key: { env: "OPENAI_API_KEY" } } } } };

  test("a simple cross-site POST (text/plain, foreign Origin) is refused and nothing changes", async () => {
    const open = await startGateway(DEFAULT, { env: { OPENAI_API_KEY: "sk-real" } });
    try {
      const before = await json(await fetch(`${open.admin}/config`));
      // What the page's `fetch(..., {method: "POST", mode: "no-cors", body})` sends.
      const simple = await fetch(`${open.admin}/config/apply`, { method: "POST", headers: { "content-type": "text/plain;charset=UTF-8", origin: "http://attacker.example" }, body: JSON.stringify(attack) });
      expect(await envelope(simple, 403, "forbidden")).toContain("Origin");
      // Same request without Origin (a form post from a page that suppresses it cannot; still: type refused).
      const textPlain = await fetch(`${open.admin}/config/apply`, { method: "POST", headers: { "content-type": "text/plain;charset=UTF-8" }, body: JSON.stringify(attack) });
      expect(await envelope(textPlain, 415, "invalid_request")).toContain("application/json");
      const form = await fetch(`${open.admin}/config/apply`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: JSON.stringify(attack) });
      await envelope(form, 415, "invalid_request");
      // DNS rebinding: the page's own name now points at 127.0.0.1; the browser sends Host: attacker.example.
      const rebound = await fetch(`${open.admin}/config`, { headers: { host: `attacker.example:${new URL(open.admin).port}` } });
      expect(await envelope(rebound, 403, "forbidden")).toContain("Host");
      const after = await json(await fetch(`${open.admin}/config`));
      expect(after).toEqual(before);
      expect(after.providers.find((p: { name: string }) => p.name === "openai").base_url).toBe("https://api.openai.com/v1");
    } finally {
      await open.stop();
    }
  });
});

describe("the attack from the issue, in every shape a page or a rebinding name can give it", () => {
  const DEFAULT = embeddedDefaultText({ OPENAI_API_KEY: "sk-real" }).replace(/^listen: .*$/m, "listen: 127.0.0.1:0").replace(/^admin_listen: .*$/m, "admin_listen: 127.0.0.1:0");
  const attack = JSON.stringify({ config: { providers: { openai: { protocol: "openai", base_url: "http://evil.example/v1", api_key: { env: "OPENAI_API_KEY" } } } } });

  test("no variant re-points the provider of the open embedded default", async () => {
    const open = await startGateway(DEFAULT, { env: { OPENAI_API_KEY: "sk-real" } });
    try {
      const openPort = new URL(open.admin).port;
      const apply = (headers: Record<string, string>) => fetch(`${open.admin}/config/apply`, { method: "POST", headers, body: attack });
      const variants: Record<string, string>[] = [
        { "content-type": "text/plain" },
        { "content-type": "application/x-www-form-urlencoded", origin: "http://attacker.example" },
        { "content-type": "multipart/form-data; boundary=x", origin: "http://attacker.example" },
        { "content-type": "application/json", origin: "http://attacker.example" },
        { "content-type": "application/json", origin: "null" },
        { "content-type": "application/json", origin: `https://127.0.0.1:${openPort}` },
        { "content-type": "application/json", origin: `http://127.0.0.1:${openPort}.attacker.example` },
        // A browser that sends no Origin still says the request is cross-site.
        { "content-type": "application/json", "sec-fetch-site": "cross-site" },
        { "content-type": "text/plain", "sec-fetch-site": "same-site" },
        // DNS rebinding: the page's own name, now pointing at 127.0.0.1, with the browser's same-origin Origin.
        { "content-type": "application/json", host: `attacker.example:${openPort}`, origin: `http://attacker.example:${openPort}` },
        { "content-type": "application/json", host: `127.0.0.1.attacker.example:${openPort}` },
        { "content-type": "application/json", host: `localhost.:${openPort}` },
      ];
      for (const headers of variants) {
        const response = await apply(headers);
        expect({ headers, status: response.status }).toEqual({ headers, status: headers["content-type"] === "text/plain" && !headers.origin && !headers["sec-fetch-site"] ? 415 : 403 });
      }
      // Over a raw socket: an absolute-form target and a second Host header change nothing either.
      for (const head of [`POST http://127.0.0.1:${openPort}/api/v1/admin/config/apply HTTP/1.1\r\nHost: attacker.example`, `POST /api/v1/admin/config/apply HTTP/1.1\r\nHost: 127.0.0.1:${openPort}\r\nHost: attacker.example`]) {
        const answer = await rawExchange(Number(openPort), `${head}\r\nContent-Type: application/json\r\nContent-Length: ${attack.length}\r\nConnection: close\r\n\r\n${attack}`);
        expect(answer.slice(9, 12)).toBe("403");
      }
      const config = await json(await fetch(`${open.admin}/config`));
      expect(config.version).toBe(0);
      expect(config.providers.find((p: { name: string }) => p.name === "openai").base_url).toBe("https://api.openai.com/v1");
    } finally {
      await open.stop();
    }
  });
});

/** Sends `request` as it is over one socket; resolves with what was read until the server closed it. */
function rawExchange(port: number, request: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(request));
    let got = "";
    socket.on("data", (chunk) => (got += chunk.toString("latin1")));
    const timer = setTimeout(() => socket.destroy(), 5000);
    socket.on("close", () => (clearTimeout(timer), resolve(got)));
    socket.on("error", () => {});
  });
}

describe("Origin and Host", () => {
  test("the listener's own origin under any of its names passes; a port, scheme or userinfo that differs does not", async () => {
    for (const origin of [`http://localhost:${port}`, `http://LOCALHOST:${port}`, `http://[::1]:${port}`]) {
      expect({ origin, status: (await admin("/info", { headers: { origin } })).status }).toEqual({ origin, status: 200 });
    }
    expect((await admin("/keys", { method: "POST", headers: { origin: `http://localhost:${port}` }, body: JSON.stringify({ name: "from-localhost" }) })).status).toBe(201);
    for (const origin of [`http://localhost:${Number(port) + 1}`, `https://localhost:${port}`, `http://user@localhost:${port}`, `http://localhost:${port}/`, "http://localhost", `http://localhost.:${port}`]) {
      expect({ origin, status: (await admin("/info", { headers: { origin } })).status }).toEqual({ origin, status: 403 });
    }
  });

  test("a change a browser marks cross-site (Sec-Fetch-Site) is refused without Origin too; reads and same-origin changes are not", async () => {
    for (const site of ["cross-site", "same-site"]) {
      const refused = await admin("/keys", { method: "POST", headers: { "sec-fetch-site": site }, body: JSON.stringify({ name: `from-${site}` }) });
      expect(await envelope(refused, 403, "forbidden")).toContain("Sec-Fetch-Site");
    }
    expect((await admin("/info", { headers: { "sec-fetch-site": "cross-site" } })).status).toBe(200);
    for (const site of ["same-origin", "none"]) {
      expect((await admin("/keys", { method: "POST", headers: { "sec-fetch-site": site }, body: JSON.stringify({ name: `from-${site}` }) })).status).toBe(201);
    }
  });

  test("a foreign Origin is refused on reads and mutations alike, before authentication", async () => {
    for (const origin of ["http://attacker.example", "null", `http://localhost:${Number(port) + 1}`, "https://console.example.com.evil"]) {
      await envelope(await admin("/info", { headers: { origin } }), 403, "forbidden");
      await envelope(await admin("/keys", { method: "POST", headers: { origin }, body: JSON.stringify({ name: "x" }) }), 403, "forbidden");
      await envelope(await fetch(`${gw.admin}/info`, { headers: { origin } }), 403, "forbidden");
    }
  });

  test("the listener's own origin and a configured origin pass", async () => {
    for (const origin of [`http://127.0.0.1:${port}`, "https://console.example.com", "HTTPS://Console.Example.com"]) {
      expect((await admin("/info", { headers: { origin } })).status).toBe(200);
    }
    const created = await admin("/keys", { method: "POST", headers: { origin: "https://console.example.com" }, body: JSON.stringify({ name: "from-console" }) });
    expect(created.status).toBe(201);
    // A console on a configured origin can use the API from a browser: the preflight, then ACAO on answers.
    const asked = "x-admin-token, content-type";
    const preflight = await fetch(`${gw.admin}/keys`, { method: "OPTIONS", headers: { origin: "https://console.example.com", "access-control-request-method": "POST", "access-control-request-headers": asked } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("https://console.example.com");
    expect(preflight.headers.get("access-control-allow-methods")).toContain("PATCH");
    expect(preflight.headers.get("access-control-allow-headers")).toBe(asked);
    expect(created.headers.get("access-control-allow-origin")).toBe("https://console.example.com");
    expect(created.headers.get("vary")).toContain("Origin");
    const foreignPreflight = await fetch(`${gw.admin}/keys`, { method: "OPTIONS", headers: { origin: "https://evil.example", "access-control-request-method": "POST" } });
    expect(foreignPreflight.status).toBe(403);
    expect(foreignPreflight.headers.get("access-control-allow-origin")).toBeNull();
    // Same origin under another name of the loopback listener.
    expect((await admin("/info", { headers: { host: `localhost:${port}`, origin: `http://localhost:${port}` } })).status).toBe(200);
  });

  test("Host must name the listener: its address, localhost on loopback, or a configured name", async () => {
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`, `[::1]:${port}`, "gw.internal", `gw.internal:${port}`, "gw.internal:1234", "gw-admin.example:9443"]) {
      const response = await admin("/info", { headers: { host } });
      expect({ host, status: response.status }).toEqual({ host, status: 200 });
    }
    for (const host of ["evil.example:8081", `evil.example:${port}`, `127.0.0.1:${Number(port) + 1}`, "127.0.0.1", "gw-admin.example:9444", `localhost.evil.example:${port}`, `10.0.0.1:${port}`]) {
      const response = await admin("/info", { headers: { host } });
      expect({ host, status: response.status }).toEqual({ host, status: 403 });
      expect(await envelope(response, 403, "forbidden")).toContain("admin_allowed_hosts");
    }
  });
});

describe("the curl recipes in docs/operations.md", () => {
  const curl = async (...args: string[]) => {
    const proc = Bun.spawn(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", ...args], { stdout: "pipe", stderr: "pipe" });
    const code = await new Response(proc.stdout).text();
    await proc.exited;
    return Number(code);
  };

  test("-H 'content-type: application/json' with -d works; -d alone (a form type) is 415", async () => {
    const A = ["-H", `x-admin-token:${ENV.GW_ADMIN}`, "-H", "content-type:application/json"];
    expect(await curl(...A, `${gw.admin}/keys`, "-d", '{"name": "ci-bot", "expires_in": "30d", "labels": {"team": "ml"}}')).toBe(201);
    expect(await curl("-H", `x-admin-token: ${ENV.GW_ADMIN}`, "-H", "content-type: application/json", "-X", "PATCH", `${gw.admin}/groups/org`, "-d", '{"limits": [{"window": "minute", "requests": 10}]}')).toBe(409);
    expect(await curl(...A, "-X", "POST", `${gw.admin}/config/reload`)).toBe(200);
    expect(await curl("-H", `x-admin-token:${ENV.GW_ADMIN}`, `${gw.admin}/keys`, "-d", '{"name": "ci-bot"}')).toBe(415);
  });
});

describe("bodies", () => {
  test("a mutation's body must be application/json (415), audited as rejected", async () => {
    for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""]) {
      const headers: Record<string, string> = type === "" ? {} : { "content-type": type };
      const response = await fetch(`${gw.admin}/keys`, { method: "POST", headers: { "x-admin-token": ENV.GW_ADMIN, ...headers }, body: new TextEncoder().encode(JSON.stringify({ name: "typed" })) });
      expect(await envelope(response, 415, "invalid_request")).toContain("content-type: application/json");
    }
    expect((await auditTail(1))[0]).toMatchObject({ action: "key.create", outcome: "rejected" });
    expect((await admin("/keys", { method: "POST", headers: { "content-type": "application/json; charset=utf-8" }, body: JSON.stringify({ name: "typed" }) })).status).toBe(201);
    // A dry run is a POST with a body too.
    await envelope(await admin("/config/validate", { method: "POST", headers: { "content-type": "text/plain" }, body: '{"yaml": ""}' }), 415, "invalid_request");
  });

  test("deeply nested JSON is a 400 in milliseconds, on every route, and the gateway stays responsive", async () => {
    const deep = `{"config": ${"[".repeat(100_000)}${"]".repeat(100_000)}}`;
    const timings: number[] = [];
    for (const path of ["/config/validate", "/config/apply", "/keys", "/groups", "/config/settings"]) {
      const method = path === "/config/settings" ? "PUT" : "POST";
      const started = performance.now();
      const response = await admin(path, { method, body: deep });
      timings.push(performance.now() - started);
      expect(await envelope(response, 400, "invalid_request")).toContain("deeper than 64 levels");
    }
    timings.sort((a, b) => a - b);
    // Under 10 ms on an idle machine (a 200 KB round trip included); the bound leaves room for a busy CI.
    expect(timings[2]!).toBeLessThan(100);
    // 64 levels is still accepted (the validator answers, whatever it thinks of the config).
    const ok = await admin("/config/validate", { method: "POST", body: `{"config": {"x": ${"[".repeat(60)}${"]".repeat(60)}}}` });
    expect(ok.status).toBe(200);
    expect((await fetch(`${gw.data}/healthz`)).status).toBe(200);
  });

  test("a route that takes no body refuses one that is neither empty nor {}, audited, nothing done", async () => {
    const key = (await json(await admin("/keys", { method: "POST", body: JSON.stringify({ name: "bodyless" }) }))) as { id: string };
    for (const body of ['{"force": true}', "[]", "null", '"x"', "0"]) {
      const message = await envelope(await admin(`/keys/${key.id}/revoke`, { method: "POST", body }), 400, "invalid_request");
      if (body.startsWith("{")) expect(message).toContain("takes no request body");
    }
    expect((await auditTail(1))[0]).toMatchObject({ action: "key.revoke", outcome: "rejected", resource: `key:${key.id}` });
    expect(((await json(await admin(`/keys/${key.id}`))) as { state: string }).state).toBe("active");
    await envelope(await admin("/restart", { method: "POST", body: '{"now": true}' }), 400, "invalid_request");
    await envelope(await admin("/groups/org", { method: "DELETE", body: '{"cascade": true}' }), 400, "invalid_request");
    // Empty and {} are what clients send for "no body".
    expect((await admin(`/keys/${key.id}/revoke`, { method: "POST", body: "{}" })).status).toBe(200);
    expect((await admin(`/keys/${key.id}`, { method: "DELETE" })).status).toBe(200);
    expect((await fetch(`${gw.admin}/groups/org`, { headers: { "x-admin-token": ENV.GW_ADMIN } })).status).toBe(200);
  });
});

/** Headers and the start of a body that never ends, on a raw admin socket; resolves with all it read, and when. */
function stalledBody(path: string, framing: string): Promise<{ answer: string; ms: number }> {
  return new Promise((resolve) => {
    const started = performance.now();
    const head = `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nx-admin-token: ${ENV.GW_ADMIN}\r\nContent-Type: application/json\r\n${framing}`;
    const socket = connect(Number(port), "127.0.0.1", () => socket.write(head));
    let answer = "";
    socket.on("data", (chunk) => (answer += chunk.toString("latin1")));
    const timer = setTimeout(() => socket.destroy(), 5000);
    socket.on("close", () => (clearTimeout(timer), resolve({ answer, ms: performance.now() - started })));
    socket.on("error", () => {});
  });
}

describe("a body that never finishes", () => {
  test("is a 408 at limits.body_read_timeout_secs on every route with a body, audited; other requests go on", async () => {
    const stalled = [
      stalledBody("/api/v1/admin/config/validate", "Content-Length: 100\r\n\r\n{"),
      stalledBody("/api/v1/admin/keys", "Transfer-Encoding: chunked\r\n\r\n1\r\n{\r\n"),
      stalledBody("/api/v1/admin/keys/none/revoke", "Content-Length: 10\r\n\r\n{"),
    ];
    await Bun.sleep(100);
    expect((await admin("/keys")).status).toBe(200);
    for (const { answer, ms } of await Promise.all(stalled)) {
      // Before the deadline the admin handler waited on such a body for as long as the client kept the socket.
      expect(answer.slice(9, 12)).toBe("408");
      expect(answer.toLowerCase()).toContain("connection: close");
      expect(answer).toContain('{"error":{"code":"invalid_request","message":"The request body was not received within 0.5 s (limits.body_read_timeout_secs)."}}');
      expect(ms).toBeLessThan(2500);
    }
    expect((await auditTail(2)).map((e) => `${e.action} ${e.outcome}`)).toEqual(expect.arrayContaining(["key.create rejected", "key.revoke rejected"]));
  });
});

describe("numbers, dates and names", () => {
  test("expiries past 9999-12-31 are a 400 naming the member, not a 500", async () => {
    for (const [body, member] of [
      [{ name: "a", expires_at: 1e300 }, "/expires_at"],
      [{ name: "a", expires_at: 2 ** 53 + 2 }, "/expires_at"],
      [{ name: "a", expires_at: 253_402_300_800 }, "/expires_at"],
      [{ name: "a", expires_in: "99999999999999999999d" }, "/expires_in"],
      [{ name: "a", expires_in: "999999999999s" }, "/expires_in"],
    ] as const) {
      expect(await envelope(await admin("/keys", { method: "POST", body: JSON.stringify(body) }), 400, "invalid_request")).toContain(member);
    }
    expect((await admin("/keys", { method: "POST", body: JSON.stringify({ name: "far", expires_at: 253_402_300_799 }) })).status).toBe(201);
  });

  test("group limit figures past 2^53-1 are a 400 naming the member", async () => {
    const cases: [string, string, unknown, string][] = [
      ["POST", "/groups", { name: "huge", limits: [{ window: "day", requests: 1e300 }] }, "/limits/0/requests"],
      ["POST", "/groups", { name: "huge", limits: [{ window: "day", requests: 5 }, { window: "month", budget_cents: 2 ** 63 }] }, "/limits/1/budget_cents"],
      ["POST", "/groups", { name: "huge", limits: [{ concurrent: 1e300 }] }, "/limits/0/concurrent"],
      ["POST", "/groups", { name: "huge", child_default: [{ window: "day", tokens: 1e300 }] }, "/child_default/0/tokens"],
    ];
    for (const [method, path, body, member] of cases) expect(await envelope(await admin(path, { method, body: JSON.stringify(body) }), 400, "invalid_request")).toContain(member);
    expect((await fetch(`${gw.admin}/groups/huge`, { headers: { "x-admin-token": ENV.GW_ADMIN } })).status).toBe(404);
    expect((await admin("/groups", { method: "POST", body: JSON.stringify({ name: "team", limits: [{ window: "day", requests: 100 }] }) })).status).toBe(201);
    expect(await envelope(await admin("/groups/team", { method: "PATCH", body: JSON.stringify({ limits: [{ window: "day", requests: 1e300 }] }) }), 400, "invalid_request")).toContain("/limits/0/requests");
    expect((await auditTail(1))[0]).toMatchObject({ action: "group.update", outcome: "rejected" });
  });

  test("control characters in key and group names are a 400 naming the member", async () => {
    for (const [body, member] of [
      [{ name: "evil\nINFO forged log line" }, "/name"],
      [{ name: "bell\u0007" }, "/name"],
      [{ name: "c1\u0085" }, "/name"],
      [{ name: "ok", group: "g\u0000", parent: "org" }, "/group"],
      [{ name: "ok", group: "child", parent: "org\u001b" }, "/parent"],
      [{ name: "ok", labels: { team: "a\rb" } }, "/labels/team"],
      [{ name: "ok", allowed_pools: ["chat", "x\u0000"] }, "/allowed_pools/1"],
    ] as const) {
      expect(await envelope(await admin("/keys", { method: "POST", body: JSON.stringify(body) }), 400, "invalid_request")).toContain(member);
    }
    const key = (await json(await admin("/keys", { method: "POST", body: JSON.stringify({ name: "plain" }) }))) as { id: string };
    expect(await envelope(await admin(`/keys/${key.id}`, { method: "PATCH", body: JSON.stringify({ name: "x\ty" }) }), 400, "invalid_request")).toContain("/name");
    expect(await envelope(await admin("/groups", { method: "POST", body: JSON.stringify({ name: "g\u0001" }) }), 400, "invalid_request")).toContain("/name");
  });
});

test("a restart-only admin_listen change waiting for the restart does not lock the running listener out", async () => {
  const put = await admin("/config/settings", { method: "PUT", body: JSON.stringify({ admin_listen: "10.0.0.5:8081" }) });
  expect(put.status).toBe(200);
  expect(((await json(put)) as { reload_to_apply: string[] }).reload_to_apply).toContain("admin_listen");
  expect((await admin("/info")).status).toBe(200);
  expect((await admin("/info", { headers: { host: `localhost:${port}` } })).status).toBe(200);
  expect((await admin("/info", { headers: { host: "10.0.0.5:8081" } })).status).toBe(403);
});

describe("paths", () => {
  test("a malformed percent-escape in an admin path is a 400 in the envelope, not a lookup of `null`", async () => {
    for (const [method, path] of [["GET", "/keys/%zz"], ["POST", "/keys/%zz/revoke"], ["GET", "/groups/%E0%A4%A"], ["DELETE", "/groups/%"]] as const) {
      const message = await envelope(await admin(path, { method }), 400, "invalid_request");
      expect(message).toContain("percent-escape");
    }
    // A well-formed escape still reaches its route.
    expect((await admin("/groups/%6Frg")).status).toBe(200);
  });
});
