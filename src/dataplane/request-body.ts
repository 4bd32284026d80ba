// A model request's body, read once: within the body-read deadline, under the size limit (serve.ts),
// then bounded in nesting before JSON.parse sees it. Each refusal is an IR error the caller's protocol
// encodes.
import { BodyReadTimeout, bodyReadTimeoutMessage, readWithin } from "../http/body-deadline.ts";
import { jsonTextTooDeep, TOO_DEEP_MESSAGE } from "../http/json-depth.ts";
import { BodyTooLargeError } from "../http/serve.ts";
import { irError, type IrError } from "../ir/index.ts";

export type Refusal = { ok: false; error: IrError };
export type BodyRead = { ok: true; body: Record<string, unknown> } | Refusal;

const notAnObject = (): Refusal => ({ ok: false, error: irError("invalid_request", "The request body must be a JSON object.") });
const tooDeep: Refusal = { ok: false, error: irError("invalid_request", TOO_DEEP_MESSAGE) };
const unreadable = (error: unknown): Refusal => (error instanceof BodyTooLargeError ? { ok: false, error: irError("request_too_large", error.message) } : notAnObject());
const asObject = (body: unknown): BodyRead => (typeof body === "object" && body !== null && !Array.isArray(body) ? { ok: true, body: body as Record<string, unknown> } : notAnObject());
const decoder = new TextDecoder();

type Read<T> = { ok: true; value: T } | Refusal;

const refusalOf = (timeoutMs: number) => (error: unknown): Refusal =>
  error instanceof BodyReadTimeout ? { ok: false, error: irError("timeout", bodyReadTimeoutMessage(timeoutMs), { status: 408 }) } : unreadable(error);

/** The body as text (decoded natively), or the caller error to answer with (over the size limit, or too slow). */
export function readBodyText(request: Request, timeoutMs: number): Promise<Read<string>> {
  return readWithin(request, timeoutMs, "text").then((value) => ({ ok: true, value }), refusalOf(timeoutMs));
}

/** The body's bytes, for a body whose signature covers them (SigV4). */
export function readBodyBytes(request: Request, timeoutMs: number): Promise<Read<Uint8Array>> {
  return readWithin(request, timeoutMs).then((value) => ({ ok: true, value }), refusalOf(timeoutMs));
}

/** The text as a JSON object, or the 400 to answer with; its nesting is bounded before JSON.parse sees it. */
export function parseBody(text: string): BodyRead {
  if (jsonTextTooDeep(text)) return tooDeep;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return notAnObject();
  }
  return asObject(parsed);
}

/** Signed bytes as a JSON object. */
export const parseBodyBytes = (bytes: Uint8Array): BodyRead => parseBody(decoder.decode(bytes));
