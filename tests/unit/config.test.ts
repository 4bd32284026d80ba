import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../support/temp.ts";
import { embeddedDefaultText } from "../../src/config/default.ts";
import { checkConfig, loadConfigText, loadConfigTree, locateConfig, parseConfigText, type LoadResult } from "../../src/config/load.ts";
import { readOverlay } from "../../src/config/overlay.ts";
import { ConfigHolder, poolFor } from "../../src/config/snapshot.ts";
import { NOT_YET_SUPPORTED } from "../../src/config/unsupported.ts";
import { makeTlsDir } from "../support/tls.ts";

const load = (yaml: string, env: Record<string, string> = {}) => loadConfigText(yaml, "test.yaml", { env });
const errorsOf = (result: LoadResult) => (result.ok ? [] : result.errors);
const okSnapshot = (result: LoadResult) => {
  if (!result.ok) throw new Error(`expected a valid config, got:\n${result.errors.join("\n")}`);
  return result.snapshot;
};

const MINIMAL = `
providers:
  up: {protocol: openai, base_url: "http://127.0.0.1:9/v1", api_key: {env: UP_KEY}}
models:
  m1: {provider: up, model: gpt-x}
pools:
  chat: {members: [{model: m1, weight: 2}]}
`;

describe("interpolation", () => {
  const parse = (text: string, env: Record<string, string> = {}, source = "f") => parseConfigText(text, source, env);
  const treeOf = (text: string, env: Record<string, string> = {}) => {
    const result = parse(text, env);
    if (!result.ok) throw new Error(result.errors.join("\n"));
    return result.tree;
  };

  test("substitutes set variables, defaults, and the literal escape", () => {
    expect(treeOf("a: ${A}\nb: ${B:-fallback}\nc: $${A}\n", { A: "one" })).toEqual({ a: "one", b: "fallback", c: "${A}" });
  });

  test("an unset variable is an error naming it and its line", () => {
    expect(parse("x: 1\nkey: ${NOT_SET_ANYWHERE}\n", {}, "gw.yaml")).toEqual({ ok: false, errors: ["gw.yaml:2: environment variable NOT_SET_ANYWHERE is not set (referenced as ${NOT_SET_ANYWHERE})"] });
  });

  test("comments are not interpolated", () => {
    expect(parse("# key: ${NOT_SET}\nx: 1 # ${NOT_SET_EITHER}", {}).ok).toBe(true);
  });

  test("a variable may stand for a number, a flag, part of a string, or a key; never for structure", () => {
    const snapshot = okSnapshot(load("listen: 127.0.0.1:${PORT}\n", { PORT: "9123" }));
    expect(snapshot.listeners.data.port).toBe(9123);
    const env = { N: "42", F: "true", K: "alpha", S: "a: [1, 2]", Q: 'x"y\\z' };
    expect(treeOf('n: ${N}\nf: ${F}\nq: "${N}"\n${K}: 1\ns: ${S}\nflow: {v: ${Q}}\nu: "${Q}"\n', env)).toEqual({ n: 42, f: true, q: "42", alpha: 1, s: "a: [1, 2]", flow: { v: 'x"y\\z' }, u: 'x"y\\z' });
  });

  test("a value from the environment is never quoted in an error, wherever it lands", () => {
    const env = { TOKEN: "sekrit-value-0123456789", LONG: `long-${"z".repeat(80)}` };
    const cases = ['listen: "${TOKEN}"', "listen: x${TOKEN}y", "models: {m: {provider: ${TOKEN}}}", "pools: {${TOKEN}/x: {members: [{model: ${TOKEN}}]}}", "routing: {on_exhausted: fallback_pool:${TOKEN}}", 'listen: "${LONG}"', "admin_listen: 10.0.0.1:${TOKEN}"];
    for (const text of cases) {
      const errors = errorsOf(load(`${text}\n`, env));
      expect(errors.length).toBeGreaterThan(0);
      for (const error of errors) {
        expect(error).not.toContain("sekrit");
        expect(error).not.toContain("zzzzzzzz");
      }
    }
    expect(errorsOf(load('listen: "${TOKEN}"\n', env))).toEqual(["listen: expected an address host:port (IPv6 as [::1]:port), got the value of ${TOKEN} (not shown)"]);
  });
});

describe("dry run without the environment (read-only validate)", () => {
  const dry = (yaml: string) => checkConfig({ yaml }, { env: { SET: "sekrit-value-0123456789" }, resolve: false });
  test("the verdict does not depend on whether a variable is set, nor on a file", () => {
    expect(dry('listen: "${SET}"\n')).toEqual(dry('listen: "${UNSET_X}"\n'));
    expect(dry('listen: "${SET}"\n').ok).toBe(true);
    expect(dry("auth: {signing_key: {file: /nonexistent}}\n")).toEqual({ ok: true, errors: [] });
    expect(dry("auth: {signing_key: {file: /etc/passwd}}\n")).toEqual({ ok: true, errors: [] });
  });
  test("other errors are still reported, and a malformed reference is one", () => {
    expect(dry("listen: ${SET}\nmodels: {m: {provider: ghost}}\n").errors).toEqual(['models.m.provider: unknown provider "ghost"']);
    expect(dry("listen: ${1BAD}\n").errors).toEqual(["yaml:1: malformed variable reference at column 9 (${...} takes a variable name of letters, digits and _, not starting with a digit; not shown)"]);
  });
});

describe("YAML bounds", () => {
  test("deep nesting and an alias bomb are refused whole, quickly", () => {
    const bomb = "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n";
    for (const text of [`a: ${"[".repeat(100_000)}`, `a:\n  ${"- ".repeat(100_000)}x\n`, `a: ${"{a: ".repeat(50_000)}`, bomb]) {
      const started = performance.now();
      const result = parseConfigText(text, "t", {});
      expect(performance.now() - started).toBeLessThan(200);
      expect(result).toMatchObject({ ok: false, refused: true });
    }
  });
  test("a text over 1 MiB is refused unread; duplicate keys are found in one pass, after ${VAR} expansion", () => {
    expect(parseConfigText(`a: 1\n${"#".repeat(1024 * 1024)}`, "t", {})).toMatchObject({ ok: false, refused: true });
    expect(parseConfigText("a: 1\nb: {x: 1, x: 2}\na: 3\n${A}: 1\n${B}: 2\n", "t", { A: "same", B: "same" })).toEqual({
      ok: false,
      errors: ["t:2: Map keys must be unique", "t:3: Map keys must be unique", "t:5: Map keys must be unique"],
    });
    const manyKeys = `hooks: {h: {kind: gate, settings: {${Array.from({ length: 40_000 }, (_, i) => `k${i}: 1`).join(", ")}}}}\n`;
    const started = performance.now();
    expect(parseConfigText(manyKeys, "t", {}).ok).toBe(true);
    expect(performance.now() - started).toBeLessThan(2000); // quadratic key checks took over 4 s here
  });

  test("a config as deep as the bound is read", () => {
    const deep = `hooks:\n  h:\n    kind: gate\n    settings: {x: ${"[".repeat(58)}${"]".repeat(58)}}\n`;
    expect(parseConfigText(deep, "t", {}).ok).toBe(true);
  });
});

describe("fail-loud startup cases", () => {
  test("unset ${VAR} stops the load, naming the variable", () => {
    expect(errorsOf(load("listen: ${GW_TEST_UNSET_LISTEN}\n")).join("\n")).toContain("GW_TEST_UNSET_LISTEN is not set");
  });

  test("unknown provider reference", () => {
    expect(errorsOf(load("models:\n  m: {provider: ghost}\n"))).toContain('models.m.provider: unknown provider "ghost"');
  });

  test("unknown protocol", () => {
    expect(errorsOf(load("providers:\n  p: {protocol: smoke-signals}\n"))[0]).toMatch(/^providers\.p\.protocol: expected one of openai \| anthropic .* got "smoke-signals"$/);
  });

  test("unknown auth module, ingress and admin", () => {
    const errors = errorsOf(load("auth:\n  chain: [keyz]\n  admin_auth: [passwords]\n"));
    expect(errors.some((e) => e.startsWith('auth.chain[0]: unknown auth module "keyz"'))).toBe(true);
    expect(errors.some((e) => e.startsWith('auth.admin_auth[0]: unknown auth module "passwords"'))).toBe(true);
  });

  test("invalid on_exhausted and an unknown fallback pool", () => {
    const errors = errorsOf(load(`${MINIMAL}  other: {members: [{model: m1}], on_exhausted: fallback_pool:nowhere}\n  third: {members: [{model: m1}], on_exhausted: retry}\n`, { UP_KEY: "k" }));
    expect(errors).toContain('pools.other.on_exhausted: unknown pool "nowhere"');
    expect(errors.some((e) => e.startsWith('pools.third.on_exhausted: expected reject | status_503 | least_bad | fallback_pool:<pool>, got "retry"'))).toBe(true);
  });

  test("a fallback_pool cycle", () => {
    const yaml = `${MINIMAL}  a: {members: [{model: m1}], on_exhausted: "fallback_pool:b"}\n  b: {members: [{model: m1}], on_exhausted: "fallback_pool:a"}\n`;
    expect(errorsOf(load(yaml, { UP_KEY: "k" }))).toContain("pools.a.on_exhausted: fallback_pool cycle a -> b -> a");
  });

  test("unreadable TLS files are named", () => {
    const errors = errorsOf(load("tls: {cert_file: /nonexistent/cert.pem, key_file: /nonexistent/key.pem}\n"));
    expect(errors).toEqual([
      "tls.cert_file: cannot read certificate /nonexistent/cert.pem (ENOENT)",
      "tls.key_file: cannot read private key /nonexistent/key.pem (ENOENT)",
    ]);
  });

  test("a TLS file that is not PEM is named", () => {
    const dir = tempDir("gw-cfg-");
    writeFileSync(join(dir, "junk.pem"), "not a certificate");
    const tls = makeTlsDir();
    const errors = errorsOf(load(`tls: {cert_file: ${dir}/junk.pem, key_file: ${tls}/key.pem}\n`));
    expect(errors).toEqual([`tls.cert_file: ${dir}/junk.pem is not a valid PEM certificate`]);
  });

  test("a non-loopback admin listener with an open admin chain refuses", () => {
    expect(errorsOf(load("admin_listen: 0.0.0.0:8081\n"))[0]).toStartWith("admin_listen: 0.0.0.0:8081 is not loopback");
  });

  test("an empty provider key warns and loads", () => {
    const snapshot = okSnapshot(load(MINIMAL, { UP_KEY: "" }));
    expect(snapshot.warnings.some((w) => w.includes("provider up: api_key variable UP_KEY is empty or unset"))).toBe(true);
    expect(snapshot.providers.get("up")?.apiKey?.empty).toBe(true);
  });
});

describe("validation reports every error at once, with paths", () => {
  test("schema and reference errors together", () => {
    const yaml = `
listen: not-an-address
bogus_section: 1
providers:
  p: {protocol: openai, api_key: 42}
models:
  m: {provider: nope}
pools:
  chat:
    members: [{model: m}, {model: missing, weight: 0}]
groups:
  g: {limits: [{window: week, requests: 5}]}
`;
    const errors = errorsOf(load(yaml));
    expect(errors.toSorted()).toEqual([
      'listen: expected an address host:port (IPv6 as [::1]:port), got "not-an-address"',
      "bogus_section: unknown member",
      "providers.p.api_key: expected a secret reference or a string (typically ${VAR}), got a number (not shown: a secret position)",
      "pools.chat.members[1].weight: expected number to be greater than 0, got 0",
      'groups.g.limits[0].window: expected one of minute | hour | day | month | total, got "week"',
      'models.m.provider: unknown provider "nope"',
      'pools.chat.members[1].model: unknown model "missing"',
    ].toSorted());
  });

  test("a provider header whose name HTTP cannot carry is refused at load, a secret in it not quoted", () => {
    // Accepted before, it failed every call to the provider (the upstream client refuses such a header).
    expect(errorsOf(load(`providers:\n  up: {protocol: openai, api_key: k, headers: {"bad name": x, x-ok: y}}\nmodels: {m: {provider: up}}\n`))).toEqual([
      "providers.up.headers[\"bad name\"]: invalid name: expected an HTTP header name (letters, digits and ! # $ % & ' * + . ^ _ ` | ~ -)",
    ]);
    const errors = errorsOf(load(`providers:\n  up: {protocol: openai, api_key: k, headers: {[\${SEKRET}]: x}}\nmodels: {m: {provider: up}}\n`, { SEKRET: "sk-live-abcdef123456" }));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toStartWith("providers.up.headers[");
    expect(errors.join("\n")).not.toContain("sk-live");
  });

  test("unknown members are errors at any depth", () => {
    const errors = errorsOf(load("limits: {max_inbound_concurrent: 5, max_inbound: 6}\nproviders:\n  p: {protocol: mock, colour: blue}\n"));
    expect(errors.toSorted()).toEqual(["limits.max_inbound: unknown member", "providers.p.colour: unknown member"]);
  });

  test("YAML syntax errors carry their line", () => {
    expect(errorsOf(load("listen: [\n"))[0]).toMatch(/^test\.yaml:\d+: /);
  });

  test("a duplicate key is an error, not a silent override", () => {
    expect(errorsOf(load("listen: 127.0.0.1:1\nlisten: 127.0.0.1:2\n")).length).toBe(1);
  });

  test("a document that is not a mapping", () => {
    expect(errorsOf(load("- a\n- b\n"))).toEqual(["(root): expected a mapping of config sections, got a list"]);
  });
});

describe("secret references", () => {
  test("a plaintext literal where a secret reference is required is an error that does not repeat it", () => {
    expect(errorsOf(load("auth:\n  signing_key: hunter2hunter2\n"))).toEqual([
      "auth.signing_key: expected a secret reference {env: NAME} or {file: PATH}, got a string (not shown: a secret position)",
    ]);
  });

  test("{env:} and {file:} resolve; the value never shows in JSON or strings", () => {
    const dir = tempDir("gw-cfg-");
    writeFileSync(join(dir, "admin-token"), "file-secret-value\n");
    const yaml = `auth:\n  admin_auth: [admin-tokens]\n  admin_tokens:\n    - {token: {env: ADMIN_T}, scope: read-only}\n    - {token: {file: ${dir}/admin-token}}\n`;
    const snapshot = okSnapshot(load(yaml, { ADMIN_T: "env-secret-value" }));
    const [first, second] = snapshot.auth.adminTokens;
    expect(first?.token.reveal()).toBe("env-secret-value");
    expect(first?.scope).toBe("read-only");
    expect(second?.token.reveal()).toBe("file-secret-value");
    expect(second?.scope).toBe("full");
    const everything = `${JSON.stringify(snapshot.auth)} ${String(first?.token)} ${Bun.inspect(snapshot.auth)}`;
    expect(everything).not.toContain("secret-value");
  });

  test("unset, empty and unreadable required secrets are errors naming the path", () => {
    const yaml = `auth:\n  signing_key: {env: SIGN_UNSET}\n  tokens: [{name: ci, token: {env: EMPTY_T}}]\n  admin_tokens: [{token: {file: /nonexistent/admin}}]\n`;
    expect(errorsOf(load(yaml, { EMPTY_T: "" }))).toEqual([
      "auth.admin_tokens[0].token: cannot read secret file /nonexistent/admin (ENOENT)",
      "auth.tokens[0].token: environment variable EMPTY_T is empty",
      "auth.signing_key: environment variable SIGN_UNSET is not set",
    ]);
  });
});

describe("the whole tree", () => {
  test("every section of config.md parses and validates", () => {
    const tls = makeTlsDir();
    writeFileSync(join(tls, "forge-secret"), "forge\n");
    const env = {
      TLS_DIR: tls,
      OPENAI_API_KEY: "sk-test",
      ANTHROPIC_API_KEY: "ak-test",
      AWS_ACCESS_KEY_ID: "AKIDTEST",
      AWS_SECRET_ACCESS_KEY: "aws-secret",
      GATEWAY_SIGNING_KEY: "s".repeat(32),
      CI_CLIENT_TOKEN: "ci-token",
      GATEWAY_ADMIN_TOKEN: "admin-token",
      OIDC_CLIENT_SECRET: "oidc-secret",
    };
    const text = readFileSync(join(import.meta.dir, "../fixtures/full.yaml"), "utf8");
    // config.md describes features this build does not carry yet: each is refused with its path.
    expect(errorsOf(load(text, env))).toEqual(NOT_YET_SUPPORTED.map((n) => `${n.path.replace("*", "chat")}: not supported by this build yet (lands with ${n.lands})`));
    const parsed = parseConfigText(text, "full.yaml", env);
    if (!parsed.ok) throw new Error(parsed.errors.join("\n"));
    const tree = parsed.tree as Record<string, Record<string, unknown>>;
    for (const key of ["hooks", "plugins", "export", "identity-providers", "role_bindings", "default_team", "public_url"]) delete tree[key];
    delete tree.pools!.hooks;
    delete (tree.pools!.chat as Record<string, unknown>).hooks;
    delete tree.auth!.key_ttl;
    delete tree.advanced!.response_headers;
    const snapshot = okSnapshot(loadConfigTree(tree, "full.yaml", { env }));
    expect([...snapshot.pools.keys()].filter((p) => !snapshot.pools.get(p)?.implicit)).toEqual(["chat"]);
    expect(snapshot.providers.get("aws")?.baseUrl).toBe("https://bedrock-runtime.us-east-1.amazonaws.com");
    expect(snapshot.listeners.data.tls?.ca).toContain("BEGIN CERTIFICATE");
    expect(snapshot.pools.get("chat")?.breaker).toEqual({ error_rate: 0.5, window_secs: 60, min_requests: 5, consecutive_n: 3, base_cooldown_secs: 15, max_cooldown_secs: 120 });
  });

  test("defaults fill what the file leaves out", () => {
    const snapshot = okSnapshot(load(MINIMAL, { UP_KEY: "k" }));
    expect(snapshot.config.limits).toEqual({ upstream_request_timeout_secs: 300, pool_max_idle_per_host: 64, pool_idle_timeout_secs: 90, max_inbound_concurrent: 4096, body_read_timeout_secs: 30, shutdown_drain_secs: 30, max_upstream_response_bytes: 33554432 });
    expect(snapshot.listeners.admin).toEqual({ hostname: "127.0.0.1", port: 8081, tls: undefined });
    expect(snapshot.pools.get("chat")?.failover).toEqual({ max_hops: 3, timeout_secs: 120 });
    expect(snapshot.pools.get("m1")?.implicit).toBe(true);
    expect(snapshot.lanes.get("m1")?.upstreamModel).toBe("gpt-x");
  });

  test("the snapshot is frozen", () => {
    const snapshot = okSnapshot(load(MINIMAL, { UP_KEY: "k" }));
    expect(Object.isFrozen(snapshot)).toBe(true);
    expect(Object.isFrozen(snapshot.config.limits)).toBe(true);
    expect(() => {
      (snapshot.config as { listen?: string }).listen = "0.0.0.0:1";
    }).toThrow();
  });

  test("the holder swaps the whole snapshot at once", () => {
    const first = okSnapshot(load(MINIMAL, { UP_KEY: "k" }));
    const second = okSnapshot(loadConfigTree({ listen: "127.0.0.1:1" }, "api", { env: {}, version: 1 }));
    const holder = new ConfigHolder(first);
    const seen = holder.current;
    expect(holder.swap(second)).toBe(first);
    expect(holder.current.version).toBe(1);
    expect(seen.version).toBe(0);
  });
});

describe("the embedded default", () => {
  test("loopback listeners, the mock provider, mock-1 in pool default, open data plane with a warning", () => {
    const snapshot = okSnapshot(load(embeddedDefaultText({})));
    expect(snapshot.listeners.data).toMatchObject({ hostname: "127.0.0.1", port: 8080 });
    expect(snapshot.listeners.admin).toMatchObject({ hostname: "127.0.0.1", port: 8081 });
    expect(snapshot.providers.get("local")?.protocol).toBe("mock");
    expect(snapshot.pools.get("default")?.members.map((m) => m.lane.name)).toEqual(["mock-1"]);
    expect(snapshot.config.store?.settings?.path).toBe("./gateway.db");
    expect(snapshot.warnings.some((w) => w.includes("OPEN RELAY"))).toBe(true);
  });

  test("a vendor's key variable adds a provider and a pool named after its protocol", () => {
    const env = { ANTHROPIC_API_KEY: "ak", GEMINI_API_KEY: "" };
    const snapshot = okSnapshot(load(embeddedDefaultText(env), env));
    expect(snapshot.providers.get("anthropic")?.apiKey?.reveal()).toBe("ak");
    expect(snapshot.pools.get("anthropic")?.members[0]?.lane.provider.name).toBe("anthropic");
    expect(snapshot.providers.has("gemini")).toBe(false);
  });

  test("used when there is no --config and no ./gateway.yaml", () => {
    const empty = tempDir("gw-cwd-");
    expect(locateConfig(undefined, {}, empty)).toMatchObject({ source: "embedded default" });
    writeFileSync(join(empty, "gateway.yaml"), "listen: 127.0.0.1:1\n");
    expect(locateConfig(undefined, {}, empty)).toMatchObject({ source: join(empty, "gateway.yaml") });
    expect(locateConfig("missing.yaml", {}, empty)).toEqual({ error: `cannot read config file ${join(empty, "missing.yaml")} (ENOENT)` });
  });
});

describe("bedrock credentials", () => {
  test("the AWS key pair goes together", () => {
    const errors = errorsOf(load("providers:\n  aws: {protocol: bedrock, region: us-east-1, aws_access_key_id: {env: K}}\n"));
    expect(errors).toEqual(["providers.aws: aws_access_key_id and aws_secret_access_key go together (aws_session_token needs both)"]);
  });
});

describe("pool name patterns", () => {
  const snapshot = (() => {
    const loaded = load(`providers:
  local: {protocol: mock}
models:
  mock-1: {provider: local}
  claude-exact: {provider: local}
pools:
  "claude-*": {members: [{model: mock-1}]}
  "*-mini": {members: [{model: mock-1}]}
  "claude-sonnet-*": {members: [{model: mock-1}]}
  "a.b*": {members: [{model: mock-1}]}
`);
    if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
    return loaded.snapshot;
  })();
  const poolOf = (model: string) => poolFor(snapshot, model)?.name;

  test("an exact pool or alias wins; else the first matching pattern in file order; else none", () => {
    expect(poolOf("claude-exact")).toBe("claude-exact");
    expect(poolOf("claude-sonnet-4-5-20250929")).toBe("claude-*");
    expect(poolOf("gpt-4o-mini")).toBe("*-mini");
    expect(poolOf("claude-haiku-mini")).toBe("claude-*");
    expect(poolOf("gpt-5")).toBeUndefined();
    expect(poolOf("claude")).toBeUndefined();
  });

  test("everything but `*` is literal", () => {
    expect(poolOf("a.bc")).toBe("a.b*");
    expect(poolOf("axbc")).toBeUndefined();
  });

  test("a pattern is still a pool name otherwise", () => {
    const bad = load(`providers: {local: {protocol: mock}}
models: {mock-1: {provider: local}}
pools:
  "has space*": {members: [{model: mock-1}]}
`);
    expect(bad.ok).toBe(false);
  });
});

describe("the overlay file", () => {
  const overlayOf = (text: string) => {
    const dir = tempDir("gw-overlay-");
    const path = join(dir, "gateway.overlay.yaml");
    writeFileSync(path, text);
    return readOverlay({ path, locked: false });
  };
  test("read with the same parser as the config, duplicate keys and bad YAML named", () => {
    expect(overlayOf("security: {max_body_bytes: 4096}\n")).toEqual({ ok: true, overlay: { security: { max_body_bytes: 4096 } } });
    expect(overlayOf("security: {}\nsecurity: {}\n")).toMatchObject({ ok: false, error: expect.stringContaining("line 2: Map keys must be unique") });
    expect(overlayOf("security: [\n")).toMatchObject({ ok: false, error: expect.stringContaining("is not valid YAML") });
    expect(overlayOf(`a: ${"[".repeat(1000)}`)).toMatchObject({ ok: false, error: expect.stringContaining("nests deeper than 64") });
  });
});
