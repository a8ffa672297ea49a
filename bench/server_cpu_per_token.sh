#!/usr/bin/env bash
# CPU cost of llmload-server per streamed token, with thousands of concurrent streams.
#
# Starts llmload-server (engine model, default profile with --max-num-seqs raised so that every
# stream decodes at once), drives it with llmload in closed loop at each concurrency given, and
# reads the server's CPU time (user + system, /proc/PID/stat) before and after each run. Prints
# one line per concurrency: tokens streamed, server CPU seconds, microseconds of server CPU per
# token, and the share of one core the server used. Loopback only; every run is bounded.
#
# Usage: bench/server_cpu_per_token.sh [CONCURRENCY...]   (default: 100 1000 2000)
# Needs a build (scripts/build.sh); LLMLOAD_BUILD_DIR overrides build/.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${LLMLOAD_BUILD_DIR:-$here/build}/bin"
levels=("$@")
[ ${#levels[@]} -gt 0 ] || levels=(100 1000 2000)
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
tick=$(getconf CLK_TCK)
out="$(mktemp -d)"
trap 'kill $server_pid 2>/dev/null || true; wait $server_pid 2>/dev/null || true; rm -rf "$out"' EXIT

"$bin/llmload-server" --port 0 --max-num-seqs 4096 --max-num-batched-tokens 8192 >"$out/server.log" 2>&1 &
server_pid=$!
url=""
for _ in $(seq 1 100); do
  url="$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$out/server.log" | head -1 || true)"
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { cat "$out/server.log"; echo "server did not start" >&2; exit 1; }

cpu_ticks() { awk '{print $14 + $15}' "/proc/$server_pid/stat"; }

printf '%-12s %-10s %-12s %-14s %-10s %-10s\n' concurrency tokens server_cpu_s us_per_token core_share tok_per_s
for c in "${levels[@]}"; do
  n=$((c * 2))
  before=$(cpu_ticks)
  t0=$(date +%s.%N)
  "$bin/llmload" run --base-url "$url" --scenario concurrency --concurrency "$c" --num-requests "$n" \
    --input-tokens 64 --output-tokens 128 --seed 1 --output "$out/run-$c" >/dev/null 2>"$out/run-$c.err" \
    || { cat "$out/run-$c.err"; exit 1; }
  t1=$(date +%s.%N)
  after=$(cpu_ticks)
  tokens=$(python3 -c "import json;print(json.load(open('$out/run-$c/result.json'))['total_output_tokens'])")
  python3 - "$c" "$tokens" "$before" "$after" "$tick" "$t0" "$t1" <<'PY'
import sys
c, tokens, before, after, tick, t0, t1 = sys.argv[1:]
cpu = (int(after) - int(before)) / int(tick)
wall = float(t1) - float(t0)
tokens = int(tokens)
print(f"{c:<12} {tokens:<10} {cpu:<12.2f} {cpu / tokens * 1e6:<14.2f} {cpu / wall:<10.2f} {tokens / wall:<10.0f}")
PY
done
