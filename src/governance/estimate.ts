// What a governed request reserves at admission (replicas.md "Limits: exact for the fleet"): its input
// from the body's size, its output from the requested maximum, else from what the pool's recent answers
// used. The estimate only has to be near: real usage replaces it when the request settles, and a bucket
// admits while settled + reserved is below its cap, so the estimate's error is the whole overshoot.
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
}

export const NO_RESERVATION: Reservation = Object.freeze({ tokens: 0, spendMicros: 0 });

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
 * Per pool, the output a request without a maximum is expected to use: the first answer's output, then
 * up at once to any larger one and down slowly (1/16 of the gap per answer), so a mix of sizes is
 * estimated near its large end.
 */
export class OutputEstimates {
  readonly #byPool = new Map<string, number>();

  of(pool: string): number {
    return this.#byPool.get(pool) ?? DEFAULT_OUTPUT_ESTIMATE;
  }

  observe(pool: string, output: number): void {
    const high = this.#byPool.get(pool);
    this.#byPool.set(pool, high === undefined || output >= high ? output : high + (output - high) / 16);
  }
}

type Pricing = Pick<GatewayConfig, "rate_card">;

/**
 * Tokens and their cost at the dearest rate among the pool's lanes (the lane is not chosen yet). Input is
 * the body's size; `bodyBytes` undefined (a chunked body) measures the parsed body instead.
 */
export function reservationFor(pricing: Pricing, pool: Pool, body: Record<string, unknown>, bodyBytes: number | undefined, output: number): Reservation {
  // A reservation always holds at least one token, even for an empty body.
  const input = Math.max(1, estimateTokens(bodyBytes ?? JSON.stringify(body).length));
  let inputRate = 0;
  let outputRate = 0;
  for (const { lane } of pool.members) {
    const rate = pricing.rate_card?.[lane.name];
    if (!rate) continue;
    inputRate = Math.max(inputRate, rate.input, rate.cache_creation ?? 0);
    outputRate = Math.max(outputRate, rate.output);
  }
  return { tokens: input + output, spendMicros: Math.round(input * inputRate + output * outputRate) };
}
