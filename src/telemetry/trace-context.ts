// W3C Trace Context (design/telemetry.md, "Traces"), and the request id every data-plane answer carries.
// A valid incoming `traceparent` parents the request's SERVER span and its sampled flag is obeyed; an
// invalid one is ignored (a new root). Ids come from the platform's CSPRNG.

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ZERO_TRACE = "0".repeat(32);
const ZERO_SPAN = "0".repeat(16);
/** `tracestate` is a list of at most 32 members; anything longer is not passed on. */
const MAX_TRACESTATE = 512;

export interface IncomingTrace {
  readonly traceId: string;
  readonly parentSpanId: string;
  readonly sampled: boolean;
  readonly traceState: string | null;
}

export function incomingTrace(headers: Headers): IncomingTrace | undefined {
  const header = headers.get("traceparent");
  if (header === null) return undefined;
  const m = TRACEPARENT.exec(header.trim());
  if (!m || m[1] === ZERO_TRACE || m[2] === ZERO_SPAN) return undefined;
  const state = headers.get("tracestate");
  return { traceId: m[1]!, parentSpanId: m[2]!, sampled: (Number.parseInt(m[3]!, 16) & 1) === 1, traceState: state !== null && state.length <= MAX_TRACESTATE ? state : null };
}

function hex(bytes: number): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("hex");
}

/**
 * Span and trace ids are cut from a pool of CSPRNG hex, refilled 4 KiB at a time: a traced request takes
 * three or more ids, and a getRandomValues call and a hex encoding each cost more than the slice.
 */
const POOL_BYTES = 4096;
let pool = "";
let at = 0;
function pooledHex(chars: number): string {
  if (at + chars > pool.length) {
    pool = hex(POOL_BYTES);
    at = 0;
  }
  const id = pool.slice(at, at + chars);
  at += chars;
  return id;
}

export const newTraceId = (): string => pooledHex(32);
export const newSpanId = (): string => pooledHex(16);

export const traceparent = (traceId: string, spanId: string, sampled: boolean): string => `00-${traceId}-${spanId}-${sampled ? "01" : "00"}`;

const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** A process prefix and a counter: unique per process, cheap on every request. */
const PREFIX = hex(6);
let sequence = 0;

/** The client's `x-request-id` when it is a sane token, else a fresh one. */
export function requestIdOf(headers: Headers): string {
  const sent = headers.get("x-request-id");
  if (sent !== null && CLIENT_REQUEST_ID.test(sent)) return sent;
  sequence += 1;
  return `${PREFIX}-${sequence.toString(36)}`;
}
