// The admin plane's rate limit (gaps.md: 20 requests/s per source address, burst 100; past it 429
// rate_limited with Retry-After): a token bucket per address, in memory. The map is bounded, so a
// spray of source addresses cannot grow it without limit (the least recently seen address goes first).

const MAX_ADDRESSES = 10_000;

interface Bucket {
  tokens: number;
  /** Epoch milliseconds of the last refill. */
  at: number;
}

export interface RateSettings {
  readonly per_second: number;
  readonly burst: number;
}

export class AdminRateLimit {
  readonly #buckets = new Map<string, Bucket>();

  constructor(private readonly now: () => number) {}

  /** Seconds to wait when `address` is over its rate; undefined when the request may go on (and is counted). */
  take(address: string, settings: RateSettings): number | undefined {
    const now = this.now();
    let bucket = this.#buckets.get(address);
    if (bucket) this.#buckets.delete(address);
    else {
      if (this.#buckets.size >= MAX_ADDRESSES) this.#buckets.delete(this.#buckets.keys().next().value!);
      bucket = { tokens: settings.burst, at: now };
    }
    // Re-inserted, so the map's order is least recently seen first.
    this.#buckets.set(address, bucket);
    bucket.tokens = Math.min(settings.burst, bucket.tokens + ((now - bucket.at) / 1000) * settings.per_second);
    bucket.at = now;
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return undefined;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / settings.per_second));
  }
}
