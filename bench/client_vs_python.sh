#!/usr/bin/env bash
# llmload against the Python stand-in of vLLM's benchmark client (bench/python_client.py: asyncio,
# one task per request, a semaphore, one shared aiohttp session, json.loads per SSE event), same
# server, same shapes, runs alternating (llmload, python, llmload, ...) on this machine (issue 20).
# CPU = user + system of each whole process (wait4, bench/rusage_run.py: the Python client's
# imports and llmload's start-up and result files included), per output token and per request,
# and the ratio python / llmload of the medians:
#   paced  1,000 requests x 128 tokens, concurrency 100, TTFT 5 ms, ITL 5 ms (one token per read)
#   bulk   640 requests x 256 tokens, concurrency 64, TTFT 0, ITL 0 (tokens arrive in bulk)
#   short  20,000 requests x 8 tokens, concurrency 16, TTFT 0, ITL 0 (per request)
#
# Usage: bench/client_vs_python.sh [REPEATS] [LOADS]   (default 3, "paced bulk short")
# Needs aiohttp for the Python client (Debian: apt-get install python3-aiohttp); the first of
# $LLMLOAD_BENCH_PYTHON, python3, /usr/bin/python3 that imports it runs the client.
# Server: build/bin/llmload-server (LLMLOAD_BUILD_DIR) on 127.0.0.1:${LLMLOAD_BENCH_PORT:-18860}.
# Loopback only; every run is bounded by its request count and a time limit.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=client_bench_lib.sh source-path=SCRIPTDIR
source "$here/client_bench_lib.sh"
repeats="${1:-3}"
loads="${2:-paced bulk short}"
export LLMLOAD_BENCH_PORT="${LLMLOAD_BENCH_PORT:-18860}"

py=""
for p in ${LLMLOAD_BENCH_PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null && "$p" -c 'import aiohttp' 2>/dev/null; then py="$p"; break; fi
done
[ -n "$py" ] || { echo "no python with aiohttp: apt-get install python3-aiohttp (or pip install aiohttp)" >&2; exit 2; }

# per_unit NAME TOKENS REQUESTS: "cpu_us_per_token cpu_us_per_request user_us_per_token sys_us_per_token"
per_unit() {
  json_get "$work/$1.rusage.json" \
    "f\"{d['cpu_s'] * 1e6 / $2:.2f} {d['cpu_s'] * 1e6 / $3:.1f} {d['user_s'] * 1e6 / $2:.2f} {d['sys_s'] * 1e6 / $2:.2f}\""
}

echo "# llmload vs the Python client (aiohttp $("$py" -c 'import aiohttp; print(aiohttp.__version__)'), $("$py" --version 2>&1)), $(date -u +%FT%TZ)"
for load in $loads; do
  case "$load" in
    paced) srv=(--ttft 5ms --itl 5ms); conc=100; n=1000; out=128 ;;
    bulk) srv=(--ttft 0ms --itl 0ms); conc=64; n=640; out=256 ;;
    short) srv=(--ttft 0ms --itl 0ms); conc=16; n=20000; out=8 ;;
    *) echo "unknown load '$load'" >&2; exit 2 ;;
  esac
  tokens=$((n * out))
  start_server --latency-model fixed "${srv[@]}" --max-model-len 200000 --max-connections 1000
  l_tok=(); p_tok=(); l_req=(); p_req=()
  for r in $(seq 1 "$repeats"); do
    measure "$load-llmload-$r" --timeout 600 -- "$bin/llmload" run --base-url "$url" --endpoint chat \
      --scenario concurrency --concurrency "$conc" --num-requests "$n" --warmup 0 --seed "$r" --input-tokens 16 \
      --output-tokens "$out" --output "$work/$load-llmload-$r"
    measure "$load-python-$r" --timeout 600 -- "$py" "$here/python_client.py" --base-url "$url" \
      --concurrency "$conc" --num-requests "$n" --input-tokens 16 --output-tokens "$out"
    got=$(json_get "$work/$load-python-$r.out" "d['output_tokens']" 2>/dev/null || echo "?")
    read -r lt lr lu ls <<<"$(per_unit "$load-llmload-$r" "$tokens" "$n")"
    read -r pt pr pu ps <<<"$(per_unit "$load-python-$r" "$tokens" "$n")"
    l_tok+=("$lt"); p_tok+=("$pt"); l_req+=("$lr"); p_req+=("$pr")
    echo "  $load run $r: llmload $lt us/token (user $lu + sys $ls), $lr us/request;" \
         "python $pt us/token (user $pu + sys $ps), $pr us/request (tokens received $got of $tokens)"
  done
  stop_server
  lm=$(median_spread "${l_tok[@]}"); pm=$(median_spread "${p_tok[@]}")
  lrm=$(median_spread "${l_req[@]}"); prm=$(median_spread "${p_req[@]}")
  ratio=$(python3 -c "import sys; print(f'{float(sys.argv[2]) / float(sys.argv[1]):.2f}')" "${lm%% *}" "${pm%% *}")
  echo "$load: llmload us/token $lm, us/request $lrm; python us/token $pm, us/request $prm; python/llmload $ratio"
done
echo "machine: $(nproc) cores, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
