// The token exchange's keys (design/identity.md, "Exchanged keys"): a signed-in person gets a virtual key
// whose id is derived from the signing key, the identity and a generation (governance/token.ts
// exchangedKeyId), so every exchange within a generation answers the same token without storing it. A new
// generation starts on refresh, or once the key expired, was revoked or deleted, or the person's team
// changed; the previous key is revoked at once. A disabled key is an admin's pause and is not rotated past.
// Keys are minted through KeyService (audited under the identity), their group the person's leaf under
// the team, provisioned from the team's child_default by the mint rules.
import type { ConfigHolder } from "../config/snapshot.ts";
import { GatewayError } from "../http/errors.ts";
import { keyState, type KeyRegistry } from "../governance/key-registry.ts";
import type { KeyService } from "../governance/keys.ts";
import { exchangedKeyId, MAX_EXPIRES_AT, mintToken } from "../governance/token.ts";
import type { GroupResolver } from "../governance/types.ts";
import type { KeyRecord } from "../store/keys.ts";
import { leafGroup, teamFor, type TeamConfig } from "./team.ts";

/** A person the provider vouched for: verified ID token claims, or the forge's /user and /user/orgs. */
export interface SignedIn {
  /** The identity-provider instance's name. */
  readonly provider: string;
  /** `user:<sub>` or `forge:<login>`. */
  readonly identity: string;
  readonly groups: readonly string[];
}

/** POST /auth/token's answer, and what the key page shows. */
export interface ExchangedKey {
  readonly token: string;
  readonly key_id: string;
  readonly identity: string;
  readonly team: string;
  readonly group: string;
  readonly group_provisioned: boolean;
  /** Unix seconds, like every key view. */
  readonly expires_at: number;
  readonly base_url: string | null;
}

export interface ExchangeDeps {
  readonly holder: ConfigHolder;
  readonly keys: KeyService;
  readonly registry: KeyRegistry;
  readonly groups: GroupResolver | undefined;
  /** Epoch milliseconds. */
  readonly now: () => number;
}

/**
 * An identity with no team, or a team that is not a group. The data plane answers it in the caller's
 * permission error, the exchange as 403 forbidden.
 */
export function teamProblem(person: SignedIn, bindings: TeamConfig, groups: GroupResolver | undefined): { team: string } | { problem: string } {
  const team = teamFor(person.provider, person.groups, bindings);
  if (team === undefined) return { problem: `${person.identity} matches no role_bindings.${person.provider} group binding and no default_team is configured` };
  if (!groups?.exists(team)) return { problem: `team ${JSON.stringify(team)} (for ${person.identity}) is not an existing group` };
  return { team };
}

export class TokenExchange {
  readonly #deps: ExchangeDeps;
  /** identity -> its latest known generation: a hint that spares the scan from generation 0. */
  readonly #generations = new Map<string, number>();
  /** One exchange per identity at a time, so two sign-ins cannot both mint the same generation. */
  readonly #turns = new Map<string, Promise<unknown>>();

  constructor(deps: ExchangeDeps) {
    this.#deps = deps;
  }

  /** The person's key for this generation, or a new generation's when `rotate` or the old key is spent. */
  issue(person: SignedIn, rotate: boolean): Promise<ExchangedKey> {
    const previous = this.#turns.get(person.identity) ?? Promise.resolve();
    const turn = previous.then(() => this.#issue(person, rotate));
    const settled = turn.catch(() => undefined);
    this.#turns.set(person.identity, settled);
    void settled.then(() => {
      if (this.#turns.get(person.identity) === settled) this.#turns.delete(person.identity);
    });
    return turn;
  }

  async #issue(person: SignedIn, rotate: boolean): Promise<ExchangedKey> {
    const snapshot = this.#deps.holder.current;
    const signingKey = snapshot.auth.signingKey;
    if (signingKey === undefined) throw new GatewayError("internal", "auth.signing_key is not configured, so no key can be issued");
    const secret = signingKey.reveal();
    const placed = teamProblem(person, snapshot.identity.bindings, this.#deps.groups);
    if ("problem" in placed) throw new GatewayError("forbidden", placed.problem);
    const { team } = placed;
    const group = leafGroup(person.identity, team);
    const nowSecs = Math.floor(this.#deps.now() / 1000);
    const { generation, record } = this.#latest(person.identity, secret);
    const answer = (key: KeyRecord, provisioned: boolean): ExchangedKey => ({
      token: mintToken({ kid: key.id, sub: person.identity, exp: key.expiresAt }, secret),
      key_id: key.id,
      identity: person.identity,
      team,
      group,
      group_provisioned: provisioned,
      expires_at: key.expiresAt,
      base_url: snapshot.identity.publicUrl ?? null,
    });
    if (record) {
      const state = keyState(record);
      if (state === "disabled") throw new GatewayError("forbidden", `key ${record.id} of ${person.identity} is disabled by an administrator`);
      const spent = state !== "active" || record.expiresAt <= nowSecs || record.group !== group;
      if (!rotate && !spent) return answer(record, false);
    }
    const next = record ? generation + 1 : generation;
    const minted = await this.#deps.keys.create(
      {
        id: exchangedKeyId(person.identity, next, secret),
        name: person.identity,
        allowedPools: null,
        expiresAt: Math.min(nowSecs + snapshot.identity.keyTtlSecs, MAX_EXPIRES_AT),
        group,
        parent: team,
        issueAwsCredential: false,
        labels: { provider: person.provider },
      },
      person.identity,
    );
    this.#generations.set(person.identity, next);
    // The old key dies once the new one exists: a failed mint leaves the person their working key.
    if (record && keyState(record) === "active") await this.#deps.keys.revoke(record.id, person.identity);
    return answer(minted.record, minted.groupProvisioned);
  }

  /** The newest generation with a key (its record), or generation 0 with none. */
  #latest(identity: string, secret: string): { generation: number; record: KeyRecord | undefined } {
    const at = (g: number) => this.#deps.registry.get(exchangedKeyId(identity, g, secret));
    let generation = this.#generations.get(identity) ?? 0;
    // A hint from another signing key (or a store restored from a backup) names no key: start over.
    if (generation > 0 && !at(generation)) generation = 0;
    let record = at(generation);
    if (!record) return { generation: 0, record: undefined };
    for (let next = at(generation + 1); next; next = at(generation + 1)) {
      generation += 1;
      record = next;
    }
    this.#generations.set(identity, generation);
    return { generation, record };
  }
}
