// What the admin controllers need. Plain data and functions, so tests can build an app around a
// snapshot and a store without starting a process.
import type { IdentityService } from "../identity/service.ts";
import type { TelemetryHub } from "../telemetry/hub.ts";
import type { CredentialCache } from "../auth/credential-cache.ts";
import type { ConfigLifecycle } from "../config/lifecycle.ts";
import type { FleetConfig } from "../config/fleet.ts";
import type { ConfigHolder } from "../config/snapshot.ts";
import type { GroupService } from "../governance/groups.ts";
import type { KeyService } from "../governance/keys.ts";
import type { UsageService } from "../governance/usage.ts";
import type { AuditLog } from "../governance/audit.ts";
import type { Store } from "../store/store.ts";
import type { Logger } from "../telemetry/logger.ts";
import type { HookRuntimeView } from "../hooks/types.ts";
import type { ReplicaDirectory } from "./replicas.ts";
import type { StoreStatus } from "./views.ts";
import type { RoutingState } from "../routing/state.ts";

export interface AdminDeps {
  readonly holder: ConfigHolder;
  readonly store: Store;
  readonly logger: Logger;
  /** Epoch milliseconds. */
  readonly now: () => number;
  /** Epoch seconds of process start. */
  readonly startedAt: number;
  /** The environment config text is interpolated from (POST /config/validate). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Virtual keys (POST/GET/PATCH/DELETE /keys). */
  readonly keys?: KeyService;
  /** The ingress chain's cached credential decisions (POST /auth/cache/flush). */
  readonly authCache?: CredentialCache;
  /** The running exporters (POST /plugins/reload swaps them), the ring of recent requests (GET /requests) and the live feed (GET /events). */
  readonly telemetry?: TelemetryHub;
  /** Lanes' counters and breaker cells (GET /stats); absent in apps built by tests. */
  readonly routing?: RoutingState;
  /** The token exchange and the `oidc` admin module; absent without a key store. */
  readonly identity?: IdentityService;
  /** Every attempted admin mutation (GET /audit, /audit/verify). */
  readonly audit?: AuditLog;
  /** Groups (GET/POST/PATCH/DELETE /groups). */
  readonly groups?: GroupService;
  /** Config apply, reload, rollback, versions and the settings overlay; absent in apps built by tests around a bare snapshot. */
  readonly lifecycle?: ConfigLifecycle;
  /** A fleet's one config (config/fleet.ts): a change first takes what other replicas committed; absent for a single process. */
  readonly fleetConfig?: FleetConfig;
  /** Drains and re-executes the process (POST /restart); absent where the process cannot (tests). */
  readonly restart?: () => void;
  /** Metering views (GET /keys/{id}/usage, /groups/{name}/usage, /usage/keys). */
  readonly usage?: UsageService;
  /** The running hooks (GET /hooks/{name}/health, /status, /schema): src/hooks/runtime.ts. */
  readonly hookRuntime: HookRuntimeView;
  /** GET /replicas: this store's replicas (admin/replicas.ts); absent in apps built by tests. */
  readonly replicas?: ReplicaDirectory;
  /** InfoView.store and gateway_store_up, read when asked; absent in apps built by tests. */
  readonly storeStatus?: () => StoreStatus;
}
