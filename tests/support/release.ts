// The release files (dist/release/, `npm run release`) for the tests that need them, and the reading of
// an executable's header: what OS and CPU it is for, without running it.
import { join } from "node:path";
import { ROOT } from "./gateway.ts";

export const RELEASE_DIR = join(ROOT, "dist/release");

/** Runs `npm run release` as the docs print it (scripts/release.ts), bounded; returns its output. */
async function runRelease(timeoutMs: number): Promise<string> {
  const proc = Bun.spawn(["npm", "run", "release"], { cwd: ROOT, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const timer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  if (code !== 0) throw new Error(`release failed (${code}):\n${stdout}${stderr}`);
  return stdout;
}

let built: Promise<string> | undefined;

/**
 * The release of this checkout as it is now, built once per test run (every file of one `bun test`
 * shares it; ~6-10 s), so no test uses a release left over from older sources. Returns the output.
 */
export const buildRelease = (): Promise<string> => (built ??= runRelease(240_000));

export type Executable =
  | { format: "elf"; machine: "x86-64" | "aarch64" | number; interpreter: string | undefined }
  | { format: "mach-o"; cpu: "x86_64" | "arm64" | number }
  | { format: "pe"; machine: "amd64" | "arm64" | number }
  | { format: "unknown" };

/** What an executable is for, from its header bytes (ELF, Mach-O 64-bit, PE). */
export async function readExecutable(path: string): Promise<Executable> {
  const head = new DataView(await Bun.file(path).slice(0, 65536).arrayBuffer());
  const u16 = (at: number) => head.getUint16(at, true);
  const u32 = (at: number) => head.getUint32(at, true);
  const u64 = (at: number) => Number(head.getBigUint64(at, true));
  if (u32(0) === 0x464c457f) {
    // 64-bit little-endian ELF only (EI_CLASS 2, EI_DATA 1): what Bun ships.
    if (head.getUint8(4) !== 2 || head.getUint8(5) !== 1) return { format: "unknown" };
    const machine = u16(18);
    const [phoff, phentsize, phnum] = [u64(32), u16(54), u16(56)];
    let interpreter: string | undefined;
    for (let i = 0; i < phnum; i++) {
      const ph = phoff + i * phentsize;
      if (u32(ph) !== 3) continue; // PT_INTERP
      const [offset, size] = [u64(ph + 8), u64(ph + 32)];
      interpreter = new TextDecoder().decode(new Uint8Array(head.buffer, offset, size)).replace(/\0+$/, "");
    }
    return { format: "elf", machine: machine === 0x3e ? "x86-64" : machine === 0xb7 ? "aarch64" : machine, interpreter };
  }
  if (u32(0) === 0xfeedfacf) {
    const cpu = u32(4);
    return { format: "mach-o", cpu: cpu === 0x01000007 ? "x86_64" : cpu === 0x0100000c ? "arm64" : cpu };
  }
  if (u16(0) === 0x5a4d) {
    const pe = u32(0x3c);
    if (u32(pe) !== 0x00004550) return { format: "unknown" };
    const machine = u16(pe + 4);
    return { format: "pe", machine: machine === 0x8664 ? "amd64" : machine === 0xaa64 ? "arm64" : machine };
  }
  return { format: "unknown" };
}
