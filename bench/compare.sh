#!/bin/bash
# Paired comparison of gateway builds: the floor proxy and every given binary run on core 1 AT ONCE, each
# under its own wrk (64 connections, same-protocol non-stream), so noise from a shared host hits all of
# them alike. Prints each process's CPU per request per round and, at the end, the median ratio to the
# floor's. Differences of a few percent that interleaved runs cannot see show here.
#
#   npm run build && cp dist/gateway /tmp/a && (change, build) && bench/compare.sh 5 /tmp/a dist/gateway
#
# COMPARE_MODEL=claude sends the same OpenAI body to an Anthropic lane (translated; the floor relays it to
# the upstream's OpenAI path as before), COMPARE_STREAM=1 asks for a stream, COMPARE_INGRESS=responses sends
# the Responses API's body to /v1/responses instead (with COMPARE_MODEL=claude: Responses -> Anthropic). A binary given as gov:PATH runs
# with bench/gateway-config.ts's governance (keys, a three-level group chain with limits) and is called
# with a virtual key minted for it: `bench/compare.sh 4 dist/gateway gov:dist/gateway` pairs the open door
# with the governed one (issue 15's "within 1.1x of the open door"). One given as exp:PATH runs with the
# benchmark's exporters (file and otlp, bench/harness.sh): `bench/compare.sh 6 dist/gateway exp:dist/gateway`
# pairs the open door with it (issue 19's "within 1.15x of none").
#
# Needs taskset and wrk, like dataplane.ts; talks only to 127.0.0.1. The processes and the request: bench/harness.sh.
ROUNDS=${1:?rounds}; shift
[ $# -ge 1 ] || { echo "usage: bench/compare.sh ROUNDS BINARY..." >&2; exit 2; }
source "$(dirname "$0")/harness.sh"
harness_upstream
harness_floor
for arg in "$@"; do harness_gateway "$arg"; done
harness_request
for r in $(seq "$ROUNDS"); do
  declare -A T0=()
  for k in "${!PIDS[@]}"; do T0[$k]=$(ticks "${PIDS[$k]}"); done
  W=()
  for k in "${!PIDS[@]}"; do harness_wrk "$k" 4 > "$WORK/wrk$k.txt" & W+=($!); done
  wait "${W[@]}"
  line="round $r:"
  for k in "${!PIDS[@]}"; do
    n=$(awk '/requests in/{print $1}' "$WORK/wrk$k.txt")
    line="$line ${NAMES[$k]}=$(awk -v a="${T0[$k]}" -v b="$(ticks "${PIDS[$k]}")" -v n="$n" -v hz="$HZ" 'BEGIN{printf "%.1f", (b - a) / hz * 1e6 / n}')us"
  done
  echo "$line"
done | tee "$WORK/rounds.txt"
echo "median CPU per request over the floor's:"
bun -e '
const rounds = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map((line) => Object.fromEntries([...line.matchAll(/(\S+)=([\d.]+)us/g)].map((m) => [m[1], Number(m[2])])));
const median = (v) => { v.sort((a, b) => a - b); return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2; };
const names = Object.keys(rounds[0]).filter((n) => n !== "floor");
for (const name of names) console.log(`  ${name}: ${median(rounds.map((r) => r[name] / r.floor)).toFixed(3)}`);
if (names.length > 1) {
  console.log(`median CPU per request over ${names[0]}'"'"'s:`);
  for (const name of names.slice(1)) console.log(`  ${name}: ${median(rounds.map((r) => r[name] / r[names[0]])).toFixed(3)}`);
}
' "$WORK/rounds.txt"
