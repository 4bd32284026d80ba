// What a decode dropped or changed, said once per kind of member (a `cache_control` on every block is
// one warning, not fifty), naming where it was first seen and how often. Each protocol gives the
// reasons for the members its clients commonly send; anything else gets the generic one.
import type { TObject, TProperties } from "@sinclair/typebox";

const GENERIC = "not modelled by the gateway's IR";

export class DropLog {
  private readonly seen = new Map<string, { at: string; count: number; why: string }>();
  private readonly notes = new Set<string>();

  constructor(private readonly reasons: Readonly<Record<string, string>> = {}) {}

  /** A value carried in a changed form (converted, clamped) rather than dropped; said once. */
  note(text: string): void {
    this.notes.add(text);
  }

  drop(key: string, at: string, why = this.reasons[key] ?? GENERIC): void {
    const entry = this.seen.get(key);
    if (entry) entry.count += 1;
    else this.seen.set(key, { at, count: 1, why });
  }

  /** Warns about every member of `value` the schema does not name (the IR does not carry it); a null one loses nothing. */
  unknownMembers(value: object, schema: TObject<TProperties>, at: string, also: readonly string[] = []): void {
    // for-in rather than Object.entries: this runs on every object of every translated request.
    for (const member in value) {
      if (member in schema.properties || also.includes(member)) continue;
      const content = (value as Record<string, unknown>)[member];
      if (content === null || content === undefined) continue;
      this.drop(member, at === "" ? member : `${at}.${member}`);
    }
  }

  list(): string[] {
    if (this.seen.size === 0 && this.notes.size === 0) return [];
    const drops = [...this.seen.entries()].map(([key, { at, count, why }]) => {
      const where = at === key ? "" : ` at ${at}`;
      const more = count > 1 ? ` (and ${count - 1} more)` : "";
      return `${key} dropped${where}${more}: ${why}`;
    });
    return [...drops, ...this.notes];
  }
}
