// A resolved secret. Its value leaves only through reveal(); every other way of turning it into text
// (JSON, string templates, Bun.inspect, the logger) yields a placeholder, so a secret cannot leak by
// being logged or serialised into a view by accident.
const REDACTED = "[redacted]";

export class Secret {
  readonly #value: string;
  /** Where it came from (`env:NAME`, `file:PATH`, `literal`): safe to show, never the value. */
  readonly source: string;

  constructor(value: string, source: string) {
    this.#value = value;
    this.source = source;
    Object.freeze(this);
  }

  reveal(): string {
    return this.#value;
  }

  get empty(): boolean {
    return this.#value.length === 0;
  }

  toString(): string {
    return REDACTED;
  }

  toJSON(): string {
    return REDACTED;
  }

  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return REDACTED;
  }
}

/**
 * Constant-time comparison of a presented credential with a secret. Both sides are hashed first so
 * neither the content nor the length of the secret shows in the timing.
 */
export function secretEquals(secret: Secret, presented: string): boolean {
  if (secret.empty) return false;
  // Bun.CryptoHasher and the global crypto.timingSafeEqual: importing node:crypto cost every start ~1 ms and ~1 MB.
  const digest = (text: string) => new Bun.CryptoHasher("sha256").update(text).digest();
  return crypto.timingSafeEqual(digest(secret.reveal()), digest(presented));
}
