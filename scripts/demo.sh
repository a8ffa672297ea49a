#!/usr/bin/env bash
# README command 1: set up a fresh Debian machine, build, start the bundled llmload-server on a
# free loopback port, run the demo scenario against it and print the report.
# Results are written to out/demo/ (result.json, requests.jsonl, latency.hlog).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Only what the two programs need: the test command (scripts/test.sh) installs and builds the rest.
"$here/scripts/setup.sh" --demo
LLMLOAD_BUILD_TARGETS="llmload llmload-server" "$here/scripts/build.sh" -DLLMLOAD_BUILD_TESTS=OFF -DLLMLOAD_BUILD_BENCH=OFF \
  -DLLMLOAD_UNITY_BUILD=ON
bin="${LLMLOAD_BUILD_DIR:-$here/build}/bin"

log="$(mktemp)"
# The engine simulator with the default profile (a Llama-3-8B-class model on one H100).
"$bin/llmload-server" --host 127.0.0.1 --port 0 --profile llama-3-8b-h100 >"$log" 2>&1 &
server_pid=$!
trap 'kill $server_pid 2>/dev/null || true; wait $server_pid 2>/dev/null || true; rm -f "$log"' EXIT
url=""
for _ in $(seq 1 100); do
  url="$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$log" | head -1 || true)"
  [ -n "$url" ] && break
  kill -0 $server_pid 2>/dev/null || { cat "$log"; echo "demo: llmload-server failed to start" >&2; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { echo "demo: llmload-server did not report its address" >&2; exit 1; }
echo "demo: llmload-server listening on $url"

# out/demo is the demo's own directory: each demo run replaces the last one's results.
"$bin/llmload" run --scenario-file "$here/scenarios/demo.yaml" --base-url "$url" --output "$here/out/demo" --overwrite "$@"
