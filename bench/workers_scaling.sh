#!/usr/bin/env bash
# Issue 20, "every core from one command": the same closed-loop load at 1, 2 (and more) client
# processes with `llmload run --workers N`, against llmload-server --latency-model fixed pinned to
# one core (taskset) so that, on a small machine, the client side is what changes. Prints, per N,
# the sustained output tokens/s and requests/s of the merged run, the speedup over N = 1 and the
# scaling efficiency (speedup / N), plus the client processes' CPU (user+sys, all workers).
#
# Usage: bench/workers_scaling.sh [OUT] [WORKER_COUNTS]   (default: /tmp/workers-scaling "1 2 $(nproc)")
# Environment: REQUESTS (default 4000), CONCURRENCY (64), OUTPUT_TOKENS (256), ITL (0ms: tokens as
# fast as the server writes them), SERVER_CORE (0; empty: not pinned), PORT (18951).
# Needs a build (scripts/build.sh); LLMLOAD_BUILD_DIR overrides build/. Loopback only; bounded:
# each run is a fixed number of requests under `timeout 300`.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
B="${LLMLOAD_BUILD_DIR:-$here/build}/bin"
out="${1:-/tmp/workers-scaling}"
counts="${2:-1 2 $(nproc)}"
counts=$(echo $counts | tr ' ' '\n' | awk '!seen[$0]++' | tr '\n' ' ')
requests="${REQUESTS:-4000}"
conc="${CONCURRENCY:-64}"
otok="${OUTPUT_TOKENS:-256}"
itl="${ITL:-0ms}"
core="${SERVER_CORE-0}"
port="${PORT:-18951}"
rm -rf "$out"; mkdir -p "$out"
pin=()
[ -n "$core" ] && command -v taskset > /dev/null && pin=(taskset -c "$core")
"${pin[@]}" "$B/llmload-server" --port "$port" --latency-model fixed --ttft 1ms --itl "$itl" > "$out/server.log" 2>&1 &
spid=$!
trap 'kill $spid 2> /dev/null; wait $spid 2> /dev/null' EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/v1/models" > /dev/null 2>&1 && break; sleep 0.1; done
common=(--base-url "http://127.0.0.1:$port" --scenario concurrency --concurrency "$conc" --num-requests "$requests"
        --input-tokens 16 --output-tokens "$otok" --seed 1 --quiet)
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); server pinned: ${pin[*]:-no}"
echo "load: --concurrency $conc --num-requests $requests --output-tokens $otok, server --latency-model fixed --ttft 1ms --itl $itl"
printf "%-8s %14s %10s %9s %11s %14s %10s\n" workers "output tok/s" "req/s" speedup efficiency "client CPU s" validity
base=""
for n in $counts; do
  # Client CPU: the children's rusage of the whole command (the parent and every worker).
  /usr/bin/time -f "%U %S" -o "$out/w$n.time" timeout 300 "$B/llmload" run "${common[@]}" --workers "$n" \
    --output "$out/w$n" > "$out/w$n.out" 2> "$out/w$n.err"
  rc=$?
  if [ ! -f "$out/w$n/result.json" ]; then echo "workers $n: exit $rc, no result (see $out/w$n.err)"; continue; fi
  read -r tok req valid < <(python3 -c "
import json; r=json.load(open('$out/w$n/result.json'))
print('%.0f %.1f %s' % (r['output_throughput'], r['request_throughput'], r['validity']['verdict']))")
  cpu=$(awk '{printf "%.2f", $1+$2}' "$out/w$n.time" 2> /dev/null)
  [ -z "$base" ] && base=$tok
  read -r sp eff < <(python3 -c "print('%.2f %.0f%%' % ($tok/$base, 100*$tok/$base/$n))")
  printf "%-8s %14s %10s %9s %11s %14s %10s\n" "$n" "$tok" "$req" "${sp}x" "$eff" "$cpu" "$valid"
done
