#!/usr/bin/env bash
# Configures and builds llmload (Release-with-debug-info, Ninja) into build/.
# Usage: scripts/build.sh [extra cmake -D options]
# LLMLOAD_BUILD_TARGETS="llmload llmload-server" builds only those targets (the demo's).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${LLMLOAD_BUILD_DIR:-$here/build}"
jobs="${LLMLOAD_JOBS:-$(nproc)}"
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
targets=()
for t in ${LLMLOAD_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build" -j "$jobs" "${targets[@]}"
