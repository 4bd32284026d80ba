// The admin plane's live feed behind GET /events: every reader gets each event as SSE text; at most 16
// readers; a reader whose connection stops taking bytes is cut with `event: overflow` once 1,000 events
// wait for it; shutdown ends every stream; nothing is written to a reader that left.
import { expect, test } from "bun:test";
import { LiveFeed, MAX_LIVE_STREAMS, MAX_QUEUED_EVENTS, type LiveReader } from "../../src/telemetry/live-feed.ts";
import type { PushOut } from "../../src/http/push-stream.ts";
import type { RequestRecord } from "../../src/telemetry/records.ts";

/** A client connection: `full` makes every write report a full buffer until `drain()`. */
function client(full = false) {
  const out = { text: "", ended: false, full, resume: undefined as (() => void) | undefined };
  const push: PushOut = {
    write(bytes) {
      out.text += typeof bytes === "string" ? bytes : new TextDecoder().decode(bytes);
      return !out.full;
    },
    onDrain(resume) {
      out.resume = resume;
    },
    end() {
      out.ended = true;
    },
    abort() {
      out.ended = true;
    },
  };
  return { out, push, drain: () => ((out.full = false), out.resume?.()) };
}

const record = (n: number) => ({ request_id: `req-${n}`, model: "gpt", status: 200 }) as unknown as RequestRecord;

/** The SSE events in a stream's text: [name, parsed data]. */
const events = (text: string) =>
  text
    .split("\n\n")
    .filter((block) => block.startsWith("event: "))
    .map((block) => {
      const [name, data] = block.split("\n");
      return [name!.slice(7), JSON.parse(data!.slice(6))] as const;
    });

test("each event reaches every reader as SSE: request records and breaker changes", () => {
  const feed = new LiveFeed();
  const a = client();
  const b = client();
  feed.open()!.attach(a.push);
  feed.open()!.attach(b.push);
  feed.request(record(1));
  feed.breaker("chat", "gpt", "open", Date.UTC(2026, 10, 27, 8, 0, 0, 5));
  for (const c of [a, b]) {
    expect(c.out.text.startsWith(": connected\n\n")).toBe(true);
    expect(events(c.out.text)).toEqual([
      ["request", { request_id: "req-1", model: "gpt", status: 200 }],
      ["breaker", { pool: "chat", lane: "gpt", state: "open", ts: "2026-11-27T08:00:00.005Z" }],
    ]);
  }
  feed.closeAll();
});

test("events before the client starts reading wait, and go out in order when it does", () => {
  const feed = new LiveFeed();
  const reader = feed.open()!;
  feed.request(record(1));
  feed.request(record(2));
  const c = client();
  reader.attach(c.push);
  expect(events(c.out.text).map(([, d]) => d.request_id)).toEqual(["req-1", "req-2"]);
  feed.closeAll();
});

test(`at most ${MAX_LIVE_STREAMS} readers; one that leaves frees its place`, () => {
  const feed = new LiveFeed();
  const readers: LiveReader[] = [];
  for (let i = 0; i < MAX_LIVE_STREAMS; i++) readers.push(feed.open()!);
  expect(readers.every((r) => r !== undefined)).toBe(true);
  expect(feed.open()).toBeUndefined();
  readers[3]!.left();
  expect(feed.readers).toBe(MAX_LIVE_STREAMS - 1);
  expect(feed.open()).toBeDefined();
  expect(feed.open()).toBeUndefined();
  feed.closeAll();
  expect(feed.readers).toBe(0);
});

test(`a reader that stops taking bytes is sent overflow and closed once ${MAX_QUEUED_EVENTS} events wait; others go on`, () => {
  const feed = new LiveFeed();
  const slow = client(true);
  const fast = client();
  feed.open()!.attach(slow.push);
  feed.open()!.attach(fast.push);
  // The first write found the buffer full: from then on events queue for the slow reader.
  for (let n = 1; n <= MAX_QUEUED_EVENTS; n++) feed.request(record(n));
  expect(slow.out.ended).toBe(false);
  expect(feed.readers).toBe(2);
  feed.request(record(MAX_QUEUED_EVENTS + 1));
  expect(slow.out.ended).toBe(true);
  const got = events(slow.out.text);
  expect(got.at(-1)![0]).toBe("overflow");
  expect(got.at(-1)![1].message).toContain("GET /requests");
  expect(feed.readers).toBe(1);
  // Nothing more is queued or written for it, even when its connection drains.
  const before = slow.out.text;
  slow.drain();
  feed.request(record(0));
  expect(slow.out.text).toBe(before);
  expect(events(fast.out.text).length).toBe(MAX_QUEUED_EVENTS + 2);
  feed.closeAll();
});

test("a reader that drains in time loses nothing and stays open", () => {
  const feed = new LiveFeed();
  const c = client(true);
  feed.open()!.attach(c.push);
  for (let n = 1; n <= 500; n++) feed.request(record(n));
  c.drain();
  for (let n = 501; n <= 600; n++) feed.request(record(n));
  expect(c.out.ended).toBe(false);
  expect(events(c.out.text).map(([, d]) => d.request_id)).toEqual(Array.from({ length: 600 }, (_, i) => `req-${i + 1}`));
  feed.closeAll();
});

test("shutdown ends every stream, also one whose client has not started reading", () => {
  const feed = new LiveFeed();
  const attached = client();
  feed.open()!.attach(attached.push);
  const waiting = feed.open()!;
  feed.closeAll();
  expect(attached.out.ended).toBe(true);
  expect(feed.readers).toBe(0);
  const late = client();
  waiting.attach(late.push);
  expect(late.out.ended).toBe(true);
  expect(late.out.text).toBe("");
});

test("a keepalive comment goes to every reader while any reads; no timer once none does", async () => {
  const feed = new LiveFeed(20);
  const c = client();
  const reader = feed.open()!;
  reader.attach(c.push);
  await Bun.sleep(70);
  expect(c.out.text.split(": keepalive\n\n").length - 1).toBeGreaterThanOrEqual(2);
  reader.left();
  const after = c.out.text;
  await Bun.sleep(50);
  expect(c.out.text).toBe(after);
});

test("nothing is serialized while nobody reads", () => {
  const feed = new LiveFeed();
  let touched = 0;
  const watched = new Proxy(record(1) as object, { get: (t, k) => (touched++, Reflect.get(t, k)) }) as RequestRecord;
  feed.request(watched);
  expect(touched).toBe(0);
});
