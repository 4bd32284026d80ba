// The usage views' ledger reads on sqlite's read worker (src/store/read-worker.ts): rows the main
// connection has just written are read from the worker's read-only connection; while a long read runs
// the main thread keeps answering; a read past the timeout fails naming it and refuses others until its
// thread has ended; reads past the queue's bound are refused at once; closing the store refuses what
// waits. A slow read is a recursive count, so no large ledger is needed.
import { afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { SqliteLedgerStore } from "../../src/store/ledger.ts";
import { ReadRefused, ReadWorker } from "../../src/store/read-worker.ts";
import { SqliteStore } from "../../src/store/sqlite.ts";
import { tempDir } from "../support/temp.ts";

/** A read that takes long enough to see (hundreds of ms here; its count scales it). */
const slowSql = (n: number) => `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ${n}) SELECT count(*) AS n FROM c`;

const opened: { close(): Promise<void> }[] = [];


function storeFile(): SqliteStore {
  const store = SqliteStore.open(join(tempDir("gw-read-worker-"), "gateway.db"));
  opened.push(store);
  return store;
}

const row = (ts: number, key: string) => ({ ts, key_id: key, group_name: null, pool: "chat", model: "m1", requests: 1, input: 10, output: 5, cache_read: 0, cache_creation: 0 });

/** The longest the main thread's timers were held while `work` ran. */
async function longestStall(work: Promise<unknown>): Promise<number> {
  let longest = 0;
  let last = performance.now();
  const tick = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 2);
  try {
    await work;
  } finally {
    clearInterval(tick);
  }
  return Math.max(longest, performance.now() - last);
}

describe("read worker", () => {
  // Inside the describe: a hook at a file's top level has been seen to run (and time out) in a later file of the same run.
  afterEach(async () => {
    for (const o of opened.splice(0)) await o.close();
  }, 15_000);

  test("a file store's ledger reads go to the worker and see the rows just written; :memory: reads on its own connection", async () => {
    const store = storeFile();
    expect(store.reader).toBeInstanceOf(ReadWorker);
    const ledger = new SqliteLedgerStore(store.database, store.reader);
    await ledger.append([row(1_000, "key_a"), row(2_000, "key_b")]);
    expect((await ledger.sums({ from: 0 })).map((s) => s.key_id).sort()).toEqual(["key_a", "key_b"]);
    // Written after the worker opened its connection: WAL readers see every commit before their read.
    await ledger.append([row(3_000, "key_c")]);
    expect(await ledger.namedSums({ from: 0, to: 10_000, by: "key" })).toHaveLength(3);
    expect((await ledger.stepSums({ from: 0, to: 10_000, by: "key", step: 10_000, keep: ["key_a"] })).map((s) => [s.name, s.requests])).toEqual(expect.arrayContaining([["key_a", 1], [null, 2]]));
    expect(SqliteStore.open(":memory:").reader).toBeUndefined();
  });

  test("while a long read runs on the worker the main thread keeps its timers; the same read on the store's own connection holds them", async () => {
    const store = storeFile();
    const reader = store.reader!;
    await reader.all(slowSql(1), []); // the worker started, so its start is not counted below
    const started = performance.now();
    const offThread = await longestStall(reader.all(slowSql(3_000_000), []));
    const tookMs = performance.now() - started;
    expect(tookMs).toBeGreaterThan(200);
    expect(offThread).toBeLessThan(tookMs / 4);
    const onThread = await longestStall(Bun.sleep(10).then(() => store.database.query(slowSql(3_000_000)).all()));
    expect(onThread).toBeGreaterThan(200);
  });

  test("a read past the timeout fails naming it; until its thread ends others are refused, then reads work again", async () => {
    const store = storeFile();
    const reader = new ReadWorker(store.path, { queued: 4, timeoutMs: 150 });
    opened.push(reader);
    const started = performance.now();
    const slow = reader.all(slowSql(6_000_000), []).catch((error: unknown) => error);
    const queued = reader.all("SELECT 1 AS one", []).catch((error: unknown) => error);
    const error = await slow;
    expect(error).toBeInstanceOf(ReadRefused);
    expect((error as ReadRefused).reason).toBe("timeout");
    expect((error as Error).message).toBe("the ledger read took longer than 0.15 s and was stopped");
    expect(performance.now() - started).toBeLessThan(1_000);
    // The read queued behind it had the same deadline.
    expect(((await queued) as ReadRefused).reason).toBe("timeout");
    const refused = (await reader.all("SELECT 1 AS one", []).catch((e: unknown) => e)) as ReadRefused;
    expect(refused.reason).toBe("busy");
    expect(refused.message).toContain("is still being stopped");
    // Once the stopped thread has ended, a new worker answers.
    let answer: unknown;
    for (let i = 0; i < 100 && answer === undefined; i++) {
      await Bun.sleep(100);
      answer = await reader.all("SELECT 1 AS one", []).catch(() => undefined);
    }
    expect(answer).toEqual([{ one: 1 }]);
  });

  test("reads past the queue's bound are refused at once; closing refuses what waits", async () => {
    const store = storeFile();
    const reader = new ReadWorker(store.path, { queued: 2, timeoutMs: 30_000 });
    const running = reader.all(slowSql(2_000_000), []).catch((e: unknown) => e);
    const waiting = [reader.all("SELECT 1 AS one", []).catch((e: unknown) => e), reader.all("SELECT 2 AS two", []).catch((e: unknown) => e)];
    const refused = (await reader.all("SELECT 3", []).catch((e: unknown) => e)) as ReadRefused;
    expect(refused.reason).toBe("busy");
    expect(refused.message).toBe("2 ledger reads are already waiting; retry later");
    await reader.close();
    for (const read of [running, ...waiting]) expect(((await read) as ReadRefused).reason).toBe("closed");
    expect(((await reader.all("SELECT 1", []).catch((e: unknown) => e)) as ReadRefused).reason).toBe("closed");
  });

  test("a query the worker cannot run fails with sqlite's reason, and the next read still works", async () => {
    const store = storeFile();
    const reader = store.reader!;
    const error = (await reader.all("SELECT nope FROM ledger", []).catch((e: unknown) => e)) as Error;
    expect(error.message).toContain("cannot read the store: no such column: nope");
    // Read-only: the worker's connection cannot change the store.
    expect(((await reader.all("DELETE FROM ledger", []).catch((e: unknown) => e)) as Error).message).toContain("readonly");
    expect(await reader.all("SELECT 1 AS one", [])).toEqual([{ one: 1 }]);
  });
});
