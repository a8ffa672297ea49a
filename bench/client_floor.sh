#!/usr/bin/env bash
# The per-token CPU floor of a lean receive path on this machine (issue 5), for comparison with
# bench/client_cpu.sh: llmload_raw_stream_floor (bench/raw_stream_floor.cpp: plain asio socket
# reads into 4 KiB, its own chunked decoding, llmload's SseParser) with llmload's JSON decoder
# (nlohmann), the DOM-free prototype (fast), and either with one steady_timer re-armed per read
# (as beast::tcp_stream's idle timeout does in llmload), or with each read's kernel receive time
# (--timestamps: SO_TIMESTAMPING and recvmsg, as llmload's transport reads); and, where liburing is installed,
# llmload_uring_stream_floor (bench/uring_stream_floor.cpp: the same reader on io_uring multishot
# receive with provided buffers; "defer": SINGLE_ISSUER | DEFER_TASKRUN; "timestamps": multishot
# recvmsg with each read's kernel receive time, as llmload stamps reads; "asio": the ring waited on
# through an Asio io_context, as llmload's transport would have to). Same loads as client_cpu.sh:
#   paced    100 streams x 1,000 tokens, ITL 10 ms (one event per read)
#   1stream  1 stream x 100,000 tokens, zero TTFT/ITL
# Each variant REPEATS times; prints the median [min..max] of CPU microseconds per token.
#
# Usage: bench/client_floor.sh [REPEATS]   (default 3)
# Needs the bench targets built (LLMLOAD_BUILD_DIR, default build/). Loopback only; bounded.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=client_bench_lib.sh source-path=SCRIPTDIR
source "$here/client_bench_lib.sh"
repeats="${1:-3}"
floor="$bin/llmload_raw_stream_floor"
[ -x "$floor" ] || { echo "$floor is not built (cmake --build ... --target llmload_raw_stream_floor)" >&2; exit 2; }
uring="$bin/llmload_uring_stream_floor"  # built where liburing is installed

echo "# per-token CPU floor of a lean receive path, $(date -u +%FT%TZ)"
for load in paced 1stream; do
  if [ "$load" = paced ]; then
    start_server --latency-model fixed --ttft 0ms --itl 10ms --max-model-len 200000
    args=(100 100 1000)
  else
    start_server --latency-model fixed --ttft 0ms --itl 0ms --max-model-len 200000
    args=(1 1 100000)
  fi
  port="${url##*:}"
  variants=("nlohmann" "nlohmann --timer" "fast" "fast --timer" "fast --timestamps")
  [ -x "$uring" ] && variants+=("uring fast" "uring fast --defer" "uring fast --timestamps" "uring fast --asio --timestamps")
  for variant in "${variants[@]}"; do
    read -r -a extra <<<"$variant"
    program="$floor"
    if [ "${extra[0]}" = uring ]; then program="$uring"; extra=("${extra[@]:1}"); fi
    v=(); rpt=()
    for _ in $(seq 1 "$repeats"); do
      line=$(timeout 300 "$program" 127.0.0.1 "$port" "${args[@]}" --decode "${extra[@]}")
      v+=("$(awk '{for (i = 1; i < NF; ++i) if ($i == "us_per_token") print $(i + 1)}' <<<"$line")")
      rpt+=("$(awk '{for (i = 1; i < NF; ++i) if ($i == "reads_per_token") print $(i + 1)}' <<<"$line")")
    done
    printf '%-8s %-24s us/token %s; reads/token %s\n' "$load" "$variant" "$(median_spread "${v[@]}")" "$(median_spread "${rpt[@]}")"
  done
  stop_server
done
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load average: $(cut -d' ' -f1-3 /proc/loadavg)"
