#!/usr/bin/env bash
# Client memory over the length of a run (issue 20, "flat memory"): the peak resident set of one
# `llmload run` (its VmHWM, sampled from /proc by bench/rusage_run.py) at several request counts,
# against llmload-server with no latency (fixed model, TTFT 0, ITL 0), so that each run is as
# short as the client allows. Closed loop, --concurrency 16, 8 output tokens per request, the
# default outputs (result.json, requests.jsonl, latency.hlog and the report are all written:
# their cost is part of the run's).
#
# Prints one row per count: requests, peak RSS (MiB), wall seconds, and the growth per request
# from the smallest count. Flat memory means the peak does not follow the count (targets:
# 1M requests <= 150 MB, 10M <= 200 MB).
#
# Usage: bench/client_run_memory.sh [COUNTS...]   (default: 10000 100000 1000000)
# LLMLOAD_BENCH_WORK=DIR keeps every run's artifact in DIR/n<COUNT> (otherwise deleted after its row).
# Needs a build (scripts/build.sh); LLMLOAD_BUILD_DIR overrides build/. Loopback only; each run is
# bounded by its request count and by a time limit (LLMLOAD_BENCH_LIMIT_S, default 3600 s).
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=client_bench_lib.sh source-path=SCRIPTDIR
source "$here/client_bench_lib.sh"
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(10000 100000 1000000)
limit="${LLMLOAD_BENCH_LIMIT_S:-3600}"

start_server --latency-model fixed --ttft 0ms --itl 0ms

first_n=""
first_kb=""
for n in "${counts[@]}"; do
  measure "n$n" --timeout "$limit" -- "$bin/llmload" run --base-url "$url" --endpoint chat --warmup 0 --seed 1 \
    --concurrency 16 --num-requests "$n" --input-tokens 16 --output-tokens 8 --quiet --output "$work/n$n"
  failed=$(json_get "$work/n$n/result.json" "d['failed']")
  [ "$failed" = "0" ] || { echo "run of $n requests: $failed failed" >&2; exit 1; }
  kb=$(json_get "$work/n$n.rusage.json" "d['hwm_kb']")
  wall=$(json_get "$work/n$n.rusage.json" "round(d['wall_s'], 1)")
  growth="-"
  if [ -z "$first_n" ]; then
    machine_line "$work/n$n/result.json"
    printf '%-10s %10s %9s %14s\n' requests peak_MiB wall_s "KiB/request"
  fi
  if [ -n "$first_n" ]; then
    growth=$(python3 -c "print(f'{($kb - $first_kb) / ($n - $first_n):.4f}')")
  else
    first_n=$n
    first_kb=$kb
  fi
  printf '%-10s %10s %9s %14s\n' "$n" "$(python3 -c "print(f'{$kb / 1024:.1f}')")" "$wall" "$growth"
  [ -n "$keep_work" ] || rm -rf "${work:?}/n$n"  # LLMLOAD_BENCH_WORK=DIR keeps each run (e.g. to time `llmload report` on it)
done
