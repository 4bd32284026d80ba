// What a governed request reserves at admission (replicas.md "Limits: exact for the fleet"): its input
// from the body's size scaled by what the pool's upstream has counted per token of size, its output from
// the requested maximum, else from what the pool's recent answers used. The estimate only has to be
// near: real usage replaces it when the request settles, and a bucket admits while settled + reserved is
// below its cap, so the estimate's error is the whole overshoot.
import { estimateTokens } from "../ir/estimate.ts";
import type { Pool } from "../routing/pool.ts";
import type { GatewayConfig } from "../config/schema.ts";

/** Output tokens reserved when the request names no maximum and its pool has not answered yet. */
export const DEFAULT_OUTPUT_ESTIMATE = 1024;
/** A requested maximum above this is reserved as this (protocols refuse larger ones anyway). */
const MAX_OUTPUT = 2 ** 31 - 1;

/** A reservation's token estimate and its cost in micro-units (the per-request fee is counted apart). */
export interface Reservation {
  readonly tokens: number;
  readonly spendMicros: number;
  /** The body's size in tokens (before the pool's input scale), which the answer's input is compared with. */
  readonly sizeTokens?: number;
}

export const NO_RESERVATION: Reservation = Object.freeze({ tokens: 0, spendMicros: 0, sizeTokens: 0 });

/** The request's own output bound, in any protocol's spelling; undefined when it names none. */
export function requestedMaxOutput(body: Record<string, unknown>): number | undefined {
  const value =
    body.max_completion_tokens ??
    body.max_tokens ??
    body.max_output_tokens ??
    (body.generationConfig as { maxOutputTokens?: unknown } | undefined)?.maxOutputTokens ??
    (body.inferenceConfig as { maxTokens?: unknown } | undefined)?.maxTokens;
  return typeof value === "number" && value > 0 ? Math.min(Math.ceil(value), MAX_OUTPUT) : undefined;
}

/**
 * A figure per pool learnt from its answers: the first one seen, then up at once to any larger one and
 * down slowly (1/16 of the gap per answer), so a mix of sizes is estimated near its large end.
 */
class PoolHighWater {
  readonly #byPool = new Map<string, number>();

  constructor(private readonly initial: number) {}

  of(pool: string): number {
    return this.#byPool.get(pool) ?? this.initial;
  }

  observe(pool: string, value: number): void {
    const high = this.#byPool.get(pool);
    this.#byPool.set(pool, high === undefined || value >= high ? value : high + (value - high) / 16);
  }
}

/** Per pool, the output a request without a maximum is expected to use. */
export class OutputEstimates extends PoolHighWater {
  constructor() {
    super(DEFAULT_OUTPUT_ESTIMATE);
  }
}

/**
 * Per pool, input tokens counted by the upstream per token of body size (4 bytes a token): a chat template's
 * fixed overhead makes a short request cost several times its size, and an upstream that counts more than
 * the estimate would overshoot a cap by the difference for each request in flight.
 */
export class InputScales extends PoolHighWater {
  constructor() {
    super(1);
  }

  /** Never below 1: a body mostly of media (base64 the upstream counts as a few tokens) must not shrink the next text request's reservation. */
  override observe(pool: string, ratio: number): void {
    super.observe(pool, Math.max(1, ratio));
  }
}

type Pricing = Pick<GatewayConfig, "rate_card">;

/**
 * Tokens and their cost at the dearest rate among the pool's lanes (the lane is not chosen yet). Input is
 * the body's size; `bodyBytes` undefined (a chunked body) measures the parsed body instead.
 */
export function reservationFor(pricing: Pricing, pool: Pool, body: Record<string, unknown>, bodyBytes: number | undefined, output: number, inputScale = 1): Reservation {
  // A reservation always holds at least one token, even for an empty body.
  const sizeTokens = Math.max(1, estimateTokens(bodyBytes ?? JSON.stringify(body).length));
  const input = Math.ceil(sizeTokens * inputScale);
  const { inputRate, outputRate } = dearestRates(pricing, pool);
  return { tokens: input + output, spendMicros: Math.round(input * inputRate + output * outputRate), sizeTokens };
}

interface PoolRates {
  readonly pricing: Pricing;
  readonly inputRate: number;
  readonly outputRate: number;
}

/** Per pool (a snapshot's pools are new objects), its lanes' dearest rates under the card they were read from. */
const ratesByPool = new WeakMap<Pool, PoolRates>();

/** The dearest input and output rates among the pool's lanes: read once per pool and rate card, not per request. */
function dearestRates(pricing: Pricing, pool: Pool): PoolRates {
  const known = ratesByPool.get(pool);
  if (known !== undefined && known.pricing === pricing) return known;
  let inputRate = 0;
  let outputRate = 0;
  for (const { lane } of pool.members) {
    const rate = pricing.rate_card?.[lane.name];
    if (!rate) continue;
    inputRate = Math.max(inputRate, rate.input, rate.cache_creation ?? 0);
    outputRate = Math.max(outputRate, rate.output);
  }
  const rates = { pricing, inputRate, outputRate };
  ratesByPool.set(pool, rates);
  return rates;
}
