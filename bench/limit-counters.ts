// The fleet's limit counters alone (src/store/postgres/limits.ts against PostgreSQL started as the tests
// start it): a reservation's round trip by itself and carrying the last request's settlement, next to a
// bare `SELECT 1`; the reservation's p50/p90 with 64 clients paced at 500, 1000 and 2000 requests/s (each
// holding its admission 1 ms, as an upstream call would); and the store's cost per request when batches
// of 1 to 64 reservations and their settlements go at once. The chain is bench/gateway-config.ts's
// bench-dev (four buckets, two concurrency caps), none of them reached.
//
//   npx bun bench/limit-counters.ts          # ~40 s
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { counterPlan } from "../src/store/limit-counters.ts";
import { PgLimitCounters } from "../src/store/postgres/limits.ts";
import { PostgresStore } from "../src/store/postgres/store.ts";
import { startPostgres } from "../tests/support/postgres.ts";

const pg = await startPostgres({ dir: mkdtempSync(join(tmpdir(), "bench-counters-pg-")) });
const store = await PostgresStore.open({ url: await pg.createDatabase("counters"), schema: "public", poolSize: 4, connectTimeoutSecs: 5 }, { signingKey: "bench".repeat(10) });
const counters = new PgLimitCounters(store.sql, "bench-replica");
const { plan } = counterPlan(
  [
    { bucket: ["bench-dev", "minute", ""], requests: 1e9, tokens: 1e12, budgetMicros: null },
    { bucket: ["bench-team", "day", ""], requests: null, tokens: 1e12, budgetMicros: null },
    { bucket: ["bench-team", "hour", ""], requests: 1e12, tokens: null, budgetMicros: null },
    { bucket: ["bench-org", "month", ""], requests: null, tokens: null, budgetMicros: 1e18 },
  ],
  [
    ["bench-dev", "", 10_000],
    ["bench-org", "", 100_000],
  ],
);
const request = { starts: [0, 0, 0, 0], initial: [[0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0]] as [number, number, number][], feeMicros: 0, tokens: 50, spendMicros: 10 };
const pct = (sorted: number[], q: number) => sorted[Math.floor(sorted.length * q)]!;
const us = (ms: number) => `${(ms * 1000).toFixed(0)} us`;

async function admitOnce(): Promise<number> {
  const started = performance.now();
  const answer = await counters.reserve(plan, request);
  const took = performance.now() - started;
  if (answer.ok) counters.settle({ plan, starts: request.starts, tokens: 40, spendMicros: 5, held: answer.held });
  return took;
}

for (let i = 0; i < 200; i++) await admitOnce();
const select: number[] = [];
for (let i = 0; i < 300; i++) {
  const started = performance.now();
  await store.sql`SELECT 1`;
  select.push(performance.now() - started);
}
const alone: number[] = [];
for (let i = 0; i < 300; i++) {
  await counters.drain();
  alone.push(await admitOnce());
}
const carrying: number[] = [];
for (let i = 0; i < 300; i++) carrying.push(await admitOnce());
for (const list of [select, alone, carrying]) list.sort((a, b) => a - b);
console.log(`round trip p50: SELECT 1 ${us(pct(select, 0.5))}; a reservation ${us(pct(alone, 0.5))}; carrying the last settlement ${us(pct(carrying, 0.5))}`);

for (const rate of [500, 1000, 2000]) {
  const times: number[] = [];
  const gap = (64 * 1000) / rate;
  const end = performance.now() + 3000;
  await Promise.all(
    Array.from({ length: 64 }, async (_, client) => {
      await Bun.sleep((client * gap) / 64);
      while (performance.now() < end) {
        const started = performance.now();
        const answer = await counters.reserve(plan, request);
        times.push(performance.now() - started);
        await Bun.sleep(1);
        if (answer.ok) counters.settle({ plan, starts: request.starts, tokens: 40, spendMicros: 5, held: answer.held });
        await Bun.sleep(Math.max(0, gap - (performance.now() - started)));
      }
    }),
  );
  times.sort((a, b) => a - b);
  console.log(`64 clients paced to ${rate}/s: reservation p50 ${pct(times, 0.5).toFixed(2)} ms, p90 ${pct(times, 0.9).toFixed(2)} ms`);
}

for (const size of [1, 8, 32, 64]) {
  const started = performance.now();
  let rounds = 0;
  while (performance.now() - started < 2000) {
    const answers = await Promise.all(Array.from({ length: size }, () => counters.reserve(plan, request)));
    for (const answer of answers) if (answer.ok) counters.settle({ plan, starts: request.starts, tokens: 40, spendMicros: 5, held: answer.held });
    rounds += 1;
  }
  await counters.drain();
  const ms = (performance.now() - started) / rounds;
  console.log(`batches of ${size}: ${ms.toFixed(2)} ms a batch (with the last one's settlements), ${us(ms / size)} a request, ${Math.round((size * 1000) / ms)} requests/s`);
}
await store.close();
await pg.stop();
