#!/usr/bin/env bash
# README command 2: set up a fresh Debian machine, build, and run every test (unit, integration
# over loopback, interoperability with HdrHistogram's Java and JS implementations).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$here/scripts/setup.sh"
"$here/scripts/build.sh"
build="${LLMLOAD_BUILD_DIR:-$here/build}"
ctest --test-dir "$build" --output-on-failure -j "${LLMLOAD_TEST_JOBS:-2}" --timeout 600
