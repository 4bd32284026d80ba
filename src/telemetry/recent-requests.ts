// The last requests' log records, kept in memory whatever exporters run (design/console.md: the Requests
// screen has history without any exporter). The ring keeps the finished request as the hub got it: a
// request pays one array store; its record is built (once) only when GET /requests reads it.
import type { FinishedRequest, RequestRecord } from "./records.ts";

export const RECENT_REQUESTS = 1000;

/** GET /requests's filters; an absent member matches every record. */
export interface RecentFilter {
  readonly key_id?: string;
  readonly group?: string;
  readonly model?: string;
  readonly status?: number;
  readonly outcome?: RequestRecord["outcome"];
}

export class RecentRequests {
  readonly #slots: (FinishedRequest | undefined)[];
  /** Where the next record goes; the newest is just before it. */
  #next = 0;

  constructor(readonly capacity = RECENT_REQUESTS) {
    this.#slots = new Array<FinishedRequest | undefined>(capacity).fill(undefined);
  }

  push(request: FinishedRequest): void {
    this.#slots[this.#next] = request;
    this.#next = this.#next + 1 === this.capacity ? 0 : this.#next + 1;
  }

  /** Up to `limit` records matching `filter`, newest first. */
  newest(filter: RecentFilter, limit: number): RequestRecord[] {
    const found: RequestRecord[] = [];
    for (let seen = 1; seen <= this.capacity && found.length < limit; seen++) {
      const request = this.#slots[(this.#next - seen + this.capacity) % this.capacity];
      if (request === undefined) break;
      const record = request.record();
      if (matches(record, filter)) found.push(record);
    }
    return found;
  }
}

function matches(record: RequestRecord, filter: RecentFilter): boolean {
  return (
    (filter.key_id === undefined || record.key_id === filter.key_id) &&
    (filter.group === undefined || record.group === filter.group) &&
    (filter.model === undefined || record.model === filter.model) &&
    (filter.status === undefined || record.status === filter.status) &&
    (filter.outcome === undefined || record.outcome === filter.outcome)
  );
}
