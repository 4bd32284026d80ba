// A tap's queue: events are handed over without waiting (the request never awaits a tap), gathered for a
// millisecond and delivered one at a time, each bounded by the hook's timeout_ms so a hanging tap only
// fills its own queue. Past MAX_QUEUED events the newest are dropped and counted.
import type { HookInstance, TapEvent } from "./types.ts";

export const MAX_QUEUED = 1024;
/** How long events gather before their tap is called. */
const BATCH_MS = 1;

export class TapQueue {
  private readonly queue: TapEvent[] = [];
  private draining = false;
  dropped = 0;

  constructor(
    private readonly hook: string,
    private readonly instance: () => HookInstance | undefined,
    private readonly timeoutMs: number,
    private readonly onDrop: () => void,
    private readonly onError: (cause: string) => void,
  ) {}

  get queued(): number {
    return this.queue.length;
  }

  push(event: Omit<TapEvent, "hook">): void {
    if (this.queue.length >= MAX_QUEUED) {
      this.dropped += 1;
      this.onDrop();
      return;
    }
    this.queue.push({ ...event, hook: this.hook });
    if (!this.draining) {
      this.draining = true;
      // One timer per millisecond, not a turn of the event loop per event: under load a batch holds every
      // event of that millisecond, so a tap costs its push and its call. Unref'd: it never holds a stop.
      setTimeout(this.drain, BATCH_MS).unref();
    }
  }

  /** Synchronous while the tap answers synchronously; a tap's promise is awaited (bounded) before the next event. */
  private readonly drain = (): void => {
    for (let event = this.queue.shift(); event; event = this.queue.shift()) {
      const instance = this.instance();
      const tap = instance?.tap;
      if (!tap) continue;
      let result: unknown;
      try {
        result = tap.call(instance, event);
      } catch (error) {
        this.onError(error instanceof Error ? error.message : String(error));
        continue;
      }
      if (result instanceof Promise) {
        within(result, this.timeoutMs)
          .catch((error: unknown) => this.onError(error instanceof Error ? error.message : String(error)))
          .finally(this.drain);
        return;
      }
    }
    this.draining = false;
  };
}

export class TimedOut extends Error {
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
  }
}

/** `promise`, or a TimedOut rejection after `ms`. */
export function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout>;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new TimedOut(ms)), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
