// No admin route, no `--check` line and no boot-log line shows a value the gateway holds in its
// environment, a file or a secret position (issue 22, class 1): a read-only admin once read the full
// admin token back from POST /config/validate with `listen: "${GATEWAY_ADMIN_TOKEN}"`. Errors still
// name the path and the rule. Plus the YAML bounds of class 11: an alias bomb and deep nesting posted
// as config text are refused with a 400 at once.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { json, LISTEN_ANY, runGateway, startGateway, tempDir, type RunningGateway } from "../support/gateway.ts";

const secret = (prefix: string) => `${prefix}-${randomBytes(12).toString("hex")}`;
const SECRETS = {
  GATEWAY_ADMIN_TOKEN: secret("adm"),
  GW_SIGNING_KEY: secret("sign"),
  GW_PROVIDER_KEY: secret("sk-prov"),
  // A value JSON must escape, and one longer than an error's quote is cut at (60 characters).
  GW_ODD_SECRET: `odd"quote\\back-${randomBytes(8).toString("hex")}`,
  GW_LONG_SECRET: `long-${randomBytes(40).toString("hex")}`,
  // Read differently from its text: trimmed when unquoted, or a number (a leading zero dropped, digits rounded).
  GW_SPACED_SECRET: `  spaced ${randomBytes(8).toString("hex")}  `,
  GW_DIGITS_SECRET: `0${[...randomBytes(18)].map((b) => b % 10).join("")}`,
  // Names a pool of the boot config: a later change's errors must not show it either.
  GW_POOL_SECRET: `pool-${randomBytes(10).toString("hex")}`,
};
const VIEWER = secret("viewer");
/** A password written into a base_url's userinfo (a literal, not from the environment). */
const URL_PASSWORD = secret("urlpw");
const ENV = { ...SECRETS, GW_VIEWER_TOKEN: VIEWER };

const CONFIG = `${LISTEN_ANY}store: {module: sqlite, settings: {path: ":memory:"}}
providers:
  up: {protocol: openai, base_url: "http://127.0.0.1:9/v1", api_key: {env: GW_PROVIDER_KEY}}
  vendor: {protocol: openai, base_url: "http://ops:${URL_PASSWORD}@127.0.0.1:9/\${GW_LONG_SECRET}/v1", api_key: {env: GW_PROVIDER_KEY}}
models:
  m1: {provider: up}
pools:
  "\${GW_POOL_SECRET}": {members: [{model: m1}]}
  b: {members: [{model: m1}], on_exhausted: "fallback_pool:\${GW_POOL_SECRET}"}
security: {admin_rate_limit: {per_second: 100000, burst: 100000}}
auth:
  chain: [keys]
  signing_key: {env: GW_SIGNING_KEY}
  admin_auth: [admin-tokens]
  admin_tokens:
    - {name: root, token: {env: GATEWAY_ADMIN_TOKEN}, scope: full}
    - {name: viewer, token: {env: GW_VIEWER_TOKEN}, scope: read-only}
`;

/** Every way a secret could show: whole, JSON-escaped, or any 10 characters of it. */
function leaks(text: string): string[] {
  const found: string[] = [];
  for (const [name, value] of Object.entries(SECRETS)) {
    const forms = [value.trim(), JSON.stringify(value.trim()).slice(1, -1)];
    for (let i = 0; i + 10 <= value.trim().length; i++) forms.push(value.trim().slice(i, i + 10));
    if (forms.some((form) => text.includes(form))) found.push(name);
  }
  return found;
}

/** A gate naming a builtin this build lacks: judged whole, and refused for that one reason. */
const NO_SUCH_BUILTIN = 'hooks.h.builtin: unknown compiled-in hook "nope" (http-gate | regex-redact)';

/** Config texts with `${V}` in every kind of member; V is each secret variable in turn. */
const PROBES: { yaml: (v: string) => string; path: string }[] = [
  { yaml: (v) => `listen: "\${${v}}"\n`, path: "listen" },
  { yaml: (v) => `listen: \${${v}}\n`, path: "listen" },
  { yaml: (v) => `admin_listen: "10.0.0.1:\${${v}}"\n`, path: "admin_listen" },
  { yaml: (v) => `providers: {p: {protocol: openai, base_url: "http://up.example/\${${v}} x"}}\n`, path: "providers.p.base_url" },
  { yaml: (v) => `providers: {p: {protocol: "\${${v}}"}}\n`, path: "providers.p.protocol" },
  { yaml: (v) => `models: {m: {provider: "\${${v}}"}}\n`, path: "models.m.provider" },
  { yaml: (v) => `models: {"\${${v}}": {provider: ghost}}\n`, path: "models" },
  { yaml: (v) => `models: {m: {provider: up}}\nproviders: {up: {protocol: mock}}\npools: {"\${${v}}/x": {members: [{model: nope}]}}\n`, path: "pools" },
  { yaml: (v) => `groups:\n  g:\n    limits:\n      - {window: "\${${v}}", requests: 1}\n`, path: "groups.g.limits[0].window" },
  { yaml: (v) => `routing: {on_exhausted: "fallback_pool:\${${v}}"}\n`, path: "routing.on_exhausted" },
  { yaml: (v) => `hooks: {h: {kind: gate, on_error: "\${${v}}"}}\n`, path: "hooks.h.on_error" },
  { yaml: (v) => `auth: {chain: ["\${${v}}"], key_ttl: "\${${v}}"}\n`, path: "auth." },
  { yaml: (v) => `limits: {max_inbound_concurrent: "\${${v}}"}\n`, path: "limits.max_inbound_concurrent" },
  { yaml: (v) => `tls: {cert_file: "/nonexistent/\${${v}}", key_file: /nonexistent/k}\n`, path: "tls.cert_file" },
];
/** Literals in secret positions: refused, never repeated. */
const LITERALS: { yaml: string; path: string }[] = [
  { yaml: `auth: {signing_key: "${SECRETS.GW_SIGNING_KEY}"}\n`, path: "auth.signing_key" },
  { yaml: `auth: {admin_auth: [admin-tokens], admin_tokens: [{token: "${SECRETS.GATEWAY_ADMIN_TOKEN}"}]}\n`, path: "auth.admin_tokens[0].token" },
  { yaml: `auth: {tokens: [{name: t, token: "${SECRETS.GW_LONG_SECRET}"}]}\n`, path: "auth.tokens[0].token" },
  { yaml: `providers: {p: {protocol: openai, api_key: [${JSON.stringify(SECRETS.GW_PROVIDER_KEY)}], headers: {x-key: [${JSON.stringify(SECRETS.GW_ODD_SECRET)}]}}}\n`, path: "providers.p." },
  { yaml: `providers: {p: {protocol: openai, query: {key: {v: "${SECRETS.GW_PROVIDER_KEY}"}}}}\n`, path: "providers.p.query.key" },
  { yaml: `providers: {p: {protocol: bedrock, region: us-east-1, aws_access_key_id: "${SECRETS.GW_SIGNING_KEY}", aws_secret_access_key: "${SECRETS.GW_LONG_SECRET}", aws_session_token: "${SECRETS.GW_PROVIDER_KEY}"}}\n`, path: "providers.p.aws_secret_access_key" },
  { yaml: `identity-providers: {forge: {module: forge, settings: {client_id: c}, browser_login: {client_secret: "${SECRETS.GW_PROVIDER_KEY}"}}}\n`, path: "identity-providers.forge.browser_login.client_secret" },
  // The secret written where its entry or map belongs: a bare token in the list, a header line, the client secret itself.
  { yaml: `auth: {admin_auth: [admin-tokens], admin_tokens: ["${SECRETS.GATEWAY_ADMIN_TOKEN}"]}\n`, path: "auth.admin_tokens[0]" },
  { yaml: `auth: {chain: [tokens], tokens: ["${SECRETS.GW_LONG_SECRET}"]}\n`, path: "auth.tokens[0]" },
  { yaml: `providers: {p: {protocol: openai, headers: "Authorization: Bearer ${SECRETS.GW_PROVIDER_KEY}"}}\n`, path: "providers.p.headers" },
  { yaml: `providers: {p: {protocol: openai, query: "key=${SECRETS.GW_PROVIDER_KEY}"}}\n`, path: "providers.p.query" },
  { yaml: `identity-providers: {forge: {module: forge, settings: {client_id: c}, browser_login: "${SECRETS.GW_SIGNING_KEY}"}}\n`, path: "identity-providers.forge.browser_login" },
];

let gw: RunningGateway;
beforeAll(async () => {
  gw = await startGateway(CONFIG, { env: ENV });
});
afterAll(async () => {
  await gw?.stop();
});

const post = (token: string, path: string, body: unknown) =>
  fetch(`${gw.admin}${path}`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify(body) });
const FULL = SECRETS.GATEWAY_ADMIN_TOKEN;

describe("POST /config/validate and /config/apply never echo a secret", () => {
  test("${VAR} of every secret variable, in every kind of member, by both scopes", async () => {
    for (const variable of Object.keys(SECRETS)) {
      for (const probe of PROBES) {
        const yaml = probe.yaml(variable);
        for (const [token, route] of [[VIEWER, "/config/validate"], [FULL, "/config/validate"], [FULL, "/config/apply"]] as const) {
          const response = await post(token, route, { yaml });
          const text = await response.text();
          expect({ route, yaml, leaked: leaks(text) }).toEqual({ route, yaml, leaked: [] });
          expect(response.status).toBeLessThan(500);
        }
      }
    }
  });

  test("with full scope the errors still name the path and the variable, not the value", async () => {
    for (const probe of PROBES) {
      const body = await json(await post(FULL, "/config/validate", { yaml: probe.yaml("GATEWAY_ADMIN_TOKEN") }));
      expect(body.ok).toBe(false);
      expect(body.errors.some((e: string) => e.startsWith(probe.path))).toBe(true);
    }
    const listen = await json(await post(FULL, "/config/validate", { yaml: 'listen: "${GATEWAY_ADMIN_TOKEN}"\n' }));
    expect(listen.errors).toEqual(["listen: expected an address host:port (IPv6 as [::1]:port), got the value of ${GATEWAY_ADMIN_TOKEN} (not shown)"]);
    const apply = await post(FULL, "/config/apply", { yaml: 'listen: "${GW_PROVIDER_KEY}"\n' });
    expect(apply.status).toBe(400);
    expect((await json(apply)).error.message).toContain("listen: expected an address host:port");
  });

  test("a literal secret where a reference is required is refused without quoting it, by every route", async () => {
    for (const literal of LITERALS) {
      for (const [token, route] of [[VIEWER, "/config/validate"], [FULL, "/config/validate"], [FULL, "/config/apply"]] as const) {
        const response = await post(token, route, { yaml: literal.yaml });
        const text = await response.text();
        expect({ route, leaked: leaks(text) }).toEqual({ route, leaked: [] });
        expect(text).toContain(literal.path);
      }
    }
    // The same as a JSON config object.
    const response = await post(VIEWER, "/config/validate", { config: { auth: { signing_key: SECRETS.GW_SIGNING_KEY } } });
    expect(await json(response)).toEqual({ ok: false, errors: ["auth.signing_key: expected a secret reference {env: NAME} or {file: PATH}, got a string (not shown: a secret position)"] });
  });

  test("read-only: the verdict does not tell whether a variable is set or a file exists", async () => {
    const verdict = async (yaml: string) => (await post(VIEWER, "/config/validate", { yaml })).text();
    const pairs = [
      ['listen: "${GATEWAY_ADMIN_TOKEN}"\n', 'listen: "${GW_NEVER_SET_ANYWHERE}"\n'],
      ["auth: {signing_key: {env: GW_SIGNING_KEY}}\n", "auth: {signing_key: {env: GW_NEVER_SET_ANYWHERE}}\n"],
      ["auth: {signing_key: {file: /etc/passwd}}\n", "auth: {signing_key: {file: /nonexistent/secret}}\n"],
      ["tls: {cert_file: /etc/passwd, key_file: /etc/hostname}\n", "tls: {cert_file: /nonexistent/a, key_file: /nonexistent/b}\n"],
    ];
    for (const [a, b] of pairs) expect(await verdict(a!)).toBe(await verdict(b!));
    expect(JSON.parse(await verdict("auth: {signing_key: {file: /nonexistent/secret}}\n"))).toEqual({ ok: true, errors: [] });
    // Shape is still checked.
    expect((await json(await post(VIEWER, "/config/validate", { yaml: "listen: ${1BAD}\n" }))).errors).toEqual(["yaml:1: malformed variable reference at column 9 (${...} takes a variable name of letters, digits and _, not starting with a digit; not shown)"]);
    expect((await json(await post(VIEWER, "/config/validate", { yaml: "auth: {signing_key: {env: ''}}\n" }))).errors[0]).toStartWith("auth.signing_key.env: ");
  });
});

describe("PUT /config/settings over a base that took values from the environment", () => {
  test("an error about the base names the variable, not its value", async () => {
    const response = await fetch(`${gw.admin}/config/settings`, {
      method: "PUT",
      headers: { authorization: `Bearer ${FULL}`, "content-type": "application/json" },
      body: JSON.stringify({ routing: { on_exhausted: "fallback_pool:b" } }),
    });
    const text = await response.text();
    expect(response.status).toBe(400);
    expect(leaks(text)).toEqual([]);
    expect(text).toContain("pools.${GW_POOL_SECRET}.on_exhausted: fallback_pool cycle ${GW_POOL_SECRET} -> b -> ${GW_POOL_SECRET}");
  });
});

describe("--check and the boot log never print a secret", () => {
  const BAD = (v: string) => `listen: "\${${v}}"
providers:
  p: {protocol: openai, base_url: "http://up.example/\${GW_LONG_SECRET} x", api_key: [${JSON.stringify(SECRETS.GW_PROVIDER_KEY)}]}
models:
  m: {provider: "\${GW_ODD_SECRET}"}
pools:
  "\${GW_SIGNING_KEY}/x": {members: [{model: m}]}
auth:
  signing_key: "${SECRETS.GW_SIGNING_KEY}"
  admin_auth: [admin-tokens]
  admin_tokens: [{token: "${SECRETS.GATEWAY_ADMIN_TOKEN}"}]
`;
  test("gateway --check names every path, quotes no secret", async () => {
    const dir = tempDir();
    const path = join(dir, "bad.yaml");
    writeFileSync(path, BAD("GATEWAY_ADMIN_TOKEN"));
    const result = await runGateway(["--check", "--config", path], { env: ENV });
    expect(result.code).toBe(1);
    expect(leaks(result.stdout + result.stderr)).toEqual([]);
    for (const at of ["listen:", "providers.p.base_url:", "providers.p.api_key:", "models.m.provider:", "pools.${GW_SIGNING_KEY}/x:", "auth.signing_key:", "auth.admin_tokens[0].token:"]) {
      expect(result.stderr).toContain(at);
    }
  });

  test("a boot that stops on the config logs no secret", async () => {
    const dir = tempDir();
    const path = join(dir, "bad.yaml");
    // Each kind of leak on its own line of the log (the odd secret would make an older gateway stop at a YAML error).
    writeFileSync(path, `listen: "\${GW_PROVIDER_KEY}"\nauth: {signing_key: "${SECRETS.GW_SIGNING_KEY}", admin_auth: [admin-tokens], admin_tokens: [{token: "${SECRETS.GATEWAY_ADMIN_TOKEN}"}]}\n`);
    const result = await runGateway(["--config", path], { env: ENV, cwd: dir });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("config invalid; not starting");
    expect(leaks(result.stdout + result.stderr)).toEqual([]);
    for (const at of ["listen:", "auth.signing_key:", "auth.admin_tokens[0].token:"]) expect(result.stderr).toContain(at);
  });
});

describe("YAML that would stall the process is refused with a 400 at once", () => {
  const BOMB = ["a: &a [x, x, x, x, x, x, x, x, x]", ..."bcdefgh".split("").map((n, i) => `${n}: &${n} [${Array(9).fill(`*${"abcdefgh"[i]}`).join(", ")}]`)].join("\n") + "\n";
  const DEEP = [`a: ${"[".repeat(100_000)}${"]".repeat(100_000)}\n`, `a:\n  ${"- ".repeat(100_000)}x\n`, `a: ${"{a: ".repeat(50_000)}1${"}".repeat(50_000)}\n`, `${"? ".repeat(100_000)}x\n`];

  test("an alias bomb and deep nesting, to validate (both scopes) and apply", async () => {
    for (const yaml of [BOMB, ...DEEP]) {
      for (const [token, route] of [[VIEWER, "/config/validate"], [FULL, "/config/validate"], [FULL, "/config/apply"]] as const) {
        const started = performance.now();
        const response = await post(token, route, { yaml });
        const elapsed = performance.now() - started;
        expect(response.status).toBe(400);
        const body = await json(response);
        expect(body.error.code).toBe("invalid_request");
        expect(body.error.message).toMatch(/YAML (aliases expand|nests deeper)/);
        expect(elapsed).toBeLessThan(1000);
      }
    }
    // Nothing was applied, and the gateway answers as before.
    const info = await fetch(`${gw.admin}/info`, { headers: { authorization: `Bearer ${VIEWER}` } });
    expect((await json(info)).config_version).toBe(0);
  });

  test("a text over 1 MiB is refused unread; 40,000 keys in one mapping take well under a second", async () => {
    const huge = await post(VIEWER, "/config/validate", { yaml: `a: 1\n${"#".repeat(1024 * 1024)}` });
    expect(huge.status).toBe(400);
    expect((await json(huge)).error.message).toContain("longer than");
    const yaml = `hooks: {h: {kind: gate, builtin: nope, settings: {${Array.from({ length: 40_000 }, (_, i) => `k${i}: 1`).join(", ")}}}}\n`;
    const started = performance.now();
    expect(await json(await post(VIEWER, "/config/validate", { yaml }))).toEqual({ ok: false, errors: [NO_SUCH_BUILTIN] });
    expect(performance.now() - started).toBeLessThan(2000); // each key was compared with every earlier one: over 4 s
  });

  test("a config nested as deep as the bound still validates", async () => {
    const yaml = `hooks:\n  h:\n    kind: gate\n    builtin: nope\n    settings: {x: ${"[".repeat(58)}${"]".repeat(58)}}\n`;
    // Read and judged (not refused as too deep): its one error is the builtin this build lacks.
    expect(await json(await post(VIEWER, "/config/validate", { yaml }))).toEqual({ ok: false, errors: [NO_SUCH_BUILTIN] });
  });
});

describe("{env: NAME} takes a variable name: a secret pasted there is refused without being repeated", () => {
  const PASTED = secret("sk-live-pasted");
  const TEXTS = [
    `auth: {signing_key: {env: "${PASTED}"}}\n`,
    `providers: {p: {protocol: openai, api_key: {env: "${PASTED}"}}}\n`,
    `providers: {p: {protocol: bedrock, region: us-east-1, aws_access_key_id: {env: "${PASTED}"}, aws_secret_access_key: {env: "AKIA ${PASTED}"}}}\n`,
    `auth: {admin_auth: [admin-tokens], admin_tokens: [{token: {env: "${PASTED}"}}]}\n`,
  ];

  test("by validate (both scopes) and apply", async () => {
    for (const yaml of TEXTS) {
      for (const [token, route] of [[VIEWER, "/config/validate"], [FULL, "/config/validate"], [FULL, "/config/apply"]] as const) {
        const text = await (await post(token, route, { yaml })).text();
        expect({ route, yaml, shown: text.includes(PASTED.slice(-16)) }).toEqual({ route, yaml, shown: false });
        expect(text).toContain(".env: expected an environment variable name");
      }
    }
  });

  test("by --check and the boot log", async () => {
    const dir = tempDir();
    const path = join(dir, "pasted.yaml");
    writeFileSync(path, `${LISTEN_ANY}${TEXTS[0]}providers: {p: {protocol: openai, api_key: {env: "${PASTED}"}}}\n`);
    for (const args of [["--check", "--config", path], ["--config", path]]) {
      const result = await runGateway(args, { env: ENV, cwd: dir });
      expect(result.code).toBe(1);
      expect(result.stdout + result.stderr).not.toContain(PASTED.slice(-16));
      expect(result.stderr).toContain("auth.signing_key.env:");
      expect(result.stderr).toContain("providers.p.api_key.env:");
    }
  });

  test("${...} around a pasted secret is a malformed reference, named by line and column, not quoted", async () => {
    const yaml = `providers: {p: {protocol: openai, api_key: "\${${PASTED}}"}}\n`;
    for (const [token, route] of [[VIEWER, "/config/validate"], [FULL, "/config/validate"], [FULL, "/config/apply"]] as const) {
      const text = await (await post(token, route, { yaml })).text();
      expect({ route, shown: text.includes(PASTED.slice(-16)) }).toEqual({ route, shown: false });
      expect(text).toContain("yaml:1: malformed variable reference at column 45");
    }
    const dir = tempDir();
    const path = join(dir, "wrapped.yaml");
    writeFileSync(path, `${LISTEN_ANY}${yaml}`);
    for (const args of [["--check", "--config", path], ["--config", path]]) {
      const result = await runGateway(args, { env: ENV, cwd: dir });
      expect(result.code).toBe(1);
      expect(result.stdout + result.stderr).not.toContain(PASTED.slice(-16));
      expect(result.stderr).toContain("malformed variable reference at column 45");
    }
  });
});

describe("what a read-only admin can read after a full admin applied configs holding secrets", () => {
  const viewer = (path: string) => fetch(`${gw.admin}${path}`, { headers: { authorization: `Bearer ${VIEWER}` } });

  test("a read-only principal's changes are refused before anything is resolved: a file that exists and one that does not answer alike", async () => {
    const attempts = (file: string) => [
      post(VIEWER, "/config/apply", { yaml: `auth: {signing_key: {file: ${file}}}\n` }),
      fetch(`${gw.admin}/config/settings`, { method: "PUT", headers: { authorization: `Bearer ${VIEWER}`, "content-type": "application/json" }, body: JSON.stringify({ tls: { cert_file: file, key_file: file } }) }),
    ];
    for (const [a, b] of (await Promise.all(attempts("/etc/passwd"))).map((r, i) => [r, i] as const)) {
      const other = (await Promise.all(attempts("/nonexistent/secret")))[b]!;
      expect(a.status).toBe(403);
      expect((await a.text()).replaceAll("/etc/passwd", "F")).toBe((await other.text()).replaceAll("/nonexistent/secret", "F"));
    }
  });

  test("no view shows a value from the environment, a file, a secret position or a base_url's userinfo", async () => {
    writeFileSync(join(gw.dir, "provider.key"), `${SECRETS.GW_PROVIDER_KEY}\n`);
    const next = CONFIG.replace("providers:\n", `providers:\n  filed: {protocol: anthropic, base_url: "http://\${GW_SIGNING_KEY}.example", api_key: {file: ${join(gw.dir, "provider.key")}}, headers: {x-k: "\${GW_ODD_SECRET}"}, query: {key: "\${GW_DIGITS_SECRET}"}}\n`);
    const applied = await post(FULL, "/config/apply", { yaml: next });
    expect(applied.status).toBe(200);
    const version = (await json(applied)).config_version;
    const paths = ["/config", "/config/versions", `/config/versions/${version}`, `/config/versions/${version - 1}`, `/config/diff?from=${version - 1}&to=${version}`, "/config/settings", "/info", "/audit", "/keys", "/groups", "/admin-auth", "/openapi.json"];
    // A pool named by a variable is a name clients call (GET /v1/models lists it): views show names.
    const valuesIn = (text: string) => leaks(text).filter((name) => name !== "GW_POOL_SECRET");
    for (const path of paths) {
      const response = await viewer(path);
      const text = await response.text();
      expect({ path, status: response.status, leaked: valuesIn(text), password: text.includes(URL_PASSWORD) }).toEqual({ path, status: 200, leaked: [], password: false });
    }
    const providers = (await json(await viewer("/config"))).providers as { name: string; base_url: string }[];
    expect(providers.find((p) => p.name === "vendor")!.base_url).toBe("http://***@127.0.0.1:9/${GW_LONG_SECRET}/v1");
    expect(providers.find((p) => p.name === "filed")!.base_url).toContain("${GW_SIGNING_KEY}");
    for (const path of ["/stats", "/metrics", "/v1/models", "/healthz"]) expect(valuesIn(await (await fetch(`${gw.data}${path}`)).text())).toEqual([]);
  });
});
