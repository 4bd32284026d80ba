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
# with the governed one (issue 15's "within 1.1x of the open door").
#
# Needs taskset and wrk, like dataplane.ts; talks only to 127.0.0.1.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$ROOT/node_modules/.bin:$PATH"
ROUNDS=${1:?rounds}; shift
[ $# -ge 1 ] || { echo "usage: bench/compare.sh ROUNDS BINARY..." >&2; exit 2; }
WORK=$(mktemp -d /tmp/gw-compare-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT
bun build --compile --minify --bytecode "$ROOT/bench/floor-proxy.ts" --outfile "$WORK/floor" >/dev/null
bun build --compile --minify "$ROOT/bench/upstream.ts" --outfile "$WORK/upstream" >/dev/null
UP_PORT=$((20000 + RANDOM % 20000))
taskset -c 0 "$WORK/upstream" $UP_PORT > "$WORK/up.log" 2>&1 &
UP=$!
sleep 0.3
FLOOR_UPSTREAM=http://127.0.0.1:$UP_PORT FLOOR_PORT=$((UP_PORT + 1)) taskset -c 1 "$WORK/floor" > "$WORK/floor.log" 2>&1 &
PIDS=("$!"); PORTS=($((UP_PORT + 1))); NAMES=(floor)
i=0
GOVERNED=()
for arg in "$@"; do
  i=$((i + 1)); port=$((UP_PORT + 10 + i * 2))
  bin=${arg#gov:}
  cat > "$WORK/gw$i.yaml" <<YAML
listen: 127.0.0.1:$port
admin_listen: 127.0.0.1:$((port + 1))
store: {module: sqlite, settings: {path: $WORK/gw$i.db}}
providers:
  up-openai: {protocol: openai, base_url: "http://127.0.0.1:$UP_PORT/v1", api_key: bench-key}
  up-anthropic: {protocol: anthropic, base_url: "http://127.0.0.1:$UP_PORT", api_key: bench-key}
models:
  gpt: {provider: up-openai, model: gpt-4o-mini}
  claude: {provider: up-anthropic, model: claude-haiku-4-5}
YAML
  GOVERNED+=("$([ "$bin" != "$arg" ] && echo 1 || echo 0)")
  if [ "$bin" != "$arg" ]; then bun -e 'import { GOVERNANCE_YAML } from "'"$ROOT"'/bench/gateway-config.ts"; process.stdout.write(GOVERNANCE_YAML)' >> "$WORK/gw$i.yaml"; fi
  cp "$bin" "$WORK/gw$i"
  env $(bun -e 'import { GOVERNANCE_ENV } from "'"$ROOT"'/bench/gateway-config.ts"; console.log(Object.entries(GOVERNANCE_ENV).map(([k, v]) => k + "=" + v).join(" "))') \
    taskset -c 1 "$WORK/gw$i" --config "$WORK/gw$i.yaml" > "$WORK/gw$i.log" 2>&1 &
  PIDS+=("$!"); PORTS+=($port); NAMES+=("$i:$([ "$bin" != "$arg" ] && echo gov-)$(basename "$bin")")
done
# Every process answers before the rounds start (several gateways starting on one busy core take a while).
for port in "${PORTS[@]}"; do
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.1; done
done
STREAM_MEMBER=$([ -n "${COMPARE_STREAM:-}" ] && echo ",\"stream\":true${COMPARE_USAGE_MEMBER-,\"stream_options\":{\"include_usage\":true}}" || true)
SYSTEM="You are a concise assistant for an internal engineering help desk. Answer in two or three sentences and name the first thing to check."
USER="Our build cache keeps missing after we bumped the compiler version last week. Nothing else changed in the repository. What is the most likely cause and what should we check first?"
if [ "${COMPARE_INGRESS:-openai}" = responses ]; then
  # The Responses API's body (bench/dataplane.ts's), on /v1/responses: usage is always in its stream.
  URLPATH=/v1/responses
  BODY="{\"model\":\"${COMPARE_MODEL:-gpt}\",\"instructions\":\"$SYSTEM\",\"input\":[{\"role\":\"user\",\"content\":\"$USER\"}],\"temperature\":0.2,\"max_output_tokens\":256$([ -n "${COMPARE_STREAM:-}" ] && echo ',"stream":true')}"
else
  URLPATH=/v1/chat/completions
  BODY="{\"model\":\"${COMPARE_MODEL:-gpt}\",\"messages\":[{\"role\":\"system\",\"content\":\"$SYSTEM\"},{\"role\":\"user\",\"content\":\"$USER\"}],\"temperature\":0.2,\"max_tokens\":256${STREAM_MEMBER}}"
fi
cat > "$WORK/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. (os.getenv("COMPARE_TOKEN") or "bench-key")
wrk.body = '$BODY'
LUA
# A governed gateway is called with a key minted through its admin API; the others with the provider key.
TOKENS=(bench-key)
for k in "${!GOVERNED[@]}"; do
  if [ "${GOVERNED[$k]}" = 1 ]; then TOKENS+=("$(bun -e 'import { mintKey } from "'"$ROOT"'/bench/gateway-config.ts"; console.log(await mintKey("127.0.0.1:'"$((${PORTS[$((k + 1))]} + 1))"'"))')"); else TOKENS+=(bench-key); fi
done
HZ=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
for r in $(seq "$ROUNDS"); do
  declare -A T0=()
  for k in "${!PIDS[@]}"; do T0[$k]=$(ticks "${PIDS[$k]}"); done
  W=()
  for k in "${!PIDS[@]}"; do COMPARE_TOKEN=${TOKENS[$k]} taskset -c 0 wrk -t1 -c64 -d4s -s "$WORK/post.lua" "http://127.0.0.1:${PORTS[$k]}$URLPATH" > "$WORK/wrk$k.txt" & W+=($!); done
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
for (const name of Object.keys(rounds[0]).filter((n) => n !== "floor")) console.log(`  ${name}: ${median(rounds.map((r) => r[name] / r.floor)).toFixed(3)}`);
' "$WORK/rounds.txt"
