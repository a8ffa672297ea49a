#!/usr/bin/env bash
# The checks that need a machine this project's CI does not have: a CUDA GPU and many cores.
# Prints what it measures (and keeps the details in OUT):
#   facts    the machine: cores, CPU model, GPU, driver, kernel
#   gpu      llmload_gpu_unit_tests (the OnGpu tests run and print their figures), then
#            llmload-gpu-bench (docs/gpu.md) into OUT/gpu-bench.json and its table, then the same
#            engine load against llmload-server --device cpu (the roofline) and --device cuda (steps
#            timed by kernels of their size on the GPU): TTFT, TPOT and throughput of each
#   workers  bench/workers_scaling.sh with the cores split between the server and the client:
#            short requests (8 tokens; half the cores each) at 1, 2, 4, N/2 workers and auto, and
#            long outputs (256 tokens; the server, which costs more per token, gets 3/4) at 1, 2, 4
#   python   bench/client_vs_python.sh 3 (llmload against the Python stand-in, same minutes)
#
# Usage: bench/gpu_and_cores.sh [OUT] [PARTS]   (default /tmp/gpu-and-cores, "facts gpu workers python")
# Needs a build with CUDA (nvcc found at configure time; LLMLOAD_BUILD_DIR overrides build/), python3
# and taskset. Loopback only; every run is bounded by its request count and a time limit.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${LLMLOAD_BUILD_DIR:-$here/build}"
B="$build/bin"
out="${1:-/tmp/gpu-and-cores}"
parts="${2:-facts gpu workers python}"
mkdir -p "$out"
has() { case " $parts " in *" $1 "*) return 0 ;; esac; return 1; }
cores=$(nproc)
ulimit -n "$(ulimit -Hn)" 2> /dev/null || true

wait_ready() { python3 "$here/bench/wait_ready.py" "$1"; }  # PORT: until the server answers (10 s at most)

if has facts; then
  echo "## machine, $(date -u +%FT%TZ)"
  echo "cores: $cores ($(nproc --all) online); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "kernel: $(uname -r); python3: $(python3 --version 2>&1); taskset: $(command -v taskset || echo missing)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2> /dev/null ||
    echo "nvidia-smi: not available"
fi

if has gpu; then
  echo "## llmload_gpu_unit_tests"
  "$B/llmload_gpu_unit_tests" --gtest_color=no > "$out/gpu_unit_tests.txt" 2>&1
  echo "exit $?; $(grep -cE '^\[       OK \]' "$out/gpu_unit_tests.txt") OK, $(grep -c 'SKIPPED \]' "$out/gpu_unit_tests.txt") skipped"
  grep -vE '^\[ *(RUN|OK) *\]|^$' "$out/gpu_unit_tests.txt" | grep -iE 'GB/s|TFLOP|flop|bytes|ms|FAIL|skip|passed' | head -40

  echo "## llmload-gpu-bench"
  timeout 300 "$B/llmload-gpu-bench" > "$out/gpu-bench.json" 2> "$out/gpu-bench.err"
  echo "exit $?"
  python3 - "$out/gpu-bench.json" << 'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print("no JSON:", e); sys.exit(0)
print(json.dumps({k: v for k, v in r.items() if k not in ("roofline",)}, indent=1)[:3000])
steps = r.get("roofline", {}).get("steps", [])
if steps:
    keys = list(steps[0].keys())
    print("roofline step keys:", keys)
    for s in steps:
        print(json.dumps(s))
PY

  port=18990
  common=(--endpoint chat --scenario concurrency --concurrency 32 --num-requests 128 --input-tokens 512
          --output-tokens 128 --seed 1 --quiet)
  for dev in cpu cuda; do
    echo "## llmload-server --device $dev (profile llama-3-8b-h100), llmload run ${common[*]}"
    "$B/llmload-server" --port "$port" --device "$dev" > "$out/server-$dev.log" 2>&1 &
    spid=$!
    if wait_ready "$port"; then
      rm -rf "$out/engine-$dev"  # a run of this script before
      timeout 300 "$B/llmload" run --base-url "http://127.0.0.1:$port" "${common[@]}" --output "$out/engine-$dev" \
        > "$out/engine-$dev.txt" 2>&1
      echo "llmload exit $?"
      python3 - "$out/engine-$dev/result.json" << 'PY'
import json, sys
r = json.load(open(sys.argv[1])); L = r["latency"]
for m in ("ttft", "tpot", "itl", "e2e"):
    print("%-5s p50 %9.2f ms  p90 %9.2f  p99 %9.2f  mean %9.2f" % (m, L[m]["p50_ms"], L[m]["p90_ms"], L[m]["p99_ms"], L[m]["mean_ms"]))
print("output tok/s %.0f, req/s %.2f, validity %s" % (r["output_throughput"], r["request_throughput"], r["validity"]["verdict"]))
PY
    else
      echo "server did not start:"; tail -5 "$out/server-$dev.log"
    fi
    kill "$spid" 2> /dev/null; wait "$spid" 2> /dev/null
    grep -iE 'cuda|gpu|device|step' "$out/server-$dev.log" | head -5
  done
fi

if has workers && [ "$cores" -lt 8 ]; then
  echo "## workers: skipped, $cores cores (the split between server and client needs 8 or more)"
elif has workers; then
  half=$((cores / 2)); quarter=$((cores / 4))
  echo "## workers, short requests: server on cores 0-$((half - 1)) (--threads $half), client on $half-$((cores - 1))"
  SERVER_CORE="0-$((half - 1))" SERVER_THREADS=$half CLIENT_CORES="$half-$((cores - 1))" REQUESTS=400000 \
    CONCURRENCY=256 OUTPUT_TOKENS=8 PORT=18991 bash "$here/bench/workers_scaling.sh" /tmp/gc-ws-short "1 2 4 $half auto"
  echo "## workers, long outputs: server on cores 0-$((cores - quarter - 1)) (--threads $((cores - quarter))), client on $((cores - quarter))-$((cores - 1))"
  SERVER_CORE="0-$((cores - quarter - 1))" SERVER_THREADS=$((cores - quarter)) \
    CLIENT_CORES="$((cores - quarter))-$((cores - 1))" REQUESTS=12000 CONCURRENCY=64 OUTPUT_TOKENS=256 PORT=18992 \
    bash "$here/bench/workers_scaling.sh" /tmp/gc-ws-long "1 2 $quarter"
fi

if has python; then
  echo "## llmload against the Python stand-in"
  bash "$here/bench/client_vs_python.sh" 3
fi
