#!/usr/bin/env bash
# README command 2: set up a fresh Debian machine, build, and run every test:
#   1. the release build (GCC): unit, integration over loopback, interop with HdrHistogram's
#      Java and JS implementations;
#   2. the same suite under AddressSanitizer + UndefinedBehaviorSanitizer (clang, -O1), with the
#      libFuzzer targets built in the same tree, their seed corpora replayed, and each target
#      fuzzed for a bounded time;
#   3. the multi-threaded code (llmload-server with several io threads; the client's file writer
#      thread) under ThreadSanitizer.
# Knobs: LLMLOAD_SANITIZERS=0 skips 2 and 3; LLMLOAD_FUZZ_SECONDS (default 8) per fuzz target.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="${LLMLOAD_JOBS:-$(nproc)}"
test_jobs="${LLMLOAD_TEST_JOBS:-2}"
fuzz_seconds="${LLMLOAD_FUZZ_SECONDS:-8}"
stamp() { printf '\n=== [%s] %s\n' "$(date +%H:%M:%S)" "$*"; }
log="$(mktemp)"
# Totals over every stage, printed as the closing line.
summary() {
  local n
  n=$(grep -hoE '(tests passed, 0 tests failed out of [0-9]+|^\[  PASSED  \] [0-9]+ tests?)' "$log" | sed -E 's/.*(out of |\] )([0-9]+).*/\2/' | awk '{s += $1} END {print s + 0}')
  echo "test.sh: ${n:-0} passed, 0 failed"
}

stamp "set-up"
"$here/scripts/setup.sh"

stamp "release build (gcc)"
# Line tables only (-g1, as in the sanitizer builds): the same -O2 code in less compile time than
# full -g; sources compiled in batches (unity build), every stage: a cold build in about half the
# time (docs/testing.md, "Build time"). build.sh alone keeps CMake's -g and one file per unit.
"$here/scripts/build.sh" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" -DLLMLOAD_BUILD_TESTS=ON -DLLMLOAD_BUILD_BENCH=ON \
  -DLLMLOAD_UNITY_BUILD=ON
build="${LLMLOAD_BUILD_DIR:-$here/build}"
sanitizers="${LLMLOAD_SANITIZERS:-1}"
san_flags=(-G Ninja -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" -DLLMLOAD_ENABLE_CUDA=OFF
           -DLLMLOAD_BUILD_BENCH=OFF -DLLMLOAD_UNITY_BUILD=ON)
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

# The sanitizer builds compile in the background, at the idle CPU priority (SCHED_IDLE: it runs
# only on CPU time no other process wants), while the tests before them run: the tests mostly wait
# on sockets and timers (under one of the two cores), and a waking test preempts the compile at
# once (docs/testing.md, "Build time"). Each build is its own process group, stopped with the script.
bg_pids=()
bg_logs=()
idle="nice -n 19"
if chrt --idle 0 true 2>/dev/null; then idle="chrt --idle 0 nice -n 19"; fi
cleanup() {
  for p in "${bg_pids[@]}"; do kill -- "-$p" 2>/dev/null || true; done
  rm -f "$log" "${bg_logs[@]}"
}
trap cleanup EXIT
# background_build NAME CMAKE-CONFIGURE-ARGS... -- BUILD-ARGS...: starts it; its pid is ${bg_pids[-1]}.
background_build() {
  local name="$1" out
  shift
  local conf=() bld=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do conf+=("$1"); shift; done
  shift
  bld=("$@")
  out="$(mktemp)"
  bg_logs+=("$out")
  idle="$idle" setsid bash -c 'CC=clang CXX=clang++ cmake "${@:2:$1}" >/dev/null && $idle cmake --build "${@:$(($1 + 2))}"' \
    _ "${#conf[@]}" "${conf[@]}" "${bld[@]}" >"$out" 2>&1 &
  bg_pids+=($!)
  echo "test.sh: $name: building in the background (log: $out)"
}
# wait_build INDEX NAME: waits for background build INDEX; on failure prints its log and stops.
wait_build() {
  if ! wait "${bg_pids[$1]}"; then
    cat "${bg_logs[$1]}"
    echo "test.sh: the $2 build failed" >&2
    exit 1
  fi
  tail -n 2 "${bg_logs[$1]}"
}

if [ "$sanitizers" != "0" ]; then
  stamp "ASan+UBSan build with fuzz targets (clang), in the background"
  background_build "ASan+UBSan" -S "$here" -B "$here/build-asan" "${san_flags[@]}" -DLLMLOAD_SANITIZE=address,undefined \
    -DLLMLOAD_FUZZ=ON -- "$here/build-asan" -j "$jobs"
fi

stamp "tests: release build"
ctest --test-dir "$build" --output-on-failure -j "$test_jobs" --timeout 600 | tee -a "$log"

if [ "$sanitizers" = "0" ]; then
  echo "test.sh: sanitizer and fuzzing stages skipped (LLMLOAD_SANITIZERS=0)"
  summary
  exit 0
fi

stamp "ASan+UBSan build: waiting for it to finish"
wait_build 0 "ASan+UBSan"
stamp "TSan build of the multi-threaded server (clang), in the background"
background_build "TSan" -S "$here" -B "$here/build-tsan" "${san_flags[@]}" -DLLMLOAD_SANITIZE=thread -- \
  "$here/build-tsan" -j "$jobs" --target llmload-server llmload_server_integration_tests llmload_engine_unit_tests \
  llmload_server_metrics_tests llmload_appender_tests
stamp "tests: ASan+UBSan (including fuzz corpus replays)"
# Release stage only: the documented examples (Examples.*: minutes of load, no code of their own)
# and the long statistical tests, which re-run for minutes the code shorter tests cover here
# (capacity searches on two profiles, a scaling sweep, every row of the Mooncake sample).
asan_skip='^(Examples\.|Capacity\.TinyProfile$|Capacity\.FixedModelWithEightSlots$'
asan_skip+='|scaling\.integration\.Scaling\.SweepsScaleByTheirCapacityPoint$|MooncakeSample\.EveryRowWithItsLengthsAndArrival$'
# ... and the run out of file descriptors: the sanitizer runtime itself needs one (its memory
# checks open a pipe), so with none left UBSan reports false errors in any code.
asan_skip+='|Faults\.RunningOutOfDescriptorsNamesTheClientsLimit$)'
ctest --test-dir "$here/build-asan" --output-on-failure -j "$test_jobs" --timeout 900 -E "$asan_skip" | tee -a "$log"

stamp "fuzzing: ${fuzz_seconds}s per target"
"$here/scripts/fuzz.sh" "$here/build-asan" "$fuzz_seconds"

stamp "TSan build: waiting for it to finish"
wait_build 1 "TSan"
stamp "tests: TSan (server, engine thread, metrics registry, the client's file writer)"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1${LLMLOAD_TSAN_SUPPRESSIONS:+:suppressions=$LLMLOAD_TSAN_SUPPRESSIONS}"
"$here/build-tsan/bin/llmload_server_integration_tests" | tee -a "$log"
"$here/build-tsan/bin/llmload_engine_unit_tests" | tee -a "$log"
"$here/build-tsan/bin/llmload_server_metrics_tests" | tee -a "$log"
"$here/build-tsan/bin/llmload_appender_tests" | tee -a "$log"
stamp "all stages passed"
summary
