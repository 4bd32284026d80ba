// Errors in the IR. Two kinds meet here: errors the gateway generates (bad body, unknown model, ...),
// which each protocol encodes in its own native shape so the vendor SDK raises its own typed error; and
// upstream errors, which are classified so routing knows whether to relay, fail over or bench a lane.

/** What went wrong, in the words every protocol's error table is written in (protocols.md). */
export type IrErrorKind =
  | "invalid_request" // malformed body, bad parameter: 400
  | "authentication" // bad or missing credential: 401
  | "permission" // credential fine, target not allowed: 403
  | "not_found" // unknown model: 404
  | "request_too_large" // body over the limit: 413
  | "rate_limit" // 429 + Retry-After
  | "insufficient_quota" // budget exhausted (429; Bedrock 400)
  | "overloaded" // every pool member unusable: 503 (Anthropic 529)
  | "timeout" // upstream did not answer in time: 504
  | "api_error"; // anything else: 500 / 502

/**
 * How a failure should steer routing (architecture.md, "Failure classes decide failover").
 * caller: relay, no penalty. rate_limit / transient: fail over, count a breaker failure.
 * credential: bench 30 min, relay. quota: bench 30 min, fail over. context_length: fail over to a
 * larger lane, no fault.
 */
export type FailureClass = "caller" | "rate_limit" | "transient" | "credential" | "quota" | "context_length";

export interface IrError {
  readonly kind: IrErrorKind;
  readonly status: number;
  readonly message: string;
  /** Upstream errors only: how routing treats it. */
  readonly failure?: FailureClass;
  /** Seconds, from an upstream Retry-After or the gateway's own limiter. */
  readonly retryAfterSecs?: number;
  /** The parameter at fault, where the protocol names one (OpenAI `param`). */
  readonly param?: string;
  /** A vendor-specific code or type to keep (OpenAI `code`, e.g. `model_not_found`). */
  readonly code?: string;
}

const STATUS: Record<IrErrorKind, number> = {
  invalid_request: 400,
  authentication: 401,
  permission: 403,
  not_found: 404,
  request_too_large: 413,
  rate_limit: 429,
  insufficient_quota: 429,
  overloaded: 503,
  timeout: 504,
  api_error: 500,
};

export function irError(kind: IrErrorKind, message: string, extra: Partial<Omit<IrError, "kind" | "message">> = {}): IrError {
  return { kind, message, status: extra.status ?? STATUS[kind], ...extra };
}

/** Classifies an upstream HTTP failure that the protocol's decoder could not place more precisely. */
export function failureFromStatus(status: number): FailureClass {
  if (status === 401 || status === 403) return "credential";
  if (status === 402) return "quota";
  if (status === 429) return "rate_limit";
  if (status === 408 || status >= 500) return "transient";
  return "caller";
}

export function kindFromStatus(status: number): IrErrorKind {
  if (status === 400 || status === 422) return "invalid_request";
  if (status === 401) return "authentication";
  if (status === 403) return "permission";
  if (status === 404) return "not_found";
  if (status === 413) return "request_too_large";
  if (status === 429) return "rate_limit";
  if (status === 503 || status === 529) return "overloaded";
  if (status === 504 || status === 408) return "timeout";
  return "api_error";
}
