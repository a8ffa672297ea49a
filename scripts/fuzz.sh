#!/usr/bin/env bash
# Runs every libFuzzer target (BUILD_DIR/bin/fuzz_*) for SECONDS each, one after the other.
#
#   scripts/fuzz.sh [BUILD_DIR] [SECONDS]        defaults: build-fuzz, 30
#
# BUILD_DIR is a fuzz build (relative paths are taken from the repository root):
#   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DLLMLOAD_ENABLE_CUDA=OFF \
#     -DLLMLOAD_SANITIZE=address,undefined -DLLMLOAD_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug \
#     -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DLLMLOAD_BUILD_BENCH=OFF
#   cmake --build build-fuzz --target fuzz_all     (or the fuzz_* targets one by one)
#
# Each target starts from a temporary copy of its seed corpus tests/data/fuzz/<target>/ (the
# repository is never modified) with -max_total_time=SECONDS -timeout=10 -rss_limit_mb=2048, and
# its artifacts go to a temporary directory. One line per target is printed; on a crash, timeout
# or OOM the reproducer path and the start of the report are printed too, and the script exits 1
# (after running the remaining targets) and keeps the temporary directory (reproducers, logs).
# Set FUZZ_KEEP=1 to keep it in any case (e.g. to harvest new corpus entries). Inputs are capped
# at FUZZ_MAX_LEN bytes (default 8192; longer seeds are replayed whole by the ctest corpus tests). The wall time is bounded: every
# target is killed at SECONDS + 60 s at the latest, and no process is left behind.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-build-fuzz}"
seconds="${2:-30}"
[[ "$build" = /* ]] || build="$here/$build"
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || (( seconds < 1 )); then
  echo "fuzz.sh: SECONDS must be a positive integer, got '$seconds'" >&2
  exit 2
fi
shopt -s nullglob
bins=("$build"/bin/fuzz_*)
if (( ${#bins[@]} == 0 )); then
  echo "fuzz.sh: no fuzz_* binaries in $build/bin: configure with -DLLMLOAD_FUZZ=ON (clang) and build them" >&2
  exit 2
fi

failed=0
work="$(mktemp -d "${TMPDIR:-/tmp}/llmload-fuzz.XXXXXX")"
child=""
# `timeout` makes itself a process-group leader: signalling the group stops the fuzzer with it.
# shellcheck disable=SC2317  # (functions run from traps)
stop_child() {
  [[ -n "$child" ]] || return 0
  kill -TERM -- "-$child" 2>/dev/null || kill -TERM "$child" 2>/dev/null
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    kill -0 -- "-$child" 2>/dev/null || break
    sleep 0.5
  done
  kill -KILL -- "-$child" 2>/dev/null
  wait "$child" 2>/dev/null
  child=""
}
# shellcheck disable=SC2317
cleanup() {
  stop_child
  if [[ "${FUZZ_KEEP:-0}" == 1 || "$failed" != 0 ]]; then
    echo "fuzz.sh: kept $work"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

for bin in "${bins[@]}"; do
  [[ -x "$bin" ]] || continue
  exe="$(basename "$bin")"
  name="${exe#fuzz_}"
  corpus="$work/corpus/$name"
  artifacts="$work/artifacts/$name"
  log="$work/$name.log"
  mkdir -p "$corpus" "$artifacts"
  seeds="$here/tests/data/fuzz/$name"
  [[ -d "$seeds" ]] && cp -R "$seeds/." "$corpus/"
  args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="${FUZZ_MAX_LEN:-8192}" -print_final_stats=1
        -artifact_prefix="$artifacts/")
  [[ -f "$here/tests/fuzz/$name.dict" ]] && args+=(-dict="$here/tests/fuzz/$name.dict")

  # In the background so that a signal to this script reaches the trap at once; `timeout`
  # bounds a fuzzer that would not stop by itself (SIGTERM, then SIGKILL 10 s later).
  timeout --kill-after=10 $((seconds + 60)) "$bin" "${args[@]}" "$corpus" >"$log" 2>&1 &
  child=$!
  wait "$child"
  rc=$?
  child=""

  runs="$(sed -n 's/^stat::number_of_executed_units:[[:space:]]*//p' "$log" | tail -1)"
  speed="$(sed -n 's/^stat::average_exec_per_sec:[[:space:]]*//p' "$log" | tail -1)"
  cov="$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)"
  entries="$(find "$corpus" -type f | wc -l)"
  if (( rc == 0 )); then
    printf '%-24s OK     %4ss  %10s runs  %7s exec/s  cov %-6s corpus %s\n' \
      "$exe" "$seconds" "${runs:-?}" "${speed:-?}" "${cov:-?}" "$entries"
    continue
  fi
  failed=1
  repro="$(find "$artifacts" -type f | head -1)"
  what="failed (exit $rc)"
  case "$(basename "${repro:-none}")" in
    crash-*) what="CRASH" ;;
    timeout-*) what="TIMEOUT (a single input ran > 10 s)" ;;
    oom-*) what="OUT OF MEMORY (> 2048 MB)" ;;
    leak-*) what="LEAK" ;;
    slow-unit-*) what="SLOW INPUT" ;;
  esac
  (( rc == 124 || rc == 137 )) && what="HUNG (killed after $((seconds + 60)) s)"
  printf '%-24s %s  %s runs\n' "$exe" "$what" "${runs:-?}"
  if [[ -n "$repro" ]]; then
    echo "  reproducer: $repro"
    echo "  replay:     $bin $repro"
  fi
  echo "  full log:   $log"
  echo "  report (first lines):"
  grep -m1 -n -E '^==[0-9]+==ERROR|runtime error|FUZZ_CHECK failed|ERROR: libFuzzer|^==[0-9]+== ERROR' "$log" \
    | cut -d: -f1 | { read -r first || first=1; tail -n +"$first" "$log" | head -25 | sed 's/^/    /'; }
done
exit "$failed"
