#!/usr/bin/env bash
# Finds tests that only pass on a quiet machine: runs COMMAND and, while it runs, stops one of
# its llmload or llmload-server processes at random for STALL_MS, then lets it go on, every
# GAP_MS, for at most SECONDS (docs/testing.md, "Tests on a stalled machine"). CI's machine
# stalls like this now and then (a 25 ms pause of the client failed a capacity check; a stalled
# server sent a request's reasoning and its answer at once). Only COMMAND's own processes are
# stopped, never another llmload of yours; a stopped one is let go on whatever ends the script,
# except SIGKILL. Exits with COMMAND's status.
#
#   scripts/stall_processes.sh STALL_MS GAP_MS SECONDS -- COMMAND [ARGS...]
#   e.g. scripts/stall_processes.sh 30 200 1500 -- ctest --test-dir build -j2 --output-on-failure
set -euo pipefail
usage() {
  echo "usage: $0 STALL_MS GAP_MS SECONDS -- COMMAND [ARGS...]: STALL_MS 1-5000, GAP_MS and SECONDS" \
    "positive whole numbers (e.g. $0 30 200 1500 -- ctest --test-dir build -j2)" >&2
  exit 2
}
[ $# -ge 5 ] && [ "$4" = "--" ] || usage
stall_ms="$1"
gap_ms="$2"
limit_s="$3"
shift 4
for v in "$stall_ms" "$gap_ms" "$limit_s"; do
  [[ "$v" =~ ^[1-9][0-9]{0,6}$ ]] || usage
done
[ "$stall_ms" -le 5000 ] || usage
stall=$(awk -v ms="$stall_ms" 'BEGIN { print ms / 1000 }')
gap=$(awk -v ms="$gap_ms" 'BEGIN { print ms / 1000 }')

"$@" &
root=$!
stopped=""
let_go() { if [ -n "$stopped" ]; then kill -CONT "$stopped" 2>/dev/null || true; fi; }
trap 'let_go; kill -TERM "$root" 2>/dev/null || true; exit 130' INT TERM
trap let_go EXIT

# descends PID: whether PID's chain of parents reaches COMMAND's process.
descends() {
  local p="$1" stat
  while [ -n "$p" ] && [ "$p" -gt 1 ]; do
    [ "$p" = "$root" ] && return 0
    stat="$(cat "/proc/$p/stat" 2>/dev/null)" || return 1
    stat="${stat##*) }"  # past "pid (comm) ": the state, then the parent's pid
    p="$(echo "$stat" | cut -d' ' -f2)"
  done
  return 1
}

end=$(($(date +%s) + limit_s))
stalls=0
while kill -0 "$root" 2>/dev/null && [ "$(date +%s)" -lt "$end" ]; do
  # (pgrep -x matches the 15-character process name: llmload-server fits, a pattern with | does not)
  mine=()
  for p in $(pgrep -x llmload-server || true) $(pgrep -x llmload || true); do
    if descends "$p"; then mine+=("$p"); fi
  done
  if [ ${#mine[@]} -gt 0 ]; then
    stopped="${mine[$((RANDOM % ${#mine[@]}))]}"
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
status=0
wait "$root" || status=$?
exit "$status"
