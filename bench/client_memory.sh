#!/usr/bin/env bash
# Client memory per concurrent stream (issue 5: 10,000 streams held open at once, <= 40 KB each).
#
# llmload-server (fixed model, first token at once, then one token every ITL, --max-connections
# raised above 10,000) keeps every stream open for about OUT x ITL. Three client runs, each
# repeated REPEATS times, with the peak resident set of the llmload process (its VmHWM, read from
# /proc every 10 ms by bench/rusage_run.py; wait4's ru_maxrss would include the forked Python
# parent's image before exec):
#   base   1 request, concurrency 1                              (start-up, libraries, one stream)
#   wide   10,000 requests, --concurrency 10000: all open at once  (streams + 10,000 records)
#   narrow 10,000 requests, --concurrency 100                       (100 streams + 10,000 records;
#          against a zero-latency server so that it ends quickly)
# Per stream held open = (wide - base) / 10,000 (the issue's number: everything a 10k-stream run
# costs), and (wide - narrow) / 9,900 (the streams alone, without the per-request records that
# every completed request leaves behind). From requests.jsonl the script counts the streams open
# at the busiest instant (intervals from response headers to completion), to show that all 10,000
# were held open at once.
#
# Usage: bench/client_memory.sh [REPEATS] [STREAMS]   (default: 3 10000)
# Needs a build (scripts/build.sh); LLMLOAD_BUILD_DIR overrides build/. Loopback only; bounded.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=client_bench_lib.sh source-path=SCRIPTDIR
source "$here/client_bench_lib.sh"
repeats="${1:-3}"
streams="${2:-10000}"
narrow=100
itl="${LLMLOAD_BENCH_ITL:-2s}"
out_tokens="${LLMLOAD_BENCH_OUT:-6}"
need_fds=$((streams + 200))
if [ "$(ulimit -n)" -lt "$need_fds" ]; then
  echo "ulimit -n is $(ulimit -n) (hard $(ulimit -Hn)); $streams streams need about $need_fds descriptors per process" >&2
  exit 2
fi

start_server --latency-model fixed --ttft 0ms --itl "$itl" --max-connections $((streams + 100)) \
  --keepalive-timeout 600s --header-timeout 120s

client_run() {
  local name="$1"; shift
  measure "$name" --timeout 300 -- "$bin/llmload" run --base-url "$url" --endpoint chat --warmup 0 --seed 1 \
    --input-tokens 16 --output-tokens "$out_tokens" --output "$work/$name" "$@"
  local failed
  failed=$(json_get "$work/$name/result.json" "d['failed']")
  [ "$failed" = "0" ] || { echo "run $name: $failed requests failed:" >&2;
    json_get "$work/$name/result.json" "d['errors']" >&2; exit 1; }
}
rss() { json_get "$work/$1.rusage.json" "d['$2']"; }

# overlap NAME: how many streams were open at the busiest instant (records' t_headers..t_done).
overlap() {
  python3 - "$work/$1/requests.jsonl" <<'PY'
import json, sys
ev = []
for line in open(sys.argv[1]):
    r = json.loads(line)
    ev.append((r["t_headers_ms"], 1))
    ev.append((r["t_done_ms"], -1))
ev.sort(key=lambda e: (e[0], e[1]))
cur = best = 0
for _, d in ev:
    cur += d
    best = max(best, cur)
print(best)
PY
}

echo "# client memory per open stream, $(date -u +%FT%TZ); server ITL $itl, $out_tokens tokens per stream"
per_base=(); per_narrow=(); hwm_wide=(); hwm_base=(); hwm_narrow=(); open_max=()
for r in $(seq 1 "$repeats"); do
  client_run base-$r --scenario concurrency --concurrency 1 --num-requests 1
  client_run wide-$r --scenario concurrency --concurrency "$streams" --num-requests "$streams"
  open_max+=("$(overlap wide-$r)")
  hwm_base+=("$(rss base-$r hwm_kb)"); hwm_wide+=("$(rss wide-$r hwm_kb)")
done
# The narrow runs only need the same records: a zero-latency server makes them quick.
start_server --latency-model fixed --ttft 0ms --itl 0ms
for r in $(seq 1 "$repeats"); do
  client_run narrow-$r --scenario concurrency --concurrency "$narrow" --num-requests "$streams"
  b=${hwm_base[$((r - 1))]}; w=${hwm_wide[$((r - 1))]}; n=$(rss narrow-$r hwm_kb)
  hwm_narrow+=("$n")
  per_base+=("$(python3 -c "print(($w - $b) * 1.024 / $streams)")")
  per_narrow+=("$(python3 -c "print(($w - $n) * 1.024 / ($streams - $narrow))")")
  echo "  run $r: VmHWM base $b KiB, wide $w KiB, narrow $n KiB; streams open at once: ${open_max[$((r - 1))]};" \
       "wide: max_in_flight $(json_get "$work/wide-$r/result.json" "d['max_in_flight']"), connections opened" \
       "$(json_get "$work/wide-$r/result.json" "d['connections_opened']"), wall $(rss wide-$r wall_s) s," \
       "client CPU $(rss wide-$r cpu_s) s, largest VmRSS sampled $(rss wide-$r max_sampled_rss_kb) KiB"
done
stop_server
echo "peak RSS, VmHWM (KiB): base $(median_spread "${hwm_base[@]}"); wide $(median_spread "${hwm_wide[@]}"); narrow $(median_spread "${hwm_narrow[@]}")"
echo "streams open at one instant: $(median_spread "${open_max[@]}")"
echo "KB (1000 B) per stream, (wide - base) / $streams:                           $(median_spread "${per_base[@]}")"
echo "KB per stream, (wide - narrow) / $((streams - narrow)) (streams without their records): $(median_spread "${per_narrow[@]}")"
machine_line "$work/wide-1/result.json"
