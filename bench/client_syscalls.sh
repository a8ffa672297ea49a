#!/usr/bin/env bash
# System calls and CPU per token of llmload builds, side by side (issue 20, "fewer kernel
# crossings per token"). System-call counts do not depend on the machine's load; CPU does, so
# the CPU runs alternate the builds (A B A B ...) and print every run.
#
#   strace  `strace -c -f` of a paced run: 1,000 requests x 128 tokens at concurrency 100 against
#           llmload-server --latency-model fixed --ttft 5ms --itl 5ms; prints recvmsg, recvfrom,
#           epoll_ctl, epoll_wait, sendmsg, sendto, timerfd_settime and all syscalls per token
#   paced   CPU: 1,000 requests x 128 tokens, concurrency 100, TTFT 5 ms, ITL 5 ms
#   bulk    CPU: 640 requests x 256 tokens, concurrency 64, TTFT 0, ITL 0 (tokens arrive in bulk)
#   short   CPU: 20,000 requests x 8 tokens, concurrency 16, TTFT 0, ITL 0 (per request)
# CPU = user + system time of the whole llmload process (wait4, bench/rusage_run.py).
#
# Usage: bench/client_syscalls.sh [REPEATS] [LOADS] BIN [BIN...]
#        (default 3, "strace paced bulk short"; each BIN an llmload binary, e.g. a copy of the
#        build before a change and build/bin/llmload)
# Server: build/bin/llmload-server (LLMLOAD_BUILD_DIR) on 127.0.0.1:${LLMLOAD_BENCH_PORT:-18850}.
# Loopback only; every run is bounded by its request count and a time limit.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=client_bench_lib.sh source-path=SCRIPTDIR
source "$here/client_bench_lib.sh"
repeats="${1:-3}"
loads="${2:-strace paced bulk short}"
shift 2 || true
[ $# -gt 0 ] || set -- "$bin/llmload"
port="${LLMLOAD_BENCH_PORT:-18850}"

# start_fixed TTFT ITL: llmload-server on the fixed port.
start_fixed() {
  stop_server
  "$bin/llmload-server" --port "$port" --log-level warn --latency-model fixed --ttft "$1" --itl "$2" \
    --max-model-len 200000 --max-connections 1000 >"$work/server.out" 2>"$work/server.err" &
  server_pid=$!
  url="http://127.0.0.1:$port"
  for _ in $(seq 1 100); do
    curl -sf "$url/v1/models" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  cat "$work/server.err" >&2; echo "server did not start on $url" >&2; exit 1
}

# shape LOAD: sets the server's TTFT/ITL and the client's arguments and token count of a load.
shape() {
  case "$1" in
    strace|paced) ttft=5ms; itl=5ms; args=(--concurrency 100 --num-requests 1000 --output-tokens 128); tokens=128000; reqs=1000 ;;
    bulk) ttft=0ms; itl=0ms; args=(--concurrency 64 --num-requests 640 --output-tokens 256); tokens=163840; reqs=640 ;;
    short) ttft=0ms; itl=0ms; args=(--concurrency 16 --num-requests 20000 --output-tokens 8); tokens=160000; reqs=20000 ;;
    *) echo "unknown load '$1'" >&2; exit 2 ;;
  esac
}
client_args() {  # client_args BIN OUTDIR
  echo "$1" run --base-url "$url" --endpoint chat --scenario concurrency --warmup 0 --seed 1 --input-tokens 16 \
    "${args[@]}" --output "$2"
}

echo "# llmload syscalls and CPU per token, $(date -u +%FT%TZ); builds: $*"
for load in $loads; do
  shape "$load"
  start_fixed "$ttft" "$itl"
  if [ "$load" = strace ]; then
    command -v strace >/dev/null || { echo "strace is not installed" >&2; exit 2; }
    i=0
    for b in "$@"; do
      i=$((i + 1))
      out="$work/strace-$i"
      # shellcheck disable=SC2046
      timeout 300 strace -c -f -o "$out.txt" $(client_args "$b" "$work/strace-run-$i") >/dev/null 2>"$out.err" ||
        { echo "strace run of $b failed:" >&2; tail -5 "$out.err" >&2; exit 1; }
      python3 - "$out.txt" "$tokens" "$b" <<'PY'
import sys
counts = {}
total = 0
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 5 and f[0][0].isdigit() and f[-1] not in ("total",):
        calls = int(f[3]); name = f[-1]
        counts[name] = calls
        total += calls
tokens = int(sys.argv[2])
names = ["recvmsg", "recvfrom", "epoll_ctl", "epoll_wait", "sendmsg", "sendto", "timerfd_settime"]
print(f"strace  {sys.argv[3]}: " + ", ".join(f"{n} {counts.get(n, 0)} ({counts.get(n, 0) / tokens:.3f}/token)" for n in names)
      + f"; all syscalls {total} ({total / tokens:.3f}/token)")
PY
    done
  else
    for r in $(seq 1 "$repeats"); do
      i=0
      for b in "$@"; do
        i=$((i + 1))
        name="$load-$i-$r"
        # shellcheck disable=SC2046
        measure "$name" --timeout 300 -- $(client_args "$b" "$work/$name")
        read -r u s <<<"$(json_get "$work/$name.rusage.json" "f\"{d['user_s']} {d['sys_s']}\"")"
        python3 -c "
import sys
u, s, tok, req = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
print(f'{sys.argv[5]:<6} run {sys.argv[6]} {sys.argv[7]}: {(u + s) * 1e6 / tok:.2f} us/token (user {u * 1e6 / tok:.2f} + sys {s * 1e6 / tok:.2f}), {(u + s) * 1e6 / req:.1f} us/request')
" "$u" "$s" "$tokens" "$reqs" "$load" "$r" "$b"
      done
    done
  fi
  stop_server
done
echo "machine: $(nproc) cores, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
