// `limits.max_inbound_concurrent` (gaps.md: default 4096; past it 503 with Retry-After: 1 at once): one
// count of model requests in flight, per process, fixed at boot. A streamed answer holds its slot until
// the stream settles (its end, a break, or the client leaving), as group concurrency caps do.

export class InboundLimit {
  #inflight = 0;

  constructor(readonly cap: number) {}

  /** A slot for one request, or undefined when every slot is taken. */
  enter(): InboundSlot | undefined {
    if (this.#inflight >= this.cap) return undefined;
    this.#inflight += 1;
    return new InboundSlot(() => (this.#inflight -= 1));
  }

  get inflight(): number {
    return this.#inflight;
  }
}

/** One request's slot; the same end / deferEnd / answered contract as a RequestMeter. */
export class InboundSlot {
  #ended = false;
  #deferred = false;

  constructor(private readonly release: () => void) {}

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.release();
  }

  deferEnd(): void {
    this.#deferred = true;
  }

  answered(): void {
    if (!this.#deferred) this.end();
  }
}
