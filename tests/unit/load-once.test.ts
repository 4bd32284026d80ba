// The routers behind import() are loaded once; a load that failed is tried again by the next caller
// rather than answering every later request with the same rejection.
import { expect, test } from "bun:test";
import { loadOnce } from "../../src/http/load-once.ts";

test("a loaded piece is kept; a failed load is forgotten and tried again", async () => {
  let calls = 0;
  const load = loadOnce(async () => {
    calls++;
    if (calls === 1) throw new Error("first load fails");
    return { built: calls };
  });
  await expect(load()).rejects.toThrow("first load fails");
  const [a, b] = await Promise.all([load(), load()]);
  expect(a).toEqual({ built: 2 });
  expect(b).toBe(a);
  expect(await load()).toBe(a);
  expect(calls).toBe(2);
});
