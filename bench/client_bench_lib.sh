# shellcheck shell=bash
# Shared helpers of the client-cost benchmarks (bench/client_*.sh). Sourced, not run.
#
# - start_server ARGS...: starts build/bin/llmload-server on a free loopback port (or on
#   LLMLOAD_BENCH_PORT) with ARGS, sets $server_pid and $url; stop_server stops it.
# - measure NAME [--timeout S] -- CMD...: runs CMD (the llmload client) under bench/rusage_run.py,
#   which reads the process's own resource usage (wait4: user + system CPU in microseconds; its
#   VmHWM sampled from /proc) into $work/NAME.rusage.json; stderr goes to $work/NAME.err.
# - median_spread VALUES...: prints "median [min..max] n=N".
# LLMLOAD_BENCH_PRIO=rt runs the server and the client under SCHED_FIFO (chrt -f 10; needs root or
# CAP_SYS_NICE), so that other work on a shared machine does not preempt them: use it only for
# runs that leave the CPU mostly idle (schedule lag, paced TTFT error), never for saturating ones.
# Loopback only. Every run is bounded by a request count and by a time limit (SIGTERM).
set -euo pipefail
bench_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$bench_dir/.." && pwd)"
bin="${LLMLOAD_BUILD_DIR:-$repo_root/build}/bin"
[ -x "$bin/llmload" ] && [ -x "$bin/llmload-server" ] || {
  echo "no llmload / llmload-server in $bin: build first (scripts/build.sh) or set LLMLOAD_BUILD_DIR" >&2
  exit 2
}
# 10,000 streams need 10,000 descriptors in each process (plus a few).
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
work="${LLMLOAD_BENCH_WORK:-$(mktemp -d)}"
keep_work="${LLMLOAD_BENCH_WORK:+1}"
# A work directory given that does not exist yet is made (else every step failed on its files).
mkdir -p "$work" || { echo "cannot make the work directory LLMLOAD_BENCH_WORK=$work" >&2; exit 2; }
server_pid=""
url=""
prio=()
case "${LLMLOAD_BENCH_PRIO:-}" in
  "") ;;
  rt) prio=(chrt -f 10) ;;
  *) echo "LLMLOAD_BENCH_PRIO: '$LLMLOAD_BENCH_PRIO' is not 'rt' or empty" >&2; exit 2 ;;
esac

stop_server() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
  fi
}
cleanup() {
  stop_server
  [ -n "$keep_work" ] || rm -rf "$work"
}
trap cleanup EXIT

start_server() {
  stop_server
  "${prio[@]}" "$bin/llmload-server" --port "${LLMLOAD_BENCH_PORT:-0}" --log-level warn "$@" >"$work/server.out" 2>"$work/server.err" &
  server_pid=$!
  url=""
  for _ in $(seq 1 100); do
    url="$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$work/server.out" | head -1 || true)"
    [ -n "$url" ] && break
    sleep 0.1
  done
  [ -n "$url" ] || { cat "$work/server.err" >&2; echo "server did not start" >&2; exit 1; }
}

# measure NAME [--timeout SECONDS] -- CMD...
measure() {
  local name="$1"; shift
  local limit=600
  if [ "$1" = "--timeout" ]; then limit="$2"; shift 2; fi
  [ "$1" = "--" ] && shift
  "${prio[@]}" python3 "$bench_dir/rusage_run.py" "$work/$name.rusage.json" "$limit" "$@" >"$work/$name.out" 2>"$work/$name.err" || {
    echo "run $name failed:" >&2; tail -20 "$work/$name.err" >&2; return 1; }
}

# json_get FILE EXPR: evaluates the Python expression EXPR with the file's JSON as `d`.
json_get() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

median_spread() {
  python3 - "$@" <<'PY'
import statistics, sys
v = [float(x) for x in sys.argv[1:]]
print(f"{statistics.median(v):.3f} [{min(v):.3f}..{max(v):.3f}] n={len(v)}")
PY
}

machine_line() {
  echo "priority: ${LLMLOAD_BENCH_PRIO:-normal}"
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "build: $(json_get "$1" "d['conditions']['tool']['build'] + ', ' + d['conditions']['tool']['compiler']" 2>/dev/null || echo '?') ($bin)"
}
