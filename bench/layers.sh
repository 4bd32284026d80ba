#!/bin/bash
# Where one gateway build's CPU per request goes under load, by layer: the kernel, Bun's native code (the
# runtime, JavaScriptCore, its garbage collector: one bucket, as the binary is stripped), JIT-compiled
# JavaScript and libc, from `perf record`; JavaScriptCore's collections and their pauses from its own log
# (BUN_JSC_logGC); and the system calls per request from `perf stat`. What a hot loop cannot show: the same
# code costs several times its hot-loop time here (docs/performance.md, "Fourth round").
#
#   npm run build && bench/layers.sh dist/gateway
#   COMPARE_STREAM=1 bench/layers.sh gov:dist/gateway                                       # the governed OpenAI stream
#   COMPARE_INGRESS=responses COMPARE_MODEL=claude COMPARE_STREAM=1 bench/layers.sh dist/gateway   # Responses -> Anthropic
#
# The gateway runs alone on core 1 under wrk (64 connections) on core 0: 3 s of warm-up, then 5 s measured
# (perf attached for 4 s of them). The request and the `gov:` prefix are bench/compare.sh's (bench/harness.sh).
# Needs perf (Debian: linux-perf), taskset and wrk; talks only to 127.0.0.1.
[ $# -eq 1 ] || { echo "usage: bench/layers.sh [gov:]BINARY" >&2; exit 2; }
command -v perf >/dev/null || { echo "bench/layers.sh needs perf (Debian: apt-get install linux-perf)" >&2; exit 2; }
source "$(dirname "$0")/harness.sh"
harness_upstream
harness_gateway "$1" BUN_JSC_logGC=1
harness_request
GW=${PIDS[0]}
harness_wrk 0 3 > /dev/null
gc0=$(wc -l < "$WORK/gw0.err")
t0=$(ticks "$GW")
( sleep 0.5; perf record -q -F 2000 -p "$GW" -o "$WORK/perf.data" -- sleep 4 ) > /dev/null 2>&1 & REC=$!
( sleep 0.5; perf stat -x, -e syscalls:sys_enter_sendto,syscalls:sys_enter_recvfrom,syscalls:sys_enter_epoll_pwait2,syscalls:sys_enter_pwrite64 -p "$GW" -o "$WORK/stat.csv" -- sleep 4 ) > /dev/null 2>&1 & STAT=$!
harness_wrk 0 5 > "$WORK/wrk.txt"
t1=$(ticks "$GW")
wait $REC $STAT
tail -n +$((gc0 + 1)) "$WORK/gw0.err" > "$WORK/gc.log"
perf report -q -i "$WORK/perf.data" --no-children --sort dso -F sample,dso 2> /dev/null > "$WORK/dso.txt"
bun -e '
const [wrk, dso, stat, gc, ticks, hz] = process.argv.slice(1);
const fs = require("fs");
const requests = Number(/(\d+) requests in ([\d.]+)s/.exec(fs.readFileSync(wrk, "utf8"))[1]);
const seconds = Number(/requests in ([\d.]+)s/.exec(fs.readFileSync(wrk, "utf8"))[1]);
const perSecond = requests / seconds;
// perf samples at 2000 Hz for 4 s: a sample is 500 µs of one core, over 4 s of requests.
const layer = (name) => (/^\[kernel/.test(name) ? "kernel" : /^\[JIT\]/.test(name) ? "JIT-compiled JavaScript" : /^libc/.test(name) ? "libc" : /^\[vdso\]/.test(name) ? "vdso" : "Bun native");
const layers = {};
for (const line of fs.readFileSync(dso, "utf8").split("\n")) {
  const m = /^\s*(\d+)\s+(.+?)\s*$/.exec(line);
  if (m) layers[layer(m[2])] = (layers[layer(m[2])] ?? 0) + (Number(m[1]) * 500) / (4 * perSecond);
}
const calls = Object.fromEntries(fs.readFileSync(stat, "utf8").split("\n").filter((l) => l.includes("sys_enter_")).map((l) => { const [n, , event] = l.split(","); return [event.replace("syscalls:sys_enter_", ""), Number(n) / (4 * perSecond)]; }));
const log = fs.readFileSync(gc, "utf8");
const pauses = [...log.matchAll(/ p=([\d.]+)ms/g)].map((m) => Number(m[1]));
const eden = (log.match(/EdenCollection/g) ?? []).length;
const f = (n) => n.toFixed(1);
console.log(`${requests} requests in ${seconds} s (${Math.round(perSecond)}/s), CPU ${f((Number(ticks) / Number(hz)) * 1e6 / requests)} µs per request`);
console.log(`by layer, µs per request (perf): ${Object.entries(layers).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${f(v)}`).join(", ")}`);
console.log(`garbage collection: ${pauses.length} collections (${eden} eden), pauses ${(pauses.reduce((a, b) => a + b, 0) * 1000 / requests).toFixed(2)} µs per request`);
console.log(`system calls per request: ${Object.entries(calls).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(", ")}`);
' "$WORK/wrk.txt" "$WORK/dso.txt" "$WORK/stat.csv" "$WORK/gc.log" $((t1 - t0)) "$HZ"
