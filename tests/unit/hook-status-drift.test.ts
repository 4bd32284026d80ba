// GET /hooks/{name}/status's drift (src/admin/hooks.ts driftOf): desired key names and settings_version
// against what the hook's status() reported, which a plugin may get wrong in any way.
import { describe, expect, test } from "bun:test";
import { driftOf } from "../../src/admin/hooks.ts";
import type { HookReportedStatus } from "../../src/hooks/types.ts";

const DESIRED = { settings_keys: ["token", "url"], settings_version: 3 };

describe("driftOf", () => {
  test("the same keys (in any order) and version: no drift", () => {
    expect(driftOf(DESIRED, { settings_keys: ["url", "token"], settings_version: 3 })).toEqual({ reported: { settings_keys: ["token", "url"], settings_version: 3 }, drift: false, drift_keys: [] });
  });

  test("a desired key not running is named; an older version or an extra key is drift with no key named", () => {
    expect(driftOf(DESIRED, { settings_keys: ["url"], settings_version: 3 })).toMatchObject({ drift: true, drift_keys: ["token"] });
    expect(driftOf(DESIRED, { settings_keys: ["token", "url"], settings_version: 2 })).toMatchObject({ drift: true, drift_keys: [] });
    expect(driftOf(DESIRED, { settings_keys: ["old", "token", "url"], settings_version: 3 })).toMatchObject({ drift: true, drift_keys: [] });
  });

  test("a malformed report is shown as nulls and counted as drift, never passed through", () => {
    const bad = { settings_keys: [{ token: "value" }], settings_version: -1 } as unknown as HookReportedStatus;
    expect(driftOf(DESIRED, bad)).toEqual({ reported: { settings_keys: null, settings_version: null }, drift: true, drift_keys: ["token", "url"] });
  });
});
