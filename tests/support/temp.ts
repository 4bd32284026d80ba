// Temporary directories for tests, removed once every test file has run (tests/support/preload.ts; bun
// test emits no process "exit" for a handler to catch). The suite used to leave every one
// behind: a machine that had run it for a few days held 19,000 entries in /tmp, and a Bun executable whose
// working directory sat under /tmp listed them all at each start (docs/performance.md, "Seventh round").
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const made: string[] = [];

/** A new directory under the system's temp directory, removed after the run. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** Removes every directory tempDir made. */
export function removeTempDirs(): void {
  for (const dir of made.splice(0)) {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // Still in use by a process the test left running, or already gone: left as it is.
    }
  }
}
