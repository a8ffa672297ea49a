#!/usr/bin/env bash
# Where the client's CPU goes, per token and per request (issue 5): perf profiles of llmload.
#
# Three runs against llmload-server (fixed model), each under `perf record --call-graph dwarf`,
# split into cost centres by bench/perf_buckets.py (shares of the samples, and microseconds per
# token or request from the run's CPU time):
#   tokens   1 stream x 100,000 tokens, zero TTFT/ITL
#   paced    100 streams x 1,000 tokens, ITL 10 ms (one event per read)
#   requests 10,000 requests of 1 output token, concurrency 8, zero latency
# The perf data and the full reports stay in the work directory ($LLMLOAD_BENCH_WORK to keep it);
# `perf report -i WORK/NAME.perf.data --no-children` shows the flat profile.
#
# Usage: bench/client_profile.sh [tokens|paced|requests|all] [TOP]   (default: all 4)
# Needs perf and a build with symbols (scripts/build.sh builds RelWithDebInfo); loopback, bounded.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=client_bench_lib.sh source-path=SCRIPTDIR
source "$here/client_bench_lib.sh"
which="${1:-all}"
top="${2:-4}"
command -v perf >/dev/null || { echo "perf not found" >&2; exit 2; }

profile() {
  local name="$1" units="$2"; shift 2
  perf record -q -F 2999 --call-graph dwarf,16384 -o "$work/$name.perf.data" -- \
    python3 "$bench_dir/rusage_run.py" "$work/$name.rusage.json" 300 \
    "$bin/llmload" run --base-url "$url" --endpoint chat --warmup 0 --seed 1 --output "$work/$name" "$@" \
    >"$work/$name.out" 2>"$work/$name.err" || { tail "$work/$name.err" >&2; exit 1; }
  local cpu
  cpu=$(json_get "$work/$name.rusage.json" "d['cpu_s']")
  echo "## $name: $units units, client CPU $cpu s ($(python3 -c "print(round($cpu / $units * 1e6, 2))") us/unit, under perf)"
  perf script -i "$work/$name.perf.data" -F comm,ip,sym 2>/dev/null >"$work/$name.script"
  python3 "$bench_dir/perf_buckets.py" llmload --units "$units" --cpu-s "$cpu" --top "$top" <"$work/$name.script"
}

echo "# llmload client profile, $(date -u +%FT%TZ); load average $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$which" = all ] || [ "$which" = tokens ]; then
  start_server --latency-model fixed --ttft 0ms --itl 0ms --max-model-len 200000
  profile tokens 100000 --scenario single-stream --num-requests 1 --input-tokens 16 --output-tokens 100000
fi
if [ "$which" = all ] || [ "$which" = paced ]; then
  start_server --latency-model fixed --ttft 0ms --itl 10ms --max-model-len 200000
  profile paced 100000 --scenario concurrency --concurrency 100 --num-requests 100 --input-tokens 16 --output-tokens 1000
fi
if [ "$which" = all ] || [ "$which" = requests ]; then
  start_server --latency-model fixed --ttft 0ms --itl 0ms
  profile requests 10000 --scenario concurrency --concurrency 8 --num-requests 10000 --input-tokens 16 --output-tokens 1
fi
stop_server
