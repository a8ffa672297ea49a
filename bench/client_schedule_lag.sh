#!/usr/bin/env bash
# Schedule lag at 1,000 requests/s Poisson (issue 5: p99 <= 250 us).
#
# Schedule lag = t_send - t_intended (docs/metrics.md). llmload's server scenario (open loop,
# Poisson arrivals) at RATE requests/s against llmload-server with the fixed model, zero TTFT and
# ITL and short outputs (16-token prompts, 4-token outputs), so the server answers at once and the
# lag is the client's own. 1,000 warmup requests (connections opening) are discarded; the
# percentiles are result.json's schedule_lag over the measured window, plus the p99 over every
# request (warmup included) recomputed from requests.jsonl. Repeated REPEATS times.
#
# Usage: bench/client_schedule_lag.sh [REPEATS] [RATE] [REQUESTS]   (default: 3 1000 10000)
# LLMLOAD_BENCH_SPIN=DURATION passes --schedule-spin (default: llmload's, 100us; 0 = timer only).
# Needs a build (scripts/build.sh); LLMLOAD_BUILD_DIR overrides build/. Loopback only; bounded.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=client_bench_lib.sh source-path=SCRIPTDIR
source "$here/client_bench_lib.sh"
repeats="${1:-3}"
rate="${2:-1000}"
requests="${3:-10000}"
warmup=$((rate < requests ? rate : requests / 10))

start_server --latency-model fixed --ttft 0ms --itl 0ms
echo "# schedule lag, server scenario at $rate req/s, $requests measured + $warmup warmup requests, schedule spin ${LLMLOAD_BENCH_SPIN:-default}, $(date -u +%FT%TZ)"
p50=(); p99=(); p999=(); all99=(); late=()
for r in $(seq 1 "$repeats"); do
  name=lag-$r
  measure "$name" --timeout $((requests / rate + 120)) -- "$bin/llmload" run --base-url "$url" --endpoint chat \
    --scenario server --request-rate "$rate" --num-requests "$requests" --warmup "$warmup" --seed "$r" \
    --input-tokens 16 --output-tokens 4 ${LLMLOAD_BENCH_SPIN:+--schedule-spin "$LLMLOAD_BENCH_SPIN"} --output "$work/$name"
  f="$work/$name/result.json"
  p50+=("$(json_get "$f" "d['schedule_lag']['p50_ms'] * 1000")")
  p99+=("$(json_get "$f" "d['schedule_lag']['p99_ms'] * 1000")")
  p999+=("$(json_get "$f" "d['schedule_lag']['p99.9_ms'] * 1000")")
  late+=("$(json_get "$f" "d['schedule_lag']['late_fraction'] * 100")")
  all99+=("$(python3 - "$work/$name/requests.jsonl" <<'PY'
import json, math, sys
v = sorted(json.loads(l)["schedule_lag_ms"] for l in open(sys.argv[1]))
print(v[max(0, math.ceil(0.99 * len(v)) - 1)] * 1000)
PY
)")
  echo "  run $r: p50 ${p50[-1]} us, p99 ${p99[-1]} us, p99.9 ${p999[-1]} us, max $(json_get "$f" "d['schedule_lag']['max_ms'] * 1000") us," \
       "late>1ms ${late[-1]} %, valid $(json_get "$f" "d['validity']['valid']"), failed $(json_get "$f" "d['failed']")," \
       "achieved $(json_get "$f" "round(d['request_throughput'], 1)") req/s, client CPU $(json_get "$work/$name.rusage.json" "round(d['cpu_s'] / d['wall_s'], 3)") of a core;" \
       "p99 over all requests ${all99[-1]} us"
done
stop_server
echo "schedule lag p50 (us):   $(median_spread "${p50[@]}")"
echo "schedule lag p99 (us):   $(median_spread "${p99[@]}")"
echo "schedule lag p99.9 (us): $(median_spread "${p999[@]}")"
echo "p99 incl. warmup (us):   $(median_spread "${all99[@]}")"
machine_line "$work/lag-1/result.json"
