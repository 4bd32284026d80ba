// The line diff of two texts (GET /config/diff `lines`): Myers' O(ND) shortest edit script over lines,
// every line kept ("=" as context, "+" and "-" for the edit). Bounded for an admin request on the event
// loop: each text is read up to MAX_YAML_LENGTH, the answer holds at most MAX_DIFF_LINES lines, and past
// an edit distance whose search would cost more than WORK steps the changed middle is answered as all of
// the old lines removed then all of the new added (a correct diff, not the shortest).
import { MAX_YAML_LENGTH } from "../config/yaml-bounded.ts";

export interface DiffLine {
  readonly op: "=" | "+" | "-";
  readonly text: string;
}

export const MAX_DIFF_LINES = 20_000;
/** Snake steps of the search at most: some tens of milliseconds. */
const WORK = 20_000_000;
/** Edit distance searched at most (the trace kept for the walk back grows with its square). */
const MAX_EDITS = 2_000;

/** The text's lines, cut at the last whole line within the bound. */
function linesOf(text: string): { lines: string[]; cut: boolean } {
  const cut = text.length > MAX_YAML_LENGTH;
  const kept = cut ? text.slice(0, text.lastIndexOf("\n", MAX_YAML_LENGTH) + 1) : text;
  const lines = kept.split("\n");
  if (lines.at(-1) === "") lines.pop();
  return { lines, cut };
}

export function lineDiff(from: string, to: string): { lines: DiffLine[]; truncated: boolean } {
  const a = linesOf(from);
  const b = linesOf(to);
  const lines = diffLines(a.lines, b.lines);
  const truncated = a.cut || b.cut || lines.length > MAX_DIFF_LINES;
  return { lines: lines.length > MAX_DIFF_LINES ? lines.slice(0, MAX_DIFF_LINES) : lines, truncated };
}

function diffLines(a: readonly string[], b: readonly string[]): DiffLine[] {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) endA--, endB--;
  const same = (line: string): DiffLine => ({ op: "=", text: line });
  const middle = edits(a.slice(start, endA), b.slice(start, endB));
  return [...a.slice(0, start).map(same), ...middle, ...a.slice(endA).map(same)];
}

/** The shortest edit script of `a` into `b` (Myers 1986), or all removed then all added past the bound. */
function edits(a: readonly string[], b: readonly string[]): DiffLine[] {
  const n = a.length;
  const m = b.length;
  const removedThenAdded = () => [...a.map((text): DiffLine => ({ op: "-", text })), ...b.map((text): DiffLine => ({ op: "+", text }))];
  if (n === 0 || m === 0) return removedThenAdded();
  // Lines as numbers: the search compares them many times over.
  const ids = new Map<string, number>();
  const id = (line: string) => ids.get(line) ?? (ids.set(line, ids.size), ids.size - 1);
  const x1 = Int32Array.from(a, id);
  const y1 = Int32Array.from(b, id);
  const maxD = Math.min(n + m, MAX_EDITS, Math.floor(WORK / (n + m)));
  const offset = maxD + 1;
  const v = new Int32Array(2 * maxD + 3);
  /** trace[d]: the furthest x on each diagonal -d..d after d edits. */
  const trace: Int32Array[] = [];
  for (let d = 0; d <= maxD; d++) {
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!) ? v[offset + k + 1]! : v[offset + k - 1]! + 1;
      let y = x - k;
      while (x < n && y < m && x1[x] === y1[y]) x++, y++;
      v[offset + k] = x;
      if (x >= n && y >= m) {
        trace.push(v.slice(offset - d, offset + d + 1));
        return walkBack(trace, a, b);
      }
    }
    trace.push(v.slice(offset - d, offset + d + 1));
  }
  return removedThenAdded();
}

/** The edits, from the end back to the start through the furthest points the search kept. */
function walkBack(trace: readonly Int32Array[], a: readonly string[], b: readonly string[]): DiffLine[] {
  const out: DiffLine[] = [];
  let x = a.length;
  let y = b.length;
  for (let d = trace.length - 1; d > 0; d--) {
    const previous = trace[d - 1]!;
    const at = (k: number) => previous[k + d - 1]!;
    const k = x - y;
    const down = k === -d || (k !== d && at(k - 1) < at(k + 1));
    const prevK = down ? k + 1 : k - 1;
    const prevX = at(prevK);
    const prevY = prevX - prevK;
    while (x > prevX + (down ? 0 : 1) && y > prevY + (down ? 1 : 0)) out.push({ op: "=", text: a[--x]! }), y--;
    if (down) out.push({ op: "+", text: b[--y]! });
    else out.push({ op: "-", text: a[--x]! });
  }
  while (x > 0 && y > 0) out.push({ op: "=", text: a[--x]! }), y--;
  return out.reverse();
}
