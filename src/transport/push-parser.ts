// The shape of every stream decoder the data plane drives (SSE, AWS event-stream, Gemini's JSON array):
// the caller pushes each piece of a body as it arrives and gets back, synchronously, what that piece
// completed. No stream object, promise or scheduling turn per piece: the relay that reads an upstream
// body pushes straight through a parser and an encoder into the client's response (translate.ts).

export interface PushParser<T> {
  /** What `bytes` complete, in order (often nothing). May throw on input past a decoder's bound (SseEventTooLarge). */
  push(bytes: Uint8Array): T[];
  /** The body ended: what the held state makes of it. */
  end(): T[];
}

/** What a push that completed nothing returns: shared, never written to (a push allocates only when it has something). */
const NOTHING_MADE: never[] = [];

/** What one push makes, gathered as it comes; `take` hands it over and starts afresh. */
export class Made<T> {
  private items: T[] | undefined;

  add(items: Iterable<T>): void {
    for (const item of items) (this.items ??= []).push(item);
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
