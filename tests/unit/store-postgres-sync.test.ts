// Two replicas' key and group services over one real PostgreSQL (Debian's, started here): what one
// applies, the other serves within a second (NOTIFY at commit, LISTEN, reload), a revoke included, and a
// reconcile catches up what a replica missed while it was not listening.
import { describe, expect, test } from "bun:test";
import { ConfigHolder } from "../../src/config/snapshot.ts";
import { loadConfigText } from "../../src/config/load.ts";
import { Secret } from "../../src/config/secret.ts";
import { AuditLog } from "../../src/governance/audit.ts";
import { FleetSync } from "../../src/governance/fleet-sync.ts";
import { GroupService } from "../../src/governance/groups.ts";
import { KeyRegistry, keyState } from "../../src/governance/key-registry.ts";
import { KeyService } from "../../src/governance/keys.ts";
import { listenForChanges } from "../../src/store/postgres/changes.ts";
import { postgresStores } from "../../src/store/postgres/set.ts";
import { PostgresStore } from "../../src/store/postgres/store.ts";
import { createLogger } from "../../src/telemetry/logger.ts";
import { usePostgres } from "../support/postgres.ts";
import { until } from "../support/until.ts";

const KEY = "s".repeat(48);
const server = usePostgres("pg-sync-");
const logger = createLogger({ level: "error", write: () => {} });

function holder(): ConfigHolder {
  const loaded = loadConfigText("providers: {}\n", "t.yaml", { env: {} });
  if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
  return new ConfigHolder(loaded.snapshot);
}

async function replica(url: string, id: string, listen = true) {
  const store = await PostgresStore.open({ url, schema: "public", poolSize: 4, connectTimeoutSecs: 5 }, { signingKey: KEY });
  const stores = postgresStores(store, id);
  const audit = new AuditLog(stores.audit, Date.now);
  const registry = new KeyRegistry();
  const groups = new GroupService({ holder: holder(), store: stores.groups, audit, logger, now: Date.now, hasBoundKeys: (name) => registry.boundTo(name) });
  const keys = new KeyService({ store: stores.keys, registry, audit, groups, signingKey: () => new Secret(KEY, "test"), now: Date.now });
  await keys.load();
  await groups.load();
  const sync = new FleetSync({ audit, keys, groups, logger });
  const stop = listen ? await listenForChanges(store.sql, id, (resources) => void sync.changed(resources), () => void sync.reconcile()) : async () => {};
  return { store, registry, keys, groups, sync, close: async () => (await stop(), await store.close()) };
}

const newKey = (name: string, group: string | null = null) => ({ name, allowedPools: null, expiresAt: Math.floor(Date.now() / 1000) + 3600, group, parent: null, issueAwsCredential: false, labels: {} });

describe("postgres fleet: keys and groups propagate", () => {
  test("a key minted on one replica admits on the other within 1 s; its revoke holds there within 1 s", async () => {
    const url = await server().createDatabase("sync_keys");
    const a = await replica(url, "replica-a");
    const b = await replica(url, "replica-b");
    try {
      const minted = await a.keys.create(newKey("ci"), "admin");
      const mintedAt = performance.now();
      await until(() => b.registry.admit(minted.record.id, Math.floor(Date.now() / 1000)) !== undefined, 1_000, 5);
      const seen = performance.now() - mintedAt;
      expect(seen).toBeLessThan(1_000);
      await b.keys.revoke(minted.record.id, "admin");
      await until(() => keyState(a.registry.get(minted.record.id)!) === "revoked", 1_000, 5);
      expect(a.registry.admit(minted.record.id, Math.floor(Date.now() / 1000))).toBeUndefined();
    } finally {
      await a.close();
      await b.close();
    }
  }, 60_000);

  test("groups made and deleted on one replica follow on the other", async () => {
    const url = await server().createDatabase("sync_groups");
    const a = await replica(url, "replica-a");
    const b = await replica(url, "replica-b");
    try {
      await a.groups.create({ name: "ml", limits: [{ window: "hour", tokens: 1000 }] }, "admin");
      await until(() => b.groups.get("ml") !== undefined, 1_000, 5);
      expect(b.groups.get("ml")).toMatchObject({ name: "ml", limits: [{ window: "hour", tokens: 1000 }], source: "api" });
      await b.groups.delete("ml", "admin");
      await until(() => a.groups.get("ml") === undefined, 1_000, 5);
    } finally {
      await a.close();
      await b.close();
    }
  }, 60_000);

  test("what a replica missed while it was not listening comes with the next reconcile", async () => {
    const url = await server().createDatabase("sync_reconcile");
    const a = await replica(url, "replica-a");
    const deaf = await replica(url, "replica-deaf", false);
    try {
      const minted = await a.keys.create(newKey("missed"), "admin");
      await Bun.sleep(300);
      expect(deaf.registry.get(minted.record.id)).toBeUndefined();
      await deaf.sync.reconcile();
      expect(deaf.registry.admit(minted.record.id, Math.floor(Date.now() / 1000))).toBeDefined();
    } finally {
      await a.close();
      await deaf.close();
    }
  }, 60_000);
});
