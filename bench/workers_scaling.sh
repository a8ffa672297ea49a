#!/usr/bin/env bash
# Issue 20, "every core from one command": the same closed-loop load at 1, 2 (and more) client
# processes with `llmload run --workers N`, against llmload-server --latency-model fixed pinned to
# one core (taskset) so that, on a small machine, the client side is what changes. Prints, per N,
# the sustained output tokens/s and requests/s of the merged run, the speedup over N = 1 and the
# scaling efficiency (speedup / N), the client processes' CPU (user+sys, all workers) and wall time,
# and the cores busy on each side (see below) to show which side was the limit.
#
# Usage: bench/workers_scaling.sh [OUT] [WORKER_COUNTS]   (default: /tmp/workers-scaling "1 2 $(nproc)";
#        a count may be `auto`: the number of workers is then read from the run's conditions)
# Environment: REQUESTS (default 4000), CONCURRENCY (64), OUTPUT_TOKENS (256), ITL (0ms: tokens as
# fast as the server writes them), SERVER_CORE (the server's cores for taskset, e.g. 0 or 0-7;
# default 0; empty: not pinned), SERVER_THREADS (the server's --threads, default 1), CLIENT_CORES
# (the client's cores for taskset, e.g. 8-15; default: not pinned; the workers inherit it, and
# `--workers auto` counts it), PORT (18951).
# On a machine with more cores than the client and server need, give each its own, e.g. on 16:
#   SERVER_CORE=0-7 SERVER_THREADS=8 CLIENT_CORES=8-15 bench/workers_scaling.sh OUT "1 2 4 8 auto"
# Needs a build (scripts/build.sh); LLMLOAD_BUILD_DIR overrides build/. Loopback only; bounded:
# each run is a fixed number of requests, stopped after 300 s.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
B="${LLMLOAD_BUILD_DIR:-$here/build}/bin"
out="${1:-/tmp/workers-scaling}"
counts="${2:-1 2 $(nproc)}"
counts=$(echo "$counts" | tr ' ' '\n' | awk '!seen[$0]++' | tr '\n' ' ')
requests="${REQUESTS:-4000}"
conc="${CONCURRENCY:-64}"
otok="${OUTPUT_TOKENS:-256}"
itl="${ITL:-0ms}"
core="${SERVER_CORE-0}"
threads="${SERVER_THREADS:-1}"
client_cores="${CLIENT_CORES:-}"
port="${PORT:-18951}"
rm -rf "$out"; mkdir -p "$out"
pin=(); cpin=()
[ -n "$core" ] && command -v taskset > /dev/null && pin=(taskset -c "$core")
[ -n "$client_cores" ] && command -v taskset > /dev/null && cpin=(taskset -c "$client_cores")
"${pin[@]}" "$B/llmload-server" --port "$port" --latency-model fixed --ttft 1ms --itl "$itl" --threads "$threads" \
  > "$out/server.log" 2>&1 &
spid=$!
trap 'kill $spid 2> /dev/null; wait $spid 2> /dev/null' EXIT
python3 "$here/bench/wait_ready.py" "$port" || { echo "llmload-server did not start (see $out/server.log)" >&2; exit 1; }
common=(--base-url "http://127.0.0.1:$port" --scenario concurrency --concurrency "$conc" --num-requests "$requests"
        --input-tokens 16 --output-tokens "$otok" --seed 1 --quiet)
echo "machine: $(nproc --all) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); server: ${pin[*]:-not pinned}," \
  "--threads $threads; client: ${cpin[*]:-not pinned}"
echo "load: --concurrency $conc --num-requests $requests --output-tokens $otok, server --latency-model fixed --ttft 1ms --itl $itl"
# Which side was the limit: the client's cores = its CPU (all its processes: start, run, merge) /
# the command's wall time; the server's cores = its CPU during the command (read from /proc before
# and after; it is idle outside the run) / the run's measured window (result.json window.length_s).
server_cpu() { awk '{printf "%.2f", ($14 + $15) / '"$(getconf CLK_TCK)"'}' "/proc/$spid/stat"; }
printf "%-8s %14s %10s %9s %11s %14s %10s %12s %12s %10s\n" workers "output tok/s" "req/s" speedup efficiency \
  "client CPU s" "wall s" "client cores" "server cores" validity
base=""
for n in $counts; do
  s0=$(server_cpu)
  # Client CPU: the rusage of the whole command, the parent and every worker it reaped.
  "${cpin[@]}" python3 "$here/bench/rusage_run.py" "$out/w$n.rusage.json" 300 "$B/llmload" run "${common[@]}" \
    --workers "$n" --output "$out/w$n" > "$out/w$n.out" 2> "$out/w$n.err"
  rc=$?
  s1=$(server_cpu)
  if [ ! -f "$out/w$n/result.json" ]; then echo "workers $n: exit $rc, no result (see $out/w$n.err)"; continue; fi
  read -r tok req valid workers cpu wall ccores scores < <(python3 -c "
import json; r=json.load(open('$out/w$n/result.json')); u=json.load(open('$out/w$n.rusage.json'))
print('%.0f %.1f %s %d %.2f %.2f %.2f %.2f' % (r['output_throughput'], r['request_throughput'],
      r['validity']['verdict'], r['conditions'].get('workers', 1), u['cpu_s'], u['wall_s'], u['cpu_s'] / u['wall_s'],
      ($s1 - $s0) / r['window']['length_s']))")
  [ -z "$base" ] && base=$tok
  read -r sp eff < <(python3 -c "print('%.2f %.0f%%' % ($tok/$base, 100*$tok/$base/$workers))")
  label=$n; [ "$n" = "$workers" ] || label="$n ($workers)"
  printf "%-8s %14s %10s %9s %11s %14s %10s %12s %12s %10s\n" "$label" "$tok" "$req" "${sp}x" "$eff" "$cpu" "$wall" \
    "$ccores" "$scores" "$valid"
done
