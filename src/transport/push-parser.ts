// The shape of every stream decoder the data plane drives (SSE, AWS event-stream, Gemini's JSON array):
// the caller pushes each piece of a body as it arrives and gets back, synchronously, what that piece
// completed. No stream object, promise or scheduling turn per piece: the relay that reads an upstream
// body pushes straight through a parser and an encoder into the client's response (translate.ts).

export interface PushParser<T> {
  /** What `bytes` complete, in order (often nothing); the caller reads it, never writes to it. May throw on input past a decoder's bound (SseEventTooLarge). */
  push(bytes: Uint8Array): readonly T[];
  /** The body ended: what the held state makes of it. */
  end(): readonly T[];
}

/** What a push that completed nothing returns: shared, never written to. */
const NOTHING_MADE: never[] = [];

/**
 * What one push makes, gathered as it comes; `take` hands it over and starts afresh. The first non-empty
 * array added is kept as it is (a push usually completes one event: no copy), and copied only when a
 * second one joins it, so an array added is never written to.
 */
export class Made<T> {
  private items: T[] | undefined;
  private owned = false;

  add(items: readonly T[]): void {
    const n = items.length;
    if (n === 0) return;
    if (this.items === undefined) {
      this.items = items as T[];
      this.owned = false;
      return;
    }
    if (!this.owned) {
      this.items = this.items.slice();
      this.owned = true;
    }
    for (let i = 0; i < n; i++) this.items.push(items[i]!);
  }

  take(): T[] {
    const made = this.items ?? NOTHING_MADE;
    this.items = undefined;
    return made;
  }
}

/** A push parser as a stream stage, for pipelines (tests, tools); the data plane drives parsers directly. */
export function parserTransform<T>(parser: PushParser<T>): TransformStream<Uint8Array, T> {
  return new TransformStream<Uint8Array, T>({
    transform(chunk, controller) {
      for (const item of parser.push(chunk)) controller.enqueue(item);
    },
    flush(controller) {
      for (const item of parser.end()) controller.enqueue(item);
    },
  });
}
