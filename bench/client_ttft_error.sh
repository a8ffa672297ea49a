#!/usr/bin/env bash
# TTFT measurement error at 1,000 concurrent streams (issue 5: p99 <= 200 us).
#
# Ground truth: llmload-server puts {"llmload": {"first_token_s", ...}} in the last token chunk of
# every stream (seconds from the kernel's receive time of the request's last bytes, SO_TIMESTAMPING,
# to the first token's write, measured by the server), and llmload records it per request in
# requests.jsonl as "server": {"queue_s", "first_token_s", "last_token_s"}. Error of one request =
# client ttft_ms - server first_token_s. It contains the request's trip to the server (the client
# stamps t_send before writing), the first chunk's trip back, and the client's delay in timing it:
# everything that makes the client's TTFT differ from the server's. (Until 2026-11-23 the server's
# clock started when its event loop had read the request, so its own read delay at 1,000 streams
# counted as client error.)
#
# Three loads, closed loop at CONCURRENCY streams (16-token prompts, 20 output tokens), REPEATS
# times each:
#   desync --ttft 20ms --itl 50ms --jitter 0.5: a realistic stream rate (20k tokens/s at 1,000
#          streams), token times spread out as a real server's are;
#   sync   --ttft 20ms --itl 50ms: all streams in lock-step, so every 50 ms the server writes a
#          burst of ~1,000 tokens and the client reads them one after another (worst case);
#   zero   --ttft 0ms --itl 0ms: both processes saturated (the issue's "zero latency").
# Prints the error's p50 / p99 / p99.9 / max (microseconds) per run and the median over runs,
# measured requests only (the CONCURRENCY warmup requests, which open the connections, are left out).
#
# Where the numbers come from: llmload's requests.jsonl when it has the "server" field; else
# (a llmload built before that field) bench's llmload_ttft_truth, which runs the same scenario
# through llmload's own RunController/RequestTracker/AsioTransport with a pass-through observer
# that reads the ground truth from the stream (bench/ttft_truth.cpp). The script says which.
# LLMLOAD_BENCH_PRIO=rt (see client_bench_lib.sh) applies to desync and sync only; zero saturates
# the CPU and always runs at normal priority.
#
# Usage: bench/client_ttft_error.sh [REPEATS] [CONCURRENCY] [REQUESTS] [LOADS]
#        (default: 3 1000 3000 "desync sync zero")
# Needs a build (scripts/build.sh); LLMLOAD_BUILD_DIR overrides build/. Loopback only; bounded.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=client_bench_lib.sh source-path=SCRIPTDIR
source "$here/client_bench_lib.sh"
repeats="${1:-3}"
conc="${2:-1000}"
requests="${3:-3000}"
loads="${4:-desync sync zero}"

# error_stats FILE: "p50 p99 p99.9 max n" of (ttft - server first token) in microseconds, or "missing".
error_stats() {
  python3 - "$1" <<'PY'
import json, math, sys
errs = []
have = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    s = r.get("server")
    if r.get("warmup") or not r.get("ok") or r.get("ttft_ms") is None:
        continue
    if not isinstance(s, dict) or s.get("first_token_s") is None:
        continue
    have += 1
    errs.append((r["ttft_ms"] - s["first_token_s"] * 1000.0) * 1000.0)
if not errs:
    print("missing")
    sys.exit(0)
errs.sort()
q = lambda p: errs[max(0, math.ceil(p * len(errs)) - 1)]
print(f"{q(0.5):.1f} {q(0.99):.1f} {q(0.999):.1f} {errs[-1]:.1f} {len(errs)} {errs[0]:.1f}")
PY
}

# Which source: does this llmload record the ground truth?
saved_prio=("${prio[@]}")
start_server --latency-model fixed --ttft 0ms --itl 0ms
measure probe --timeout 60 -- "$bin/llmload" run --base-url "$url" --endpoint chat --scenario concurrency \
  --concurrency 2 --num-requests 4 --warmup 0 --input-tokens 4 --output-tokens 2 --output "$work/probe"
if [ "$(error_stats "$work/probe/requests.jsonl")" = missing ]; then
  source_note="llmload_ttft_truth (this llmload's requests.jsonl has no \"server\" field yet)"
  truth_bin="$bin/llmload_ttft_truth"
  [ -x "$truth_bin" ] || { echo "requests.jsonl has no \"server\" field and $truth_bin is not built" >&2; exit 3; }
else
  source_note="llmload requests.jsonl \"server\" field"
  truth_bin=""
fi
echo "# TTFT error (client ttft - server first-token time), $conc concurrent streams, $(date -u +%FT%TZ)"
echo "# source: $source_note"
for load in $loads; do
  case "$load" in
    desync) prio=("${saved_prio[@]}"); start_server --latency-model fixed --ttft 20ms --itl 50ms --jitter 0.5 --max-connections $((conc + 100)) ;;
    sync) prio=("${saved_prio[@]}"); start_server --latency-model fixed --ttft 20ms --itl 50ms --max-connections $((conc + 100)) ;;
    zero) prio=(); start_server --latency-model fixed --ttft 0ms --itl 0ms --max-connections $((conc + 100)) ;;
    *) echo "unknown load '$load'" >&2; exit 2 ;;
  esac
  p50=(); p99=(); p999=()
  for r in $(seq 1 "$repeats"); do
    name=$load-$r
    if [ -n "$truth_bin" ]; then
      measure "$name" --timeout 300 -- "$truth_bin" "$url" "$conc" "$requests" "$conc" 16 20 "$work/$name.jsonl"
      jsonl="$work/$name.jsonl"
    else
      measure "$name" --timeout 300 -- "$bin/llmload" run --base-url "$url" --endpoint chat --scenario concurrency \
        --concurrency "$conc" --num-requests "$requests" --warmup "$conc" --seed "$r" --input-tokens 16 \
        --output-tokens 20 --output "$work/$name"
      jsonl="$work/$name/requests.jsonl"
    fi
    read -r e50 e99 e999 emax n emin <<<"$(error_stats "$jsonl")"
    p50+=("$e50"); p99+=("$e99"); p999+=("$e999")
    echo "  $load run $r: error p50 $e50 us, p99 $e99 us, p99.9 $e999 us, min $emin, max $emax us (n=$n);" \
         "client CPU $(json_get "$work/$name.rusage.json" "round(d['cpu_s'], 2)") s in $(json_get "$work/$name.rusage.json" "round(d['wall_s'], 2)") s"
  done
  stop_server
  echo "$load: error p50 (us) $(median_spread "${p50[@]}"); p99 (us) $(median_spread "${p99[@]}"); p99.9 (us) $(median_spread "${p999[@]}")"
done
prio=("${saved_prio[@]}")
machine_line "$work/probe/result.json"
