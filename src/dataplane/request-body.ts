// A model request's body, read once: within the body-read deadline, under the size limit (serve.ts),
// then bounded in nesting before JSON.parse sees it. Each refusal is an IR error the caller's protocol
// encodes.
import { BodyReadTimeout, bodyReadTimeoutMessage, readWithin } from "../http/body-deadline.ts";
import { jsonTooDeep, TOO_DEEP_MESSAGE } from "../http/json-depth.ts";
import { BodyTooLargeError } from "../http/serve.ts";
import { irError, type IrError } from "../ir/index.ts";

export type Refusal = { ok: false; error: IrError };
export type BodyRead = { ok: true; body: Record<string, unknown> } | Refusal;

const notAnObject = (): Refusal => ({ ok: false, error: irError("invalid_request", "The request body must be a JSON object.") });
const tooDeep: Refusal = { ok: false, error: irError("invalid_request", TOO_DEEP_MESSAGE) };
const unreadable = (error: unknown): Refusal => (error instanceof BodyTooLargeError ? { ok: false, error: irError("request_too_large", error.message) } : notAnObject());
const asObject = (body: unknown): BodyRead => (typeof body === "object" && body !== null && !Array.isArray(body) ? { ok: true, body: body as Record<string, unknown> } : notAnObject());
const decoder = new TextDecoder();

type BytesRead = { ok: true; bytes: Uint8Array } | Refusal;

/** The body's bytes, or the caller error to answer with (over the size limit, or too slow). */
export async function readBody(request: Request, timeoutMs: number): Promise<BytesRead> {
  try {
    return { ok: true, bytes: await readWithin(request, timeoutMs) };
  } catch (error) {
    if (error instanceof BodyReadTimeout) return { ok: false, error: irError("timeout", bodyReadTimeoutMessage(timeoutMs), { status: 408 }) };
    return unreadable(error);
  }
}

/** The bytes as a JSON object, or the 400 to answer with; their nesting is bounded before JSON.parse sees them. */
export function parseBody(bytes: Uint8Array): BodyRead {
  if (jsonTooDeep(bytes)) return tooDeep;
  let parsed: unknown;
  try {
    parsed = JSON.parse(decoder.decode(bytes));
  } catch {
    return notAnObject();
  }
  return asObject(parsed);
}
