// Validated tree -> Snapshot: defaults filled, secrets read, TLS files read and parsed, lanes and pools
// built. Everything here runs at load, so the request path only follows references.
import { accessSync, constants, readFileSync, statSync } from "node:fs";
import { dirname, resolve as resolvePath } from "node:path";
import type * as NodeCrypto from "node:crypto";
import { COMPILED_AUTH_MODULES } from "../auth/modules.ts";
import { defaultBaseUrl, type HealthSettings, type ResolvedProvider } from "../providers/provider.ts";
import type { Lane } from "../routing/lane.ts";
import type { BreakerSettings, FailoverSettings, Pool } from "../routing/pool.ts";
import { withDefaults } from "./defaults.ts";
import { durationSecs } from "./duration.ts";
import { identityProvider } from "../identity/settings.ts";
import { parseListenAddress } from "./listen.ts";
import { EXPORTER_STREAMS, isLoopback } from "./references.ts";
import { GatewayConfig, type PoolCfg, type ProviderCfg, type SecretRef } from "./schema.ts";
import { Secret } from "./secret.ts";
import { nameList, type AdminToken, type ClientToken, type ExportEntry, type ListenerSettings, type Snapshot, type StoreSettings } from "./snapshot.ts";

export interface ResolveContext {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly version: number;
  readonly source: string;
  /** Replaces values taken from the environment by their `${VAR}` (Concealed.scrub), for what views show. */
  readonly conceal?: (text: string) => string;
}

export type ResolveResult = { ok: true; snapshot: Snapshot } | { ok: false; errors: string[] };

const HEALTH_DEFAULTS: HealthSettings = { mode: "none", interval_secs: 30, timeout_secs: 5 };
const BREAKER_DEFAULTS: BreakerSettings = { error_rate: 0.5, window_secs: 60, min_requests: 5, consecutive_n: 3, base_cooldown_secs: 15, max_cooldown_secs: 120 };
const FAILOVER_DEFAULTS: FailoverSettings = { max_hops: 3, timeout_secs: 120 };

/** The largest secret or PEM file a config may reference. */
export const MAX_REFERENCED_FILE_BYTES = 1024 * 1024;

class Collector {
  readonly errors: string[] = [];
  readonly warnings: string[] = [];
  readonly env: ResolveContext["env"];
  constructor(env: ResolveContext["env"]) {
    this.env = env;
  }

  readFile(path: string, at: string, what: string): string | undefined {
    try {
      // Looked at before it is opened: a device or a pipe (/dev/zero, /dev/stdin) would never end or
      // never answer, and a secret or certificate is never larger than MAX_REFERENCED_FILE_BYTES.
      const stat = statSync(path);
      if (!stat.isFile()) return this.refuseFile(at, what, path, "not a regular file");
      if (stat.size > MAX_REFERENCED_FILE_BYTES) return this.refuseFile(at, what, path, `larger than ${MAX_REFERENCED_FILE_BYTES} bytes`);
      return readFileSync(path, "utf8");
    } catch (error) {
      this.errors.push(`${at}: cannot read ${what} ${path} (${(error as NodeJS.ErrnoException).code ?? "error"})`);
      return undefined;
    }
  }

  private refuseFile(at: string, what: string, path: string, why: string): undefined {
    this.errors.push(`${at}: cannot read ${what} ${path} (${why})`);
    return undefined;
  }

  /** A required secret: an unset variable or unreadable file is an error. */
  secret(ref: SecretRef, at: string): Secret | undefined {
    if ("env" in ref) {
      const value = this.env[ref.env];
      if (value === undefined || value === "") {
        this.errors.push(`${at}: environment variable ${ref.env} is ${value === undefined ? "not set" : "empty"}`);
        return undefined;
      }
      return new Secret(value, `env:${ref.env}`);
    }
    const text = this.readFile(ref.file, at, "secret file");
    if (text === undefined) return undefined;
    const value = text.replace(/\r?\n$/, "");
    if (value === "") {
      this.errors.push(`${at}: secret file ${ref.file} is empty`);
      return undefined;
    }
    return new Secret(value, `file:${ref.file}`);
  }

  /** A provider key: empty or unset only warns (spec: the provider still loads). */
  providerKey(value: SecretRef | string | undefined, provider: string): Secret | undefined {
    if (value === undefined) return undefined;
    if (typeof value === "string") {
      if (value === "") this.warnings.push(`provider ${provider}: api_key is empty; upstream calls will be unauthenticated`);
      return new Secret(value, "config");
    }
    if ("env" in value) {
      const key = this.env[value.env] ?? "";
      if (key === "") this.warnings.push(`provider ${provider}: api_key variable ${value.env} is empty or unset; upstream calls will be unauthenticated`);
      return new Secret(key, `env:${value.env}`);
    }
    return this.secret(value, `providers.${provider}.api_key`);
  }
}

function writable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

function listener(c: Collector, address: string, at: string, tls: ListenerSettings["tls"]): ListenerSettings {
  const parts = parseListenAddress(address);
  if ("error" in parts) c.errors.push(`${at}: ${parts.error}`);
  return { hostname: "error" in parts ? "" : parts.hostname, port: "error" in parts ? 0 : parts.port, tls };
}

/**
 * A base_url on the data listener's own loopback port: the easy slip is a shell's OPENAI_BASE_URL set for
 * an SDK to reach the gateway, which the embedded default then takes as the upstream (config/default.ts).
 */
function callsItself(baseUrl: string, data: ListenerSettings): boolean {
  const url = URL.parse(baseUrl);
  if (url === null || data.port === 0) return false;
  const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
  const anyAddress = data.hostname === "0.0.0.0" || data.hostname === "::";
  return port === data.port && isLoopback(`${url.hostname}:`) && (anyAddress || isLoopback(`${data.hostname.includes(":") ? `[${data.hostname}]` : data.hostname}:`));
}

function readTls(c: Collector, block: { cert_file: string; key_file: string; client_ca_file?: string } | undefined, at: string): ListenerSettings["tls"] {
  if (!block) return undefined;
  const cert = c.readFile(block.cert_file, `${at}.cert_file`, "certificate");
  const key = c.readFile(block.key_file, `${at}.key_file`, "private key");
  const ca = block.client_ca_file ? c.readFile(block.client_ca_file, `${at}.client_ca_file`, "CA file") : undefined;
  // Loaded only for a config with TLS: importing node:crypto cost every start ~1 ms and ~1 MB.
  const { X509Certificate, createPrivateKey } = require("node:crypto") as typeof NodeCrypto;
  const parse = (file: string, field: string, what: string, check: () => unknown) => {
    try {
      check();
    } catch {
      c.errors.push(`${at}.${field}: ${file} is not a valid PEM ${what}`);
    }
  };
  if (cert !== undefined) parse(block.cert_file, "cert_file", "certificate", () => new X509Certificate(cert));
  if (key !== undefined) parse(block.key_file, "key_file", "private key", () => createPrivateKey(key));
  if (ca !== undefined) parse(block.client_ca_file!, "client_ca_file", "CA certificate", () => new X509Certificate(ca));
  if (cert === undefined || key === undefined || (block.client_ca_file && ca === undefined)) return undefined;
  return { cert, key, ca };
}

const originOf = (url: string) => URL.parse(url)?.origin ?? url;

/** base_url as a read-only admin may see it: no userinfo (a credential) and no value from the environment. */
const shownUrl = (url: string, conceal: ResolveContext["conceal"]) => (conceal ?? String)(url.replace(/^(https?:\/\/)[^/?#]*@/i, "$1***@"));

function resolveProvider(c: Collector, name: string, p: ProviderCfg, healthDefaults: HealthSettings, conceal: ResolveContext["conceal"]): ResolvedProvider {
  const aws =
    p.aws_access_key_id && p.aws_secret_access_key
      ? {
          accessKeyId: c.secret(p.aws_access_key_id, `providers.${name}.aws_access_key_id`) ?? new Secret("", "unset"),
          secretAccessKey: c.secret(p.aws_secret_access_key, `providers.${name}.aws_secret_access_key`) ?? new Secret("", "unset"),
          sessionToken: p.aws_session_token ? c.secret(p.aws_session_token, `providers.${name}.aws_session_token`) : undefined,
        }
      : undefined;
  const baseUrl = (p.base_url ?? defaultBaseUrl(p.protocol, p.region))?.replace(/\/+$/, "");
  return {
    name,
    protocol: p.protocol,
    baseUrl,
    shownBaseUrl: baseUrl === undefined ? undefined : shownUrl(baseUrl, conceal),
    origin: baseUrl === undefined ? "" : originOf(baseUrl),
    apiKey: c.providerKey(p.api_key, name),
    headers: p.headers ?? {},
    query: p.query ?? {},
    queryString: new URLSearchParams(p.query ?? {}).toString(),
    health: { ...healthDefaults, ...p.health },
    region: p.region,
    aws,
    latencyMs: p.latency_ms ?? 0,
  };
}

const POSTGRES_ONLY = ["url", "pool_size", "schema", "connect_timeout_secs", "spool_path"] as const;

/** `store:`: each module's own settings, the other's refused with their path; postgres's URL read from its secret. */
function resolveStore(c: Collector, cfg: GatewayConfig["store"]): StoreSettings {
  const settings = cfg?.settings ?? {};
  if ((cfg?.module ?? "sqlite") === "sqlite") {
    for (const member of POSTGRES_ONLY) if (settings[member] !== undefined) c.errors.push(`store.settings.${member}: only for module postgres`);
    return { module: "sqlite", path: settings.path ?? "./gateway.db" };
  }
  if (settings.path !== undefined) c.errors.push("store.settings.path: only for module sqlite (postgres keeps its rows in the database)");
  let url: Secret | undefined;
  if (settings.url === undefined) c.errors.push("store.settings.url: module postgres needs the database's URL, as a secret reference {env: NAME} or {file: PATH}");
  else url = c.secret(settings.url, "store.settings.url");
  // Never quoted: the URL holds the password.
  if (url !== undefined && !/^postgres(ql)?:\/\/[^\s]+$/.test(url.reveal())) c.errors.push("store.settings.url: the secret does not hold a postgres:// URL");
  return { module: "postgres", url: url ?? new Secret("", "unset"), schema: settings.schema ?? "public", poolSize: settings.pool_size ?? 10, connectTimeoutSecs: settings.connect_timeout_secs ?? 5, spoolPath: resolvePath(settings.spool_path ?? "./gateway.spool") };
}

export function resolveConfig(validated: GatewayConfig, ctx: ResolveContext): ResolveResult {
  const c = new Collector(ctx.env);
  const cfg = withDefaults(GatewayConfig, validated) as GatewayConfig;

  const healthDefaults = { ...HEALTH_DEFAULTS, ...cfg.health };
  const providers = new Map<string, ResolvedProvider>();
  for (const [name, p] of Object.entries(cfg.providers ?? {})) providers.set(name, resolveProvider(c, name, p, healthDefaults, ctx.conceal));

  const lanes = new Map<string, Lane>();
  for (const [name, m] of Object.entries(cfg.models ?? {})) {
    const provider = providers.get(m.provider);
    if (!provider) continue; // reported by the reference checks
    lanes.set(name, {
      name,
      provider,
      upstreamModel: m.model ?? name,
      contextWindow: m.context_window ?? null,
      maxConcurrent: m.max_concurrent ?? null,
      maxRequests: m.max_requests ?? null,
    });
  }

  const routing = cfg.routing ?? {};
  const { hooks: globalPoolHooks = [], ...poolCfgs } = (cfg.pools ?? {}) as { hooks?: string[] } & Record<string, PoolCfg>;
  const pools = new Map<string, Pool>();
  const poolOf = (name: string, pc: PoolCfg, implicit: boolean): Pool => ({
    name,
    members: pc.members.flatMap((m) => {
      const lane = lanes.get(m.model);
      return lane ? [{ lane, weight: m.weight ?? 1 }] : [];
    }),
    breaker: { ...BREAKER_DEFAULTS, ...routing.breaker, ...pc.breaker },
    failover: { ...FAILOVER_DEFAULTS, ...routing.failover, ...pc.failover },
    onExhausted: pc.on_exhausted ?? routing.on_exhausted ?? "reject",
    hooks: pc.hooks ?? [],
    implicit,
  });
  for (const [name, pc] of Object.entries(poolCfgs)) pools.set(name, poolOf(name, pc, false));
  for (const name of lanes.keys()) if (!pools.has(name)) pools.set(name, poolOf(name, { members: [{ model: name }] }, true));
  // Pools named with `*` also serve model names they match, so agents' ever-new model ids need no config.
  const poolPatterns = [...pools.values()].filter((pool) => pool.name.includes("*")).map((pool) => ({ pattern: globPattern(pool.name), pool }));

  const globalHooks = [
    ...globalPoolHooks,
    ...Object.entries(cfg.hooks ?? {}).flatMap(([name, h]) => (h.global && !globalPoolHooks.includes(name) ? [name] : [])),
  ];

  const auth = cfg.auth ?? {};
  const adminTokens: AdminToken[] = (auth.admin_tokens ?? []).flatMap((t, i) => {
    const token = c.secret(t.token, `auth.admin_tokens[${i}].token`);
    return token ? [{ name: t.name ?? `admin-token-${i}`, token, scope: t.scope ?? "full" }] : [];
  });
  const tokens: ClientToken[] = (auth.tokens ?? []).flatMap((t, i) => {
    const token = c.secret(t.token, `auth.tokens[${i}].token`);
    return token ? [{ name: t.name, token }] : [];
  });
  const signingKey = auth.signing_key ? c.secret(auth.signing_key, "auth.signing_key") : undefined;
  const identityProviders = Object.entries(cfg["identity-providers"] ?? {}).flatMap(([name, idp]) => {
    const secret = idp.browser_login ? c.secret(idp.browser_login.client_secret, `identity-providers.${name}.browser_login.client_secret`) : undefined;
    const provider = identityProvider(name, idp, secret);
    return provider ? [provider] : [];
  });
  if (identityProviders.length > 0 && signingKey === undefined) c.errors.push("auth.signing_key: identity providers issue keys, which need a signing key");

  // Exporters' header values may be secret references (design/telemetry.md): resolved here, kept as Secrets.
  const exporters: ExportEntry[] = Object.entries(cfg.export ?? {}).map(([name, e]) => {
    const settings: Record<string, unknown> = { ...(e.settings ?? {}) };
    const headers = settings.headers;
    if (typeof headers === "object" && headers !== null && !Array.isArray(headers)) {
      settings.headers = Object.fromEntries(
        Object.entries(headers as Record<string, unknown>).map(([header, value]) => [header, typeof value === "object" && value !== null ? (c.secret(value as SecretRef, `export.${name}.settings.headers.${header}`) ?? new Secret("", "unset")) : value]),
      );
    }
    return { name, module: e.module, streams: (e.streams ?? [EXPORTER_STREAMS[e.module] ?? "logs"]) as ExportEntry["streams"], settings };
  });

  const chain = auth.chain ?? [];
  const adminChain = auth.admin_auth ?? [];
  if (chain.length === 0) {
    c.warnings.push(`auth.chain is empty: the data plane is an OPEN RELAY; anyone who can reach ${cfg.listen} can spend every configured provider's credits`);
  }
  for (const module of [...chain, ...adminChain]) {
    if (!COMPILED_AUTH_MODULES.includes(module) && !identityProviders.some((p) => p.name === module)) {
      c.warnings.push(`auth module ${JSON.stringify(module)} is not in this build; it admits nobody, so requests it alone would admit are refused`);
    }
  }
  if (adminChain.length === 0) c.warnings.push(`auth.admin_auth is empty: the admin plane on ${cfg.admin_listen} is open to anyone who can reach it`);

  const listeners = {
    data: listener(c, cfg.listen!, "listen", readTls(c, cfg.tls, "tls")),
    admin: listener(c, cfg.admin_listen!, "admin_listen", readTls(c, cfg.admin_tls, "admin_tls")),
  };
  for (const p of providers.values()) {
    if (p.baseUrl !== undefined && callsItself(p.baseUrl, listeners.data)) c.errors.push(`providers.${p.name}.base_url: names this gateway's own data plane (${cfg.listen}), so every request would come back in`);
  }

  const store = resolveStore(c, cfg.store);

  const locked = cfg.config?.locked ?? false;
  const overlay = resolvePath(cfg.config?.overlay ?? "./gateway.overlay.yaml");
  const configPersistence = !locked && writable(dirname(overlay));
  if (!locked && !configPersistence) c.warnings.push(`config overlay directory ${dirname(overlay)} is not writable: API config changes will not persist`);

  if (c.errors.length > 0) return { ok: false, errors: c.errors };
  return {
    ok: true,
    snapshot: {
      version: ctx.version,
      source: ctx.source,
      config: cfg,
      providers,
      lanes,
      pools,
      poolPatterns,
      modelNames: modelNamesOf(pools),
      laneDefaults: { breaker: { ...BREAKER_DEFAULTS, ...routing.breaker }, failover: { ...FAILOVER_DEFAULTS, ...routing.failover } },
      globalHooks,
      listeners,
      auth: { chain, adminChain, adminTokens, tokens, signingKey, upstreamCredentials: cfg.upstream_credentials ?? "own" },
      store,
      export: exporters,
      identity: {
        providers: identityProviders,
        publicUrl: cfg.public_url?.replace(/\/+$/, ""),
        keyTtlSecs: durationSecs(auth.key_ttl ?? "90d")!,
        bindings: { role_bindings: cfg.role_bindings ?? {}, default_team: cfg.default_team },
      },
      limits: {
        upstreamTimeoutMs: (cfg.limits?.upstream_request_timeout_secs ?? 300) * 1000,
        pool: { maxIdlePerHost: cfg.limits?.pool_max_idle_per_host ?? 64, idleTimeoutSecs: cfg.limits?.pool_idle_timeout_secs ?? 90 },
        bodyReadTimeoutMs: (cfg.limits?.body_read_timeout_secs ?? 30) * 1000,
        maxUpstreamResponseBytes: cfg.limits?.max_upstream_response_bytes ?? 33554432,
      },
      configPersistence,
      warnings: c.warnings,
    },
  };
}

function modelNamesOf(pools: ReadonlyMap<string, Pool>): Snapshot["modelNames"] {
  const names = [...pools.keys()].sort();
  return { names, listed: nameList(names) };
}

/** `claude-*` -> /^claude-.*$/: `*` is any run of characters, everything else literal. */
function globPattern(glob: string): RegExp {
  return new RegExp(`^${glob.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`);
}
