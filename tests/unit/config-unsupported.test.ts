// Config this build cannot honour yet is refused with its path (src/config/unsupported.ts), on every
// way a config is judged: a load (boot, --check, reload, apply) and the admin dry run with or without
// resolving the environment.
import { describe, expect, test } from "bun:test";
import { checkConfig, loadConfigText } from "../../src/config/load.ts";
import { NOT_YET_SUPPORTED, unsupportedErrors } from "../../src/config/unsupported.ts";

const BASE = "providers: {p: {protocol: mock}}\nmodels: {m: {provider: p}}\n";
const refusal = (path: string, lands: string) => `${path}: not supported by this build yet (lands with ${lands})`;
const landsOf = (path: string) => NOT_YET_SUPPORTED.find((n) => n.path === path)!.lands;

describe("config this build cannot honour yet", () => {
  const cases: [string, string][] = [
    ["advanced.response_headers.server_timing", "advanced: {response_headers: {server_timing: true}}\n"],
  ];
  for (const [path, yaml] of cases) {
    test(`${path} is refused with its path by a load and by both dry runs`, () => {
      const loaded = loadConfigText(BASE + yaml, "t.yaml", { env: {} });
      expect(loaded.ok).toBe(false);
      if (!loaded.ok) expect(loaded.errors).toContain(refusal(path, landsOf(path)));
      for (const resolve of [true, false]) {
        const verdict = checkConfig({ yaml: BASE + yaml }, { env: {}, resolve });
        expect(verdict.ok).toBe(false);
        expect(verdict.errors).toContain(refusal(path, landsOf(path)));
      }
    });
  }

  test("hooks, global and per pool, and the route-policy header load (they are honoured now)", () => {
    const loaded = loadConfigText(`${BASE}pools: {hooks: [h], chat: {members: [{model: m}], hooks: [h]}}\nhooks: {h: {kind: gate, builtin: regex-redact, prompt: rw, settings: {patterns: ["x"]}}}\nadvanced: {response_headers: {route_policy: false}}\n`, "t.yaml", { env: {} });
    expect(loaded.ok ? [] : loaded.errors).toEqual([]);
  });

  test("identity providers, role bindings, default_team, public_url and auth.key_ttl load (the token exchange honours them)", () => {
    const yaml = "public_url: https://gw.example.com\nauth: {signing_key: {env: K}, key_ttl: 30d, chain: [keys, corp]}\ngroups: {ml: {}}\ndefault_team: ml\nrole_bindings: {corp: {ml: {group: ml}}}\nidentity-providers: {corp: {module: oidc, settings: {issuer: https://i.example, audience: gw}}}\n";
    const loaded = loadConfigText(BASE + yaml, "t.yaml", { env: { K: "k".repeat(32) } });
    expect(loaded.ok ? [] : loaded.errors).toEqual([]);
  });

  test("plugins: is supported: a trust posture with a fetch list loads", () => {
    const yaml = `plugins: {dir: ./plugins, trusted_keys: {acme: ${"ab".repeat(32)}}, allowlist: ["acme/*"], fetch: [acme/redactor@1.0.0], registry_url: "http://127.0.0.1:1"}\n`;
    const loaded = loadConfigText(BASE + yaml, "t.yaml", { env: {} });
    expect(loaded.ok ? [] : loaded.errors).toEqual([]);
  });

  test("an empty map or list asks for nothing and loads; so does a config without them", () => {
    for (const yaml of ["", "hooks: {}\nplugins: {}\nexport: {}\nrole_bindings: {}\nidentity-providers: {}\n", "pools: {hooks: [], chat: {members: [{model: m}], hooks: []}}\nadvanced: {response_headers: {}, config_versions_retained: 5}\n"]) {
      const loaded = loadConfigText(BASE + yaml, "t.yaml", { env: {} });
      expect(loaded.ok ? [] : loaded.errors).toEqual([]);
    }
  });

  test("the check reads the tree as written, not a defaulted one, and costs nothing without them", () => {
    expect(unsupportedErrors({ auth: { chain: [] }, advanced: { config_versions_retained: 3 } })).toEqual([]);
    expect(unsupportedErrors({ advanced: { response_headers: { server_timing: true } } })).toEqual([refusal("advanced.response_headers.server_timing", landsOf("advanced.response_headers.server_timing"))]);
    expect(unsupportedErrors(null)).toEqual([]);
  });
});
