#!/usr/bin/env bash
# Client CPU per streamed token and per request (issue 5: <= 2 us per token, <= 30 us per request).
#
# Runs llmload against llmload-server with the fixed latency model and reads the client's own CPU
# time (user + system, from wait4 of the client process: bench/rusage_run.py). Fixed costs
# (start-up, the /v1/models probe, writing result.json) are cancelled by a differential: each cost
# is (CPU of a big run - CPU of a small run) / (difference in tokens or requests). Each pair is
# repeated REPEATS times; the median and the min..max spread are printed, and the split into user
# and kernel time (on loopback the kernel part includes the server side of the client's own
# segments and ACKs, which the sender's context processes).
#
#  per-token, 1 stream    1 stream, zero TTFT/ITL, 2,000 vs 100,000 output tokens: the server writes
#                          as fast as it can (one write per token); the client keeps up, so it still
#                          wakes up every one or two tokens (voluntary context switches are printed).
#  per-token, paced        100 streams, ITL 10 ms (server stays well below a core), 100 vs 1,000
#                          output tokens each: every read carries one event, as against a real server.
#  per-request             closed loop, concurrency 8, zero TTFT/ITL, 1-token outputs, 16-token prompts,
#                          1,000 vs 10,000 requests (keep-alive: connections are reused).
#
# Usage: bench/client_cpu.sh [REPEATS] [per-token|paced|per-request|all]   (default: 3 all)
# Needs a build (scripts/build.sh); LLMLOAD_BUILD_DIR overrides build/. Loopback only; every run
# is bounded in requests and in time.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=client_bench_lib.sh source-path=SCRIPTDIR
source "$here/client_bench_lib.sh"
repeats="${1:-3}"
which="${2:-all}"

# client_run NAME ARGS...: one bounded llmload run against $url, measured.
client_run() {
  local name="$1"; shift
  measure "$name" --timeout 300 -- "$bin/llmload" run --base-url "$url" --endpoint chat --warmup 0 --seed 1 \
    --output "$work/$name" "$@"
  local failed
  failed=$(json_get "$work/$name/result.json" "d['failed']")
  [ "$failed" = "0" ] || { echo "run $name: $failed requests failed" >&2; exit 1; }
}
cpu_of() { json_get "$work/$1.rusage.json" "d['${2:-cpu_s}']"; }
tokens_of() { json_get "$work/$1/result.json" "d['total_output_tokens']"; }
requests_of() { json_get "$work/$1/result.json" "d['completed']"; }

# differential NAME_SMALL NAME_LARGE UNITS_SMALL UNITS_LARGE [cpu_s|user_s|sys_s]: microseconds of
# client CPU (both, user only, or kernel only) per token or request.
differential() {
  python3 - "$(cpu_of "$1" "${5:-cpu_s}")" "$(cpu_of "$2" "${5:-cpu_s}")" "$3" "$4" <<'PY'
import sys
c1, c2, u1, u2 = map(float, sys.argv[1:])
print(f"{(c2 - c1) / (u2 - u1) * 1e6:.3f}")
PY
}
# The client's CPU while the load ran, from its own result.json (client_cpu: the event loop, not
# start-up nor the result files and report written after the load).
load_differential() {
  python3 - "$work/$1/result.json" "$work/$2/result.json" "$3" "$4" <<'PY'
import json, sys
def cpu(p):
    c = json.load(open(p))["client_cpu"]
    return c["user_s"] + c["system_s"]
c1, c2 = cpu(sys.argv[1]), cpu(sys.argv[2])
u1, u2 = float(sys.argv[3]), float(sys.argv[4])
print(f"{(c2 - c1) / (u2 - u1) * 1e6:.3f}")
PY
}
raw_per_unit() { python3 -c "import sys; print(f'{float(sys.argv[1]) / float(sys.argv[2]) * 1e6:.3f}')" "$(cpu_of "$1")" "$2"; }

echo "# client CPU (llmload process, user+sys), $(date -u +%FT%TZ)"

idle=()
if [ "$which" = all ] || [ "$which" = per-token ]; then
  start_server --latency-model fixed --ttft 0ms --itl 0ms --max-model-len 200000
  diff_tok=(); raw_tok=(); share=(); wake=(); user_tok=(); sys_tok=(); load_tok=()
  for r in $(seq 1 "$repeats"); do
    client_run idle-$r --scenario single-stream --num-requests 1 --input-tokens 16 --output-tokens 1
    idle+=("$(cpu_of idle-$r)")
    client_run tok-small-$r --scenario single-stream --num-requests 1 --input-tokens 16 --output-tokens 2000
    client_run tok-large-$r --scenario single-stream --num-requests 1 --input-tokens 16 --output-tokens 100000
    t1=$(tokens_of tok-small-$r); t2=$(tokens_of tok-large-$r)
    diff_tok+=("$(differential tok-small-$r tok-large-$r "$t1" "$t2")")
    load_tok+=("$(load_differential tok-small-$r tok-large-$r "$t1" "$t2")")
    user_tok+=("$(differential tok-small-$r tok-large-$r "$t1" "$t2" user_s)")
    sys_tok+=("$(differential tok-small-$r tok-large-$r "$t1" "$t2" sys_s)")
    raw_tok+=("$(raw_per_unit tok-large-$r "$t2")")
    share+=("$(json_get "$work/tok-large-$r.rusage.json" "d['cpu_s'] / d['wall_s']")")
    wake+=("$(json_get "$work/tok-large-$r.rusage.json" "d['nvcsw'] / $t2")")
  done
  stop_server
  echo "idle run (start-up, probe, 1 request of 1 token, result files), CPU s: $(median_spread "${idle[@]}")"
  echo "per-token, 1 stream (1 stream x 100k tokens, zero TTFT/ITL):"
  echo "  us/token, differential (100k - 2k tokens): $(median_spread "${diff_tok[@]}")"
  echo "    during the load only (result.json):       $(median_spread "${load_tok[@]}")"
  echo "    of which user / kernel:                 $(median_spread "${user_tok[@]}") / $(median_spread "${sys_tok[@]}")"
  echo "  us/token, raw (all CPU / 100k tokens):      $(median_spread "${raw_tok[@]}")"
  echo "  client core share during the 100k run:      $(median_spread "${share[@]}")"
  echo "  client wake-ups (voluntary switches)/token: $(median_spread "${wake[@]}")"
fi

if [ "$which" = all ] || [ "$which" = paced ]; then
  start_server --latency-model fixed --ttft 0ms --itl 10ms --max-model-len 200000
  diff_tok=(); share=(); wake=(); user_tok=(); sys_tok=(); load_tok=()
  for r in $(seq 1 "$repeats"); do
    client_run paced-small-$r --scenario concurrency --concurrency 100 --num-requests 100 --input-tokens 16 --output-tokens 100
    client_run paced-large-$r --scenario concurrency --concurrency 100 --num-requests 100 --input-tokens 16 --output-tokens 1000
    t1=$(tokens_of paced-small-$r); t2=$(tokens_of paced-large-$r)
    diff_tok+=("$(differential paced-small-$r paced-large-$r "$t1" "$t2")")
    load_tok+=("$(load_differential paced-small-$r paced-large-$r "$t1" "$t2")")
    user_tok+=("$(differential paced-small-$r paced-large-$r "$t1" "$t2" user_s)")
    sys_tok+=("$(differential paced-small-$r paced-large-$r "$t1" "$t2" sys_s)")
    share+=("$(json_get "$work/paced-large-$r.rusage.json" "d['cpu_s'] / d['wall_s']")")
    wake+=("$(json_get "$work/paced-large-$r.rusage.json" "d['nvcsw'] / $t2")")
  done
  stop_server
  echo "per-token, paced (100 streams x 1,000 tokens, ITL 10 ms: one event per read):"
  echo "  us/token, differential (1,000 - 100 tokens per stream): $(median_spread "${diff_tok[@]}")"
  echo "    during the load only (result.json):                 $(median_spread "${load_tok[@]}")"
  echo "    of which user / kernel:                             $(median_spread "${user_tok[@]}") / $(median_spread "${sys_tok[@]}")"
  echo "  client core share during the large run:                $(median_spread "${share[@]}")"
  echo "  client wake-ups (voluntary switches)/token:            $(median_spread "${wake[@]}")"
fi

if [ "$which" = all ] || [ "$which" = per-request ]; then
  start_server --latency-model fixed --ttft 0ms --itl 0ms
  diff_req=(); raw_req=(); share=(); user_req=(); sys_req=(); load_req=()
  for r in $(seq 1 "$repeats"); do
    client_run req-small-$r --scenario concurrency --concurrency 8 --num-requests 1000 --input-tokens 16 --output-tokens 1
    client_run req-large-$r --scenario concurrency --concurrency 8 --num-requests 10000 --input-tokens 16 --output-tokens 1
    n1=$(requests_of req-small-$r); n2=$(requests_of req-large-$r)
    diff_req+=("$(differential req-small-$r req-large-$r "$n1" "$n2")")
    load_req+=("$(load_differential req-small-$r req-large-$r "$n1" "$n2")")
    user_req+=("$(differential req-small-$r req-large-$r "$n1" "$n2" user_s)")
    sys_req+=("$(differential req-small-$r req-large-$r "$n1" "$n2" sys_s)")
    raw_req+=("$(raw_per_unit req-large-$r "$n2")")
    share+=("$(json_get "$work/req-large-$r.rusage.json" "d['cpu_s'] / d['wall_s']")")
  done
  stop_server
  echo "per-request (closed loop, concurrency 8, 1-token outputs, zero latency):"
  echo "  us/request, differential (10,000 - 1,000 requests): $(median_spread "${diff_req[@]}")"
  echo "    during the load only (result.json):             $(median_spread "${load_req[@]}")"
  echo "    of which user / kernel:                         $(median_spread "${user_req[@]}") / $(median_spread "${sys_req[@]}")"
  echo "  us/request, raw (all CPU / 10,000 requests):        $(median_spread "${raw_req[@]}")"
  echo "  client core share during the large run:             $(median_spread "${share[@]}")"
  last="$work/req-large-$repeats/result.json"
fi
machine_line "${last:-$work/tok-large-1/result.json}"
