// The identity-provider checks of design/identity.md "Validation", each with its path, reported with the
// refusal that identity providers are not supported yet (so an operator fixes both in one round), and
// never echoing a secret's or a certificate's text.
import { describe, expect, test } from "bun:test";
import { loadConfigText } from "../../src/config/load.ts";

const BASE = "providers: {p: {protocol: mock}}\nmodels: {m: {provider: p}}\n";
const errorsOf = (yaml: string) => {
  const loaded = loadConfigText(BASE + yaml, "t.yaml", { env: {} });
  return loaded.ok ? [] : loaded.errors;
};
const OIDC = "module: oidc, settings: {issuer: https://i.example, audience: gw}";

describe("identity-provider config checks", () => {
  test("browser_login needs public_url", () => {
    const errors = errorsOf(`identity-providers: {corp: {${OIDC}, browser_login: {client_secret: {env: S}}}}\n`);
    expect(errors).toContain("identity-providers.corp.browser_login: needs public_url (the base of the sign-in callback)");
    expect(errorsOf(`public_url: https://gw.example\nidentity-providers: {corp: {${OIDC}, browser_login: {client_secret: {env: S}}}}\n`).filter((e) => e.includes("public_url ("))).toEqual([]);
  });

  test("ca_cert_pem must be a certificate, and its text is not shown", () => {
    const errors = errorsOf(`identity-providers: {corp: {module: oidc, settings: {issuer: https://i.example, audience: gw, ca_cert_pem: "-----BEGIN CERTIFICATE-----\\nSECRETISH\\n-----END CERTIFICATE-----"}}}\n`);
    expect(errors).toContain("identity-providers.corp.settings.ca_cert_pem: not a PEM certificate");
    expect(errors.join("\n")).not.toContain("SECRETISH");
  });

  test("a chain naming a forge instance, and admin_auth naming a max_admin_scope: none instance", () => {
    const errors = errorsOf(`auth: {signing_key: {env: K}, chain: [keys, forge], admin_auth: [locked]}\nidentity-providers: {forge: {module: forge, settings: {client_id: c}}, locked: {${OIDC}, max_admin_scope: none}}\n`);
    expect(errors).toContain('auth.chain[1]: "forge" is a forge provider, which signs people in to issue keys and verifies no request (put keys in the chain)');
    expect(errors).toContain('auth.admin_auth[0]: "locked" has max_admin_scope: none and never reaches the admin plane');
  });

  test("`oidc` in a chain with no oidc instance", () => {
    expect(errorsOf("auth: {chain: [oidc]}\n")).toContain('auth.chain[0]: "oidc" stands for every oidc identity provider, and none is configured');
    expect(errorsOf(`auth: {chain: [oidc]}\nidentity-providers: {corp: {${OIDC}}}\n`).filter((e) => e.includes("stands for"))).toEqual([]);
  });

  test("a plaintext client_secret is refused without repeating it, over every way a config is judged", () => {
    const yaml = `public_url: https://gw.example\nauth: {signing_key: {env: K}}\nidentity-providers: {corp: {${OIDC}, browser_login: {client_secret: plain-client-secret-value}}}\n`;
    const errors = errorsOf(yaml);
    expect(errors.some((e) => e.startsWith("identity-providers.corp.browser_login.client_secret: expected a secret reference"))).toBe(true);
    expect(errors.join("\n")).not.toContain("plain-client-secret-value");
  });

  test("each module's settings are checked by its schema, with their paths", () => {
    const errors = errorsOf(`auth: {signing_key: {env: K}}\nidentity-providers: {corp: {module: oidc, settings: {issuer: not-a-url, audience: gw, role_claim: 7, colour: blue}}, forge: {module: forge, settings: {scopes: "read:org", fetch_orgs: maybe}, browser_login: {client_secret: {env: F}}}}\n`);
    for (const expected of ["identity-providers.corp.settings.issuer:", "identity-providers.corp.settings.role_claim:", "identity-providers.corp.settings.colour:", "identity-providers.forge.settings.client_id:", "identity-providers.forge.settings.scopes:", "identity-providers.forge.settings.fetch_orgs:"]) {
      expect({ expected, found: errors.some((e) => e.startsWith(expected)) }).toEqual({ expected, found: true });
    }
  });

  test("a forge provider needs browser_login; an instance may not take a built-in module's name; identity providers need a signing key", () => {
    const errors = errorsOf(`identity-providers: {forge: {module: forge, settings: {client_id: c}}, keys: {${OIDC}}}\n`);
    expect(errors).toContain("identity-providers.forge.browser_login: required: a forge provider signs people in only through the browser (it verifies no token)");
    expect(errors.some((e) => e.startsWith('identity-providers.keys: "keys" is a built-in auth module'))).toBe(true);
    const loaded = loadConfigText(BASE + `identity-providers: {corp: {${OIDC}}}\n`, "t.yaml", { env: {} });
    expect(loaded.ok ? [] : loaded.errors).toContain("auth.signing_key: identity providers issue keys, which need a signing key");
  });
});
