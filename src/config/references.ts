// Checks that need the whole tree: every name that refers to another section must resolve.
// It runs even when the schema check failed, so one pass reports every error; hence the defensive reads.
import { ADMIN_AUTH_MODULES, IDENTITY_MODULES, INGRESS_AUTH_MODULES, pluginName } from "../auth/modules.ts";
import { COMPILED_HOOKS, COMPILED_SETTINGS_PROBLEMS } from "../hooks/compiled.ts";
import { HOOK_TERMINALS, NAME_PATTERN } from "./schema.ts";
import { schemaErrors, type Conceal } from "./schema-errors.ts";
import { ForgeSettingsCfg, OidcSettingsCfg } from "../identity/settings.ts";
import { EXPORTER_SETTINGS } from "../telemetry/exporters/schemas.ts";
import { hasMark } from "./interpolate.ts";
import type * as NodeCrypto from "node:crypto";

type Bag = Record<string, unknown>;
const bag = (value: unknown): Bag => (typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Bag) : {});
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]", "::1"]);
export function isLoopback(address: string): boolean {
  const host = address.slice(0, address.lastIndexOf(":"));
  return LOOPBACK_HOSTS.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** Exporter modules built in, and the one stream each carries. */
export const EXPORTER_STREAMS: Record<string, string> = { prometheus: "metrics", otlp: "traces", file: "logs", webhook: "logs" };


export function referenceErrors(root: unknown, conceal?: Conceal): string[] {
  const errors: string[] = [];
  // A name from the environment is named by its variable, never quoted.
  const shown = (value: string, as: (v: string) => string = (v) => v) => {
    const variable = conceal?.(value);
    return variable === undefined ? as(value) : `\${${variable}}`;
  };
  const quote = (value: string) => shown(value, JSON.stringify);
  const cfg = bag(root);
  const providers = bag(cfg.providers);
  const models = bag(cfg.models);
  const { hooks: globalHooks, ...pools } = bag(cfg.pools);
  const hooks = bag(cfg.hooks);
  const groups = bag(cfg.groups);
  const idps = bag(cfg["identity-providers"]);
  const plugins = new Set(list(bag(cfg.plugins).fetch).flatMap((e) => (typeof e === "string" ? [pluginName(e)] : [])));

  for (const [name, raw] of Object.entries(providers)) {
    const p = bag(raw);
    const at = `providers.${name}`;
    if (p.protocol === "bedrock" && p.region === undefined && p.base_url === undefined) errors.push(`${at}: a bedrock provider needs region or base_url`);
    if ((p.aws_access_key_id === undefined) !== (p.aws_secret_access_key === undefined) || (p.aws_session_token !== undefined && p.aws_access_key_id === undefined)) {
      errors.push(`${at}: aws_access_key_id and aws_secret_access_key go together (aws_session_token needs both)`);
    }
    if (p.protocol !== "bedrock") {
      for (const key of ["region", "aws_access_key_id", "aws_secret_access_key", "aws_session_token"]) {
        if (p[key] !== undefined) errors.push(`${at}.${key}: only a bedrock provider takes ${key}`);
      }
    }
    if (p.protocol === "mock") {
      for (const key of ["base_url", "api_key"]) if (p[key] !== undefined) errors.push(`${at}.${key}: the built-in mock provider takes no ${key}`);
    } else if (p.latency_ms !== undefined) errors.push(`${at}.latency_ms: only a mock provider takes latency_ms`);
  }

  for (const [name, raw] of Object.entries(models)) {
    const provider = str(bag(raw).provider);
    if (provider !== undefined && !(provider in providers)) errors.push(`models.${name}.provider: unknown provider ${quote(provider)}`);
  }

  const hookRef = (at: string, value: unknown) => {
    const name = str(value);
    if (name !== undefined && !(name in hooks)) errors.push(`${at}: unknown hook ${quote(name)}`);
  };
  list(globalHooks).forEach((h, i) => hookRef(`pools.hooks[${i}]`, h));

  const fallbackOf = (value: unknown) => str(value)?.startsWith("fallback_pool:") ? str(value)!.slice("fallback_pool:".length) : undefined;
  const onExhaustedRef = (at: string, value: unknown, self?: string) => {
    const target = fallbackOf(value);
    if (target === undefined) return;
    if (!(target in pools)) errors.push(`${at}: unknown pool ${quote(target)}`);
    else if (target === self) errors.push(`${at}: a pool cannot fall back to itself`);
  };
  onExhaustedRef("routing.on_exhausted", bag(cfg.routing).on_exhausted);

  for (const [name, raw] of Object.entries(pools)) {
    const pool = bag(raw);
    const at = `pools.${name}`;
    // A `*` makes the name a pattern over requested model names (claude-*): the rest is a plain name.
    if (!new RegExp(NAME_PATTERN).test(name.replaceAll("*", "x"))) errors.push(`${at}: invalid pool name`);
    list(pool.members).forEach((m, i) => {
      const model = str(bag(m).model);
      if (model !== undefined && !(model in models)) errors.push(`${at}.members[${i}].model: unknown model ${quote(model)}`);
    });
    list(pool.hooks).forEach((h, i) => hookRef(`${at}.hooks[${i}]`, h));
    onExhaustedRef(`${at}.on_exhausted`, pool.on_exhausted, name);
  }
  // fallback_pool chains must end: a cycle would bounce a request forever.
  const defaultFallback = fallbackOf(bag(cfg.routing).on_exhausted);
  const next = (pool: string) => fallbackOf(bag(pools[pool]).on_exhausted) ?? defaultFallback;
  for (const start of Object.keys(pools)) {
    const path = [start];
    for (let at = next(start); at !== undefined && at in pools; at = next(at)) {
      if (at === start) {
        errors.push(`pools.${start}.on_exhausted: fallback_pool cycle ${[...path, at].join(" -> ")}`);
        break;
      }
      if (path.includes(at)) break; // a cycle not through `start`; reported from its own members
      path.push(at);
    }
  }

  for (const [name, raw] of Object.entries(hooks)) {
    const hook = bag(raw);
    const at = `hooks.${name}`;
    if ((HOOK_TERMINALS as readonly string[]).includes(name)) errors.push(`${at}: ${quote(name)} is a reserved on_error word and cannot name a hook`);
    const onError = str(hook.on_error);
    if (onError !== undefined && !(HOOK_TERMINALS as readonly string[]).includes(onError)) {
      if (onError === name) errors.push(`${at}.on_error: a hook cannot fall back to itself`);
      else if (!(onError in hooks)) errors.push(`${at}.on_error: unknown fallback hook ${quote(onError)}`);
    }
    if (hook.kind === "tap" && (hook.at === undefined || hook.at === null)) errors.push(`${at}.at: a tap needs its stage (request | candidate | routing | response)`);
    if (hook.kind === "gate" && hook.at !== undefined && hook.at !== null) errors.push(`${at}.at: a gate has no tap stage`);
    const transport = bag(hook.transport);
    if (transport.kind === "plugin" && !str(transport.target)) errors.push(`${at}.transport.target: a plugin transport names its plugin`);
    if (transport.kind === "none" && transport.target !== undefined && transport.target !== null) errors.push(`${at}.transport.target: must be null when kind is none`);
    errors.push(...hookSourceErrors(at, hook, hooks));
  }

  for (const [name, raw] of Object.entries(groups)) {
    const group = bag(raw);
    const parent = str(group.parent);
    if (parent !== undefined && !(parent in groups)) errors.push(`groups.${name}.parent: unknown group ${quote(parent)}`);
    for (const key of ["limits", "child_default"]) {
      list(group[key]).forEach((l, i) => {
        const limit = bag(l);
        const at = `groups.${name}.${key}[${i}]`;
        const pool = str(limit.pool);
        if (pool !== undefined && !(pool in pools)) errors.push(`${at}.pool: unknown pool ${quote(pool)}`);
        if ("window" in limit && [limit.requests, limit.tokens, limit.budget_cents].every((v) => v === undefined || v === null)) {
          errors.push(`${at}: a windowed limit needs requests, tokens or budget_cents`);
        }
      });
    }
  }
  for (const start of Object.keys(groups)) {
    const seen = new Set([start]);
    for (let at = str(bag(groups[start]).parent); at !== undefined && at in groups; at = str(bag(groups[at]).parent)) {
      if (at === start) {
        errors.push(`groups.${start}.parent: parent cycle through ${quote(start)}`);
        break;
      }
      if (seen.has(at)) break;
      seen.add(at);
    }
  }

  for (const [name, raw] of Object.entries(idps)) {
    const idp = bag(raw);
    const module = str(idp.module);
    const settings = bag(idp.settings);
    const at = `identity-providers.${name}`;
    const schema = module === "oidc" ? OidcSettingsCfg : module === "forge" ? ForgeSettingsCfg : undefined;
    if (module !== undefined && !(IDENTITY_MODULES as readonly string[]).includes(module)) {
      // An auth plugin would be a third kind; this build loads none, so naming one would sign nobody in.
      errors.push(`${at}.module: ${plugins.has(module) ? `${quote(module)} is an auth plugin, and this build loads only its built-in identity modules` : `unknown identity module ${quote(module)}`} (built in: oidc, forge)`);
    }
    if (schema) errors.push(...schemaErrors(schema, settings, { prefix: `/identity-providers/${name}/settings`, conceal }));
    if (["tokens", "keys", "admin-tokens"].includes(name)) errors.push(`${at}: ${quote(name)} is a built-in auth module's name; a chain naming it would mean the module, so name the instance otherwise`);
    if (module === "forge" && name !== "forge") errors.push(`${at}: a forge provider's instance name must be "forge"`);
    if (module === "forge" && (idp.browser_login === undefined || idp.browser_login === null)) errors.push(`${at}.browser_login: required: a forge provider signs people in only through the browser (it verifies no token)`);
    if (idp.browser_login !== undefined && idp.browser_login !== null && !str(cfg.public_url)) errors.push(`${at}.browser_login: needs public_url (the base of the sign-in callback)`);
    const ca = settings.ca_cert_pem;
    if (typeof ca === "string" && !hasMark(ca) && !isCertificate(ca)) errors.push(`${at}.settings.ca_cert_pem: not a PEM certificate`);
  }
  for (const provider of Object.keys(bag(cfg.role_bindings))) {
    if (!(provider in idps)) errors.push(`role_bindings.${provider}: unknown identity provider ${quote(provider)}`);
  }

  const auth = bag(cfg.auth);
  const chainCheck = (key: string, allowed: readonly string[]) => {
    const seen = new Set<string>();
    list(auth[key]).forEach((m, i) => {
      const module = str(m);
      if (module === undefined) return;
      if (seen.has(module)) errors.push(`auth.${key}[${i}]: ${quote(module)} appears twice`);
      seen.add(module);
      if (!allowed.includes(module) && !(module in idps) && !plugins.has(module)) {
        errors.push(`auth.${key}[${i}]: unknown auth module ${quote(module)} (known: ${allowed.join(", ")}, identity providers, plugins)`);
      }
      const idp = module in idps ? bag(idps[module]) : undefined;
      if (idp?.module === "forge") errors.push(`auth.${key}[${i}]: ${quote(module)} is a forge provider, which signs people in to issue keys and verifies no request (put keys in the chain)`);
      if (key === "admin_auth" && idp?.max_admin_scope === "none") errors.push(`auth.${key}[${i}]: ${quote(module)} has max_admin_scope: none and never reaches the admin plane`);
      if (module === "oidc" && !(module in idps) && !Object.values(idps).some((raw) => bag(raw).module === "oidc")) errors.push(`auth.${key}[${i}]: "oidc" stands for every oidc identity provider, and none is configured`);
    });
    return seen;
  };
  const chain = chainCheck("chain", INGRESS_AUTH_MODULES);
  const adminChain = chainCheck("admin_auth", ADMIN_AUTH_MODULES);
  if (chain.has("tokens") && list(auth.tokens).length === 0) errors.push(`auth.tokens: the tokens module needs at least one token`);
  if (chain.has("keys") && auth.signing_key === undefined) errors.push(`auth.signing_key: the keys module needs a signing key`);
  if (adminChain.has("admin-tokens") && list(auth.admin_tokens).length === 0) errors.push(`auth.admin_tokens: the admin-tokens module needs at least one token`);

  const adminListen = str(cfg.admin_listen) ?? "127.0.0.1:8081";
  if (!isLoopback(adminListen) && adminChain.size === 0) {
    errors.push(`admin_listen: ${shown(adminListen)} is not loopback, and an open admin plane there would give anyone full authority; set auth.admin_auth`);
  }
  if (cfg.admin_require_mtls === true && !str(bag(cfg.admin_tls).client_ca_file)) {
    errors.push(`admin_require_mtls: needs admin_tls.client_ca_file`);
  }

  const pluginsCfg = bag(cfg.plugins);
  if (list(pluginsCfg.fetch).length > 0 && pluginsCfg.registry_url === undefined) errors.push(`plugins.registry_url: needed to fetch plugins`);

  for (const [name, raw] of Object.entries(bag(cfg.export))) {
    const exporter = bag(raw);
    const module = str(exporter.module);
    const at = `export.${name}`;
    if (module === undefined) continue;
    const carries = EXPORTER_STREAMS[module];
    if (carries === undefined) {
      if (!plugins.has(module)) errors.push(`${at}.module: unknown exporter ${quote(module)} (built in: ${Object.keys(EXPORTER_STREAMS).join(", ")})`);
      continue;
    }
    list(exporter.streams).forEach((s, i) => {
      if (s !== carries) errors.push(`${at}.streams[${i}]: the ${module} exporter carries only ${carries}`);
    });
    if (exporter.fields !== undefined) errors.push(`${at}.fields: not supported by the built-in ${module} exporter`);
    const settings = bag(exporter.settings);
    const schema = EXPORTER_SETTINGS[module];
    if (schema) errors.push(...schemaErrors(schema, withSecretHeaders(settings), { prefix: `/export/${name}/settings`, conceal }));
    if (settings.capture_content === true) errors.push(`${at}.settings.capture_content: not supported by this build yet (spans carry no prompt or completion text)`);
  }
  return errors;
}

/**
 * An exporter's settings as its schema checks them: a `headers` value given as a secret reference
 * ({env} or {file}, resolved at load) stands in as a string; any other object stays, to be refused.
 */
function withSecretHeaders(settings: Bag): Bag {
  const headers = settings.headers;
  if (typeof headers !== "object" || headers === null || Array.isArray(headers)) return settings;
  const isRef = (v: unknown) => typeof v === "object" && v !== null && !Array.isArray(v) && Object.keys(v).length === 1 && (typeof (v as Bag).env === "string" || typeof (v as Bag).file === "string");
  return { ...settings, headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, isRef(v) ? "(secret reference)" : v])) };
}

/** A hook's builtin (known, its settings sound, not beside a plugin transport) and its on_error chain (gates only, no cycle). */
function hookSourceErrors(at: string, hook: Record<string, unknown>, hooks: Record<string, unknown>): string[] {
  const errors: string[] = [];
  const builtin = str(hook.builtin);
  if (builtin !== undefined) {
    if (bag(hook.transport).kind === "plugin") errors.push(`${at}.builtin: a hook names a builtin or a plugin transport, not both`);
    if (!Object.hasOwn(COMPILED_HOOKS, builtin)) errors.push(`${at}.builtin: unknown compiled-in hook ${JSON.stringify(builtin)} (${Object.keys(COMPILED_HOOKS).join(" | ")})`);
    else errors.push(...COMPILED_SETTINGS_PROBLEMS[builtin]!(bag(hook.settings)).map((p) => `${at}.settings.${p}`));
  }
  const terminal = (name: string | undefined) => name === undefined || (HOOK_TERMINALS as readonly string[]).includes(name);
  const first = str(hook.on_error);
  if (terminal(first) || !(first! in hooks)) return errors;
  if (hook.kind === "gate" && bag(hooks[first!]).kind !== "gate") errors.push(`${at}.on_error: fallback hook ${JSON.stringify(first)} is not a gate`);
  const chain = [at.slice("hooks.".length)];
  for (let next = first; !terminal(next) && next! in hooks; next = str(bag(hooks[next!]).on_error)) {
    if (next === chain[0] && chain.length > 1) {
      errors.push(`${at}.on_error: fallback cycle ${[...chain, next].join(" -> ")}`);
      break;
    }
    if (chain.includes(next!)) break; // a cycle not through this hook: reported from its own members
    chain.push(next!);
  }
  return errors;
}

/** Whether `pem` holds a certificate X.509 can read (node:crypto required here only: a builtin's import is hoisted into every start). */
function isCertificate(pem: string): boolean {
  if (!pem.includes("-----BEGIN CERTIFICATE-----")) return false;
  try {
    new (require("node:crypto") as typeof NodeCrypto).X509Certificate(pem);
    return true;
  } catch {
    return false;
  }
}
