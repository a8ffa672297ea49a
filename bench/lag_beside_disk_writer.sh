#!/usr/bin/env bash
# Schedule lag while another process fills the disk: does writing the run's files (requests.jsonl,
# the record spill) make llmload send late? A write(2) to a busy disk can block for tens of
# milliseconds (the kernel throttles writers when much of memory waits to be written back); on the
# event loop that is a request sent late. Since 2026-11-27 the files are written from a thread of
# their own (loadgen/include/llmload/loadgen/background_appender.hpp).
#
# The load is the capacity check's (tests/integration/sweep/capacity_check_test.cpp): llmload-server
# with the fixed model, 8 slots, TTFT 20 ms, ITL 2 ms; the server scenario at RATE requests/s for
# SECONDS (1 s warmup), --schedule-spin 2ms. During each run `dd` writes zeros to a file on the disk
# (DD_MIB MiB at most; started 2 s before the run, stopped after it, the file removed). Each pair
# runs, in turn: llmload with its output on the disk, then on tmpfs (/dev/shm: its writes never
# wait) as the baseline; with LLMLOAD_BENCH_OTHER_BUILD=DIR (a build directory with bin/llmload,
# e.g. a build of an older commit) first that build with its output on the disk.
# Prints per run: requests sent more than 1 ms late, and the lag's mean, p99 and max (ms), and the
# run's validity; then the medians per variant. With LLMLOAD_BENCH_STRACE=1 the client runs under
# `strace -f --seccomp-bpf -e trace=write` (only write(2) stops it) and each run also prints its
# slowest write on the event loop's thread and on any other thread, in ms.
# The stall is intermittent (the kernel pauses a writer only when it dirties pages past its
# share): compare several pairs, not one.
#
# Usage: bench/lag_beside_disk_writer.sh [PAIRS] [RATE] [SECONDS] [DD_MIB]   (default: 3 113 6 12000)
# The disk directory is LLMLOAD_BENCH_DISK_DIR (default: the repository's parent, which must not be
# tmpfs) and needs DD_MIB MiB free plus 1 GiB. Needs a build (scripts/build.sh). Loopback only; every
# run is bounded in time and the writer in size.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=client_bench_lib.sh source-path=SCRIPTDIR
source "$here/client_bench_lib.sh"
pairs="${1:-3}"
rate="${2:-113}"
seconds="${3:-6}"
dd_mib="${4:-12000}"
for arg in "pairs=$pairs" "rate=$rate" "seconds=$seconds" "dd_mib=$dd_mib"; do
  case "${arg#*=}" in
    '' | *[!0-9]* | 0) echo "${arg%%=*} '${arg#*=}' is not a positive whole number (usage: PAIRS RATE SECONDS DD_MIB, e.g. 3 113 6 12000)" >&2; exit 2 ;;
  esac
done
disk="${LLMLOAD_BENCH_DISK_DIR:-$(cd "$repo_root/.." && pwd)}"
[ "$(stat -f -c %T "$disk")" != "tmpfs" ] || { echo "$disk is tmpfs: set LLMLOAD_BENCH_DISK_DIR to a directory on a disk" >&2; exit 2; }
if [ ! -d /dev/shm ] || [ "$(stat -f -c %T /dev/shm)" != "tmpfs" ]; then echo "no tmpfs at /dev/shm for the baseline" >&2; exit 2; fi
free_mib=$(($(stat -f -c '%a * %S' "$disk") / 1048576))
[ "$free_mib" -ge $((dd_mib + 1024)) ] || { echo "$disk has $free_mib MiB free; DD_MIB=$dd_mib needs $((dd_mib + 1024))" >&2; exit 2; }
other="${LLMLOAD_BENCH_OTHER_BUILD:-}"
tracer=()
if [ "${LLMLOAD_BENCH_STRACE:-}" = 1 ]; then
  command -v strace >/dev/null || { echo "LLMLOAD_BENCH_STRACE=1 needs strace (apt-get install strace)" >&2; exit 2; }
  tracer=(strace -f --seccomp-bpf -e trace=write -T -o)
fi
[ -z "$other" ] || [ -x "$other/bin/llmload" ] || { echo "LLMLOAD_BENCH_OTHER_BUILD: no $other/bin/llmload" >&2; exit 2; }
fill="$disk/llmload-lag-bench-$$.fill"
dd_pid=""
stop_dd() {
  if [ -n "$dd_pid" ]; then kill "$dd_pid" 2>/dev/null || true; wait "$dd_pid" 2>/dev/null || true; dd_pid=""; fi
  rm -f "$fill"
}
trap 'stop_dd; cleanup' EXIT

start_server --latency-model fixed --ttft 20ms --itl 2ms --max-num-seqs 8
echo "# schedule lag beside a disk writer: server scenario at $rate req/s for ${seconds}s, dd of up to $dd_mib MiB to $disk, $(date -u +%FT%TZ)"
declare -A late mean p99 max
one_run() {  # LABEL LLMLOAD OUTPUT_DIR
  local label="$1" client="$2" out="$3"
  rm -rf "$out"
  dd if=/dev/zero of="$fill" bs=1M count="$dd_mib" status=none &
  dd_pid=$!
  sleep 2
  local trace=()
  [ ${#tracer[@]} -eq 0 ] || trace=("${tracer[@]}" "$out.strace")
  timeout $((seconds + 120)) "${trace[@]}" "$client" run --base-url "$url" --input-tokens 16 --output-tokens 16 --scenario server \
    --request-rate "$rate" --duration "${seconds}s" --warmup 1s --slo ttft:100ms,p95 --quiet --schedule-spin 2ms \
    --output "$out" >"$out.log" 2>&1 || true
  stop_dd
  local f="$out/result.json"
  [ -f "$f" ] || { echo "  $label: no result.json"; tail -5 "$out.log"; return; }
  late[$label]+=" $(json_get "$f" "d['schedule_lag']['late_over_1ms']")"
  mean[$label]+=" $(json_get "$f" "d['schedule_lag']['mean_ms']")"
  p99[$label]+=" $(json_get "$f" "d['schedule_lag']['p99_ms']")"
  max[$label]+=" $(json_get "$f" "d['schedule_lag']['max_ms']")"
  echo "  $label: late>1ms $(json_get "$f" "d['schedule_lag']['late_over_1ms']") of $(json_get "$f" "d['schedule_lag']['count']")," \
       "mean $(json_get "$f" "round(d['schedule_lag']['mean_ms'], 3)") ms, p99 $(json_get "$f" "d['schedule_lag']['p99_ms']") ms," \
       "max $(json_get "$f" "d['schedule_lag']['max_ms']") ms, $(json_get "$f" "d['validity']['verdict']")"
  if [ -f "$out.strace" ]; then
    # The process's first thread runs the event loop (the driver).
    python3 - "$out.strace" <<'PY'
import re, sys
first, worst = None, {"event loop": 0.0, "other threads": 0.0}
for line in open(sys.argv[1]):
    m = re.match(r"(\d+) write\(.*<([\d.]+)>", line)
    if not m:
        continue
    first = first or m.group(1)
    key = "event loop" if m.group(1) == first else "other threads"
    worst[key] = max(worst[key], float(m.group(2)) * 1000)
print("    slowest write(2): " + ", ".join(f"{k} {v:.2f} ms" for k, v in worst.items()))
PY
  fi
  rm -rf "$out" "$out.strace" "$out.log"
  sleep 3  # the disk settles between runs
}
labels=()
[ -z "$other" ] || labels+=("other-build-on-disk")
labels+=("on-disk" "on-tmpfs")
for p in $(seq 1 "$pairs"); do
  echo "pair $p:"
  [ -z "$other" ] || one_run other-build-on-disk "$other/bin/llmload" "$disk/llmload-lag-bench-$$-out"
  one_run on-disk "$bin/llmload" "$disk/llmload-lag-bench-$$-out"
  one_run on-tmpfs "$bin/llmload" "/dev/shm/llmload-lag-bench-$$-out"
done
stop_server
for l in "${labels[@]}"; do
  [ -n "${late[$l]:-}" ] || continue
  # shellcheck disable=SC2086
  echo "$l: late>1ms $(median_spread ${late[$l]}); mean ms $(median_spread ${mean[$l]}); p99 ms $(median_spread ${p99[$l]}); max ms $(median_spread ${max[$l]})"
done
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), disk $(df --output=source "$disk" | tail -1)"
