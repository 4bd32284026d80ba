# Shared by bench/compare.sh and bench/layers.sh (sourced, not run): the upstream imitation on core 0,
# gateway builds on core 1 on one config each (open door, or with `gov:` the benchmark's governance and a
# minted key), and the request every wrk of theirs posts. Needs taskset and wrk; talks only to 127.0.0.1.
#
#   COMPARE_STREAM=1        stream (with stream_options.include_usage unless COMPARE_USAGE_MEMBER= is set empty)
#   COMPARE_MODEL=claude    the Anthropic lane (translated) instead of the OpenAI one (`gpt`)
#   COMPARE_INGRESS=responses  the Responses API's body on /v1/responses instead of OpenAI chat's
#   COMPARE_INGRESS=gemini     Gemini's body on /v1beta/models/{COMPARE_MODEL, default gemini}:generateContent
#                              (with COMPARE_STREAM, :streamGenerateContent?alt=sse), its key as x-goog-api-key
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PATH="$ROOT/node_modules/.bin:$PATH"
WORK=$(mktemp -d /tmp/gw-bench-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT
PIDS=(); PORTS=(); NAMES=(); TOKENS=()

# The upstream imitation, pinned to core 0; sets UP_PORT.
harness_upstream() {
  bun build --compile --minify "$ROOT/bench/upstream.ts" --outfile "$WORK/upstream" >/dev/null
  UP_PORT=$((20000 + RANDOM % 20000))
  taskset -c 0 "$WORK/upstream" $UP_PORT > "$WORK/up.log" 2>&1 &
  sleep 0.3
}

# The floor proxy on core 1 (bench/floor-proxy.ts), the first of the processes measured.
harness_floor() {
  bun build --compile --minify --bytecode "$ROOT/bench/floor-proxy.ts" --outfile "$WORK/floor" >/dev/null
  FLOOR_UPSTREAM=http://127.0.0.1:$UP_PORT FLOOR_PORT=$((UP_PORT + 1)) taskset -c 1 "$WORK/floor" > "$WORK/floor.log" 2>&1 &
  PIDS+=("$!"); PORTS+=($((UP_PORT + 1))); NAMES+=(floor); TOKENS+=(bench-key)
}

# An OTLP/HTTP collector stand-in on core 0 that takes every export and answers at once (for `exp:`); sets SINK_PORT.
harness_sink() {
  [ -n "${SINK_PORT:-}" ] && return 0
  SINK_PORT=$((UP_PORT + 5))
  taskset -c 0 bun -e 'Bun.serve({ hostname: "127.0.0.1", port: '"$SINK_PORT"', fetch: async (r) => (await r.arrayBuffer(), new Response("{}", { headers: { "content-type": "application/json" } })) })' > "$WORK/sink.log" 2>&1 &
  sleep 0.3
}

# One gateway build on core 1: `harness_gateway [gov:|exp:]BINARY [ENV=VALUE...]` (the ENV pairs are the
# process's own). `exp:` adds bench/gateway-config.ts's exporters: every request's record to a file, its
# spans over OTLP/protobuf to harness_sink.
harness_gateway() {
  local arg=$1; shift
  local i=${#PIDS[@]}
  local port=$((UP_PORT + 10 + i * 2))
  local exported=0
  if [ "${arg#exp:}" != "$arg" ]; then exported=1; arg=${arg#exp:}; harness_sink; fi
  local bin=${arg#gov:}
  cat > "$WORK/gw$i.yaml" <<YAML
listen: 127.0.0.1:$port
admin_listen: 127.0.0.1:$((port + 1))
store: {module: sqlite, settings: {path: $WORK/gw$i.db}}
providers:
  up-openai: {protocol: openai, base_url: "http://127.0.0.1:$UP_PORT/v1", api_key: bench-key}
  up-anthropic: {protocol: anthropic, base_url: "http://127.0.0.1:$UP_PORT", api_key: bench-key}
  up-gemini: {protocol: gemini, base_url: "http://127.0.0.1:$UP_PORT", api_key: bench-key}
models:
  gpt: {provider: up-openai, model: gpt-4o-mini}
  claude: {provider: up-anthropic, model: claude-haiku-4-5}
  gemini: {provider: up-gemini, model: gemini-2.5-flash}
YAML
  local governed=0
  [ "$bin" != "$arg" ] && governed=1
  if [ $governed = 1 ]; then bun -e 'import { GOVERNANCE_YAML } from "'"$ROOT"'/bench/gateway-config.ts"; process.stdout.write(GOVERNANCE_YAML)' >> "$WORK/gw$i.yaml"; fi
  if [ $exported = 1 ]; then bun -e 'import { exportYaml } from "'"$ROOT"'/bench/gateway-config.ts"; process.stdout.write(exportYaml("'"$WORK/requests$i.jsonl"'", "http://127.0.0.1:'"$SINK_PORT"'/v1/traces"))' >> "$WORK/gw$i.yaml"; fi
  cp "$bin" "$WORK/gw$i"
  env $(bun -e 'import { GOVERNANCE_ENV } from "'"$ROOT"'/bench/gateway-config.ts"; console.log(Object.entries(GOVERNANCE_ENV).map(([k, v]) => k + "=" + v).join(" "))') "$@" \
    taskset -c 1 "$WORK/gw$i" --config "$WORK/gw$i.yaml" > "$WORK/gw$i.log" 2> "$WORK/gw$i.err" &
  PIDS+=("$!"); PORTS+=($port); NAMES+=("$i:$([ $governed = 1 ] && echo gov-)$([ $exported = 1 ] && echo exp-)$(basename "$bin")")
  # Every process answers before anything is measured (several gateways starting on one busy core take a while).
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.1; done
  # A governed gateway is called with a key minted through its admin API; the others with the provider key.
  if [ $governed = 1 ]; then TOKENS+=("$(bun -e 'import { mintKey } from "'"$ROOT"'/bench/gateway-config.ts"; console.log(await mintKey("127.0.0.1:'"$((port + 1))"'"))')"); else TOKENS+=(bench-key); fi
}

# The request every wrk posts, from the COMPARE_* settings: sets URLPATH and writes $WORK/post.lua.
harness_request() {
  local stream_member system user body
  stream_member=$([ -n "${COMPARE_STREAM:-}" ] && echo ",\"stream\":true${COMPARE_USAGE_MEMBER-,\"stream_options\":{\"include_usage\":true}}" || true)
  system="You are a concise assistant for an internal engineering help desk. Answer in two or three sentences and name the first thing to check."
  user="Our build cache keeps missing after we bumped the compiler version last week. Nothing else changed in the repository. What is the most likely cause and what should we check first?"
  if [ "${COMPARE_INGRESS:-openai}" = responses ]; then
    # The Responses API's body (bench/dataplane.ts's), on /v1/responses: usage is always in its stream.
    URLPATH=/v1/responses
    body="{\"model\":\"${COMPARE_MODEL:-gpt}\",\"instructions\":\"$system\",\"input\":[{\"role\":\"user\",\"content\":\"$user\"}],\"temperature\":0.2,\"max_output_tokens\":256$([ -n "${COMPARE_STREAM:-}" ] && echo ',"stream":true')}"
  elif [ "${COMPARE_INGRESS:-openai}" = gemini ]; then
    # bench/dataplane.ts's Gemini body: the model and streaming are in the path.
    URLPATH=/v1beta/models/${COMPARE_MODEL:-gemini}:$([ -n "${COMPARE_STREAM:-}" ] && echo 'streamGenerateContent?alt=sse' || echo generateContent)
    body="{\"systemInstruction\":{\"parts\":[{\"text\":\"$system\"}]},\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"$user\"}]}],\"generationConfig\":{\"temperature\":0.2,\"maxOutputTokens\":256}}"
  else
    URLPATH=/v1/chat/completions
    body="{\"model\":\"${COMPARE_MODEL:-gpt}\",\"messages\":[{\"role\":\"system\",\"content\":\"$system\"},{\"role\":\"user\",\"content\":\"$user\"}],\"temperature\":0.2,\"max_tokens\":256${stream_member}}"
  fi
  cat > "$WORK/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["$([ "${COMPARE_INGRESS:-openai}" = gemini ] && echo x-goog-api-key || echo Authorization)"] = "$([ "${COMPARE_INGRESS:-openai}" = gemini ] || echo "Bearer ")" .. (os.getenv("COMPARE_TOKEN") or "bench-key")
wrk.body = '$body'
LUA
}

# `harness_wrk K SECONDS`: wrk (64 connections, core 0) on process K's port with its token; prints wrk's report.
harness_wrk() {
  COMPARE_TOKEN=${TOKENS[$1]} taskset -c 0 wrk -t1 -c64 -d"$2"s -s "$WORK/post.lua" "http://127.0.0.1:${PORTS[$1]}$URLPATH"
}

HZ=$(getconf CLK_TCK)
# CPU ticks (user + system) of a process so far.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
