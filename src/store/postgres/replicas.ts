// The fleet's replicas (design/replicas.md, "Views"): each registers at boot, heartbeats every 2 s, and is
// `gone` once silent for 10 s; a graceful stop marks it gone at once. Times are the database's clock, so
// replicas whose clocks disagree still agree on who is up.
import type { SQL } from "bun";
import { numbers } from "./writes.ts";

export const HEARTBEAT_MS = 2_000;
export const GONE_AFTER_SECS = 10;

export interface ReplicaInfo {
  readonly id: string;
  readonly host: string;
  /** Its data listener, host:port. */
  readonly listen: string;
  readonly version: string;
}

export interface ReplicaRow extends ReplicaInfo {
  /** Epoch seconds, the database's clock. */
  readonly started_at: number;
  readonly last_seen: number;
  readonly config_version: number;
  readonly state: "up" | "gone";
}

export class ReplicaRegistry {
  #timer: ReturnType<typeof setInterval> | undefined;
  #failing = false;

  constructor(
    private readonly sql: SQL,
    private readonly self: ReplicaInfo,
    private readonly configVersion: () => number,
    private readonly failed: (error: unknown) => void = () => {},
    /** Told of each heartbeat that reached the database (the limit counters judge from it whether they were taken for gone). */
    private readonly beat: () => void = () => {},
  ) {}

  /** The last heartbeat failed (the database refuses or cannot be reached). */
  get failing(): boolean {
    return this.#failing;
  }

  async register(): Promise<void> {
    const { id, host, listen, version } = this.self;
    await this.sql`INSERT INTO replicas (id, host, listen, started_at, last_seen, version, config_version)
      VALUES (${id}, ${host}, ${listen}, extract(epoch from now())::bigint, extract(epoch from now())::bigint, ${version}, ${this.configVersion()})
      ON CONFLICT (id) DO UPDATE SET last_seen = excluded.last_seen`;
    this.beat();
  }

  start(): void {
    this.#timer ??= setInterval(() => {
      this.sql`UPDATE replicas SET last_seen = extract(epoch from now())::bigint, config_version = ${this.configVersion()} WHERE id = ${this.self.id}`
        // Every live replica frees what gone ones held (limits-schema.ts): whoever comes first, once.
        .then(() => this.sql`SELECT gateway_free_gone(${GONE_AFTER_SECS})`)
        .then(
          () => {
            this.#failing = false;
            this.beat();
          },
          (error: unknown) => {
            // Told once per outage, not every 2 s of it.
            if (!this.#failing) this.failed(error);
            this.#failing = true;
          },
        );
    }, HEARTBEAT_MS);
    this.#timer.unref();
  }

  /** A graceful stop: no more heartbeats, and the others see it gone at once. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.sql`UPDATE replicas SET last_seen = extract(epoch from now())::bigint - ${GONE_AFTER_SECS + 1} WHERE id = ${this.self.id}`.catch(() => {});
  }

  /** Every replica seen in the last 24 h, oldest start first. */
  async list(): Promise<ReplicaRow[]> {
    const rows = await this.sql`SELECT id, host, listen, started_at, last_seen, version, config_version,
        CASE WHEN last_seen >= extract(epoch from now())::bigint - ${GONE_AFTER_SECS} THEN 'up' ELSE 'gone' END AS state
      FROM replicas WHERE last_seen >= extract(epoch from now())::bigint - 86400 ORDER BY started_at, id`;
    return rows.map((row: ReplicaRow) => numbers(row, ["started_at", "last_seen", "config_version"]));
  }
}
