// Brings a process under load to steady state before it is measured: load until its JIT compiler thread
// goes quiet. A 1 s warm-up is not enough for every build: with both exporters on, JavaScriptCore still
// compiled ~20 s into the load (the span writer with all it inlines, 1,486 bytecodes, took 120-230 ms of
// CPU in one FTL compile, on the measured core). Measured while that happens, a run charges the
// compiler's work to its requests (docs/performance.md, "Telemetry on the request path").
import { readdirSync, readFileSync } from "node:fs";

/** JavaScriptCore's compiler threads, by the name Bun gives them (`/proc/PID/task/TID/comm`). */
const JIT_THREAD = /^JITWorker/;

/** utime + stime of one /proc stat line (fields 14 and 15; the command may hold spaces, so count from ")"). */
function ticksOf(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

/** CPU ticks (user + system, every thread) a process has used. */
export const cpuTicks = (pid: number) => ticksOf(readFileSync(`/proc/${pid}/stat`, "utf8"));

/** CPU ticks of the whole process and of its JIT compiler threads, read together. */
export function jitTicks(pid: number): { process: number; jit: number } {
  const process = cpuTicks(pid);
  let jit = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      if (JIT_THREAD.test(readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8"))) jit += ticksOf(readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8"));
    } catch {
      // The thread ended between the listing and the read: it compiles nothing more.
    }
  }
  return { process, jit };
}

export interface Settled {
  /** Seconds of load it took (0 when the first round was already quiet). */
  readonly seconds: number;
  /** The JIT threads' share of the process's CPU in the last round. */
  readonly jitShare: number;
}

/**
 * Runs `load(1)` (one second of the run's own load) until, two rounds running, the JIT threads take at most
 * `quiet` of the process's CPU (compiles come in bursts: one quiet second can fall between two), at most
 * `maxSeconds`.
 */
export async function settle(pid: number, load: (seconds: number) => Promise<unknown>, maxSeconds = 30, quiet = 0.01): Promise<Settled> {
  let seconds = 0;
  let jitShare = 1;
  let quietRounds = 0;
  while (seconds < maxSeconds && quietRounds < 2) {
    const before = jitTicks(pid);
    await load(1);
    seconds++;
    const after = jitTicks(pid);
    const spent = after.process - before.process;
    jitShare = spent > 0 ? (after.jit - before.jit) / spent : 0;
    quietRounds = jitShare <= quiet ? quietRounds + 1 : 0;
  }
  return { seconds, jitShare };
}
