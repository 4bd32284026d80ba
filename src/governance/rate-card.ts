// Spend from tokens: `rate_card` gives abstract cost units per 1M tokens by model, `per_request_fee` cost
// units per admitted request. One cost unit counts as one cent against `budget_cents`, and a micro-unit
// (spend_micros) is a millionth of one, so a rate per 1M tokens is exactly micro-units per token.
import type { GatewayConfig } from "../config/schema.ts";
import type { IrUsage } from "../ir/index.ts";

/** The four billed tiers of the spec's KeyUsageView (reasoning tokens are part of output). */
export interface TokenTiers {
  readonly input: number;
  readonly output: number;
  readonly cache_read: number;
  readonly cache_creation: number;
}

export const ZERO_TIERS: TokenTiers = Object.freeze({ input: 0, output: 0, cache_read: 0, cache_creation: 0 });

export function tiersOf(usage: IrUsage): TokenTiers {
  return { input: usage.inputNoCache, output: usage.output, cache_read: usage.inputCacheRead, cache_creation: usage.inputCacheWrite };
}

export const tokensOf = (t: TokenTiers) => t.input + t.output + t.cache_read + t.cache_creation;

type Pricing = Pick<GatewayConfig, "rate_card" | "per_request_fee">;

/** Micro-units for these tokens of `model` (a model missing from the card costs nothing) and `requests` fees. */
export function spendMicros(pricing: Pricing, model: string, tiers: TokenTiers, requests: number): number {
  const rate = pricing.rate_card?.[model];
  const tokens = rate ? tiers.input * rate.input + tiers.output * rate.output + tiers.cache_read * (rate.cache_read ?? 0) + tiers.cache_creation * (rate.cache_creation ?? 0) : 0;
  return Math.round(tokens + requests * (pricing.per_request_fee ?? 0) * 1_000_000);
}

/** Whole cents (cost units) of a micro-unit amount, rounded down: a budget is not spent until a cent is. */
export const centsOf = (micros: number) => Math.floor(micros / 1_000_000);
