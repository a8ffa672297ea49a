#!/usr/bin/env bash
# Finds tests that only pass on a quiet machine: while the suite runs, stops one llmload or
# llmload-server process at random for STALL_MS, then lets it go on, every GAP_MS, for at most
# SECONDS (docs/testing.md, "Tests on a stalled machine"). CI's machine stalls like this now and
# then (a 25 ms pause of the client failed a capacity check; a stalled server sent a request's
# reasoning and its answer at once).
#
#   scripts/stall_processes.sh [STALL_MS] [GAP_MS] [SECONDS]     (defaults 40 150 1200)
#   e.g. scripts/stall_processes.sh & (cd build && ctest -j2); kill %1
set -euo pipefail
usage() {
  echo "usage: $0 [STALL_MS] [GAP_MS] [SECONDS]: positive whole numbers (defaults 40 150 1200)" >&2
  exit 2
}
stall_ms="${1:-40}"
gap_ms="${2:-150}"
limit_s="${3:-1200}"
for v in "$stall_ms" "$gap_ms" "$limit_s"; do
  [[ "$v" =~ ^[1-9][0-9]*$ ]] || usage
done
[ $# -le 3 ] || usage
stall=$(awk -v ms="$stall_ms" 'BEGIN { print ms / 1000 }')
gap=$(awk -v ms="$gap_ms" 'BEGIN { print ms / 1000 }')
stopped=""
# Never leave a process stopped: whatever ends this script lets the stopped one go on.
trap '[ -n "$stopped" ] && kill -CONT "$stopped" 2>/dev/null; exit 0' TERM INT EXIT
end=$(($(date +%s) + limit_s))
stalls=0
while [ "$(date +%s)" -lt "$end" ]; do
  # (pgrep -x matches the 15-character process name: llmload-server fits, a pattern with | does not)
  mapfile -t pids < <(pgrep -u "$(id -u)" -x llmload-server || true; pgrep -u "$(id -u)" -x llmload || true)
  if [ ${#pids[@]} -gt 0 ]; then
    stopped="${pids[$((RANDOM % ${#pids[@]}))]}"
    if kill -STOP "$stopped" 2>/dev/null; then
      sleep "$stall"
      kill -CONT "$stopped" 2>/dev/null || true
      stalls=$((stalls + 1))
    fi
    stopped=""
  fi
  sleep "$gap"
done
echo "stall_processes: $stalls stalls of $stall_ms ms" >&2
