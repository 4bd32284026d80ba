// A lane is one provider plus one upstream model: the unit the breaker, limits and /stats speak of.
import type { ResolvedProvider } from "../providers/provider.ts";

export interface Lane {
  /** The model alias (its key under `models:`). */
  readonly name: string;
  readonly provider: ResolvedProvider;
  /** The model name sent upstream. */
  readonly upstreamModel: string;
  readonly contextWindow: number | null;
  readonly maxConcurrent: number | null;
  readonly maxRequests: number | null;
}
