#!/usr/bin/env bash
# scripts/stall_processes.sh: bad arguments are exit 2 with the usage; it stalls its command's
# llmload-server and not one it did not start; it exits with the command's status.
#   tests/stall_processes_test.sh LLMLOAD_SERVER
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
script="$here/scripts/stall_processes.sh"
server="${1:?usage: $0 LLMLOAD_SERVER}"
fail=0
check() { if ! eval "$2"; then echo "FAILED: $1" >&2; fail=1; fi; }

for args in "" "x 1 1 -- true" "0 1 1 -- true" "6000 1 1 -- true" "10 10 1 true" "10 10 1 --" "10 -5 1 -- true"; do
  # shellcheck disable=SC2086
  err="$("$script" $args 2>&1 >/dev/null)"
  rc=$?
  check "'$args' is exit 2 (got $rc)" '[ "$rc" = 2 ]'
  check "'$args' prints the usage" '[[ "$err" == *"usage:"* ]]'
done

# One llmload-server outside the command (must never be stopped) and one inside it.
"$server" --host 127.0.0.1 --port 0 >/dev/null 2>&1 &
outside=$!
trap 'kill "$outside" 2>/dev/null' EXIT
inside_cmd="\"$server\" --host 127.0.0.1 --port 0 >/dev/null 2>&1 & s=\$!; sleep 2; kill \$s; wait \$s; exit 3"
err="$("$script" 20 20 10 -- bash -c "$inside_cmd" 2>&1 >/dev/null)" &
watcher=$!
# While it runs, the outside server's state is never T (stopped).
seen_stopped=0
for _ in $(seq 1 100); do
  state="$(cut -d' ' -f3 "/proc/$outside/stat" 2>/dev/null)"
  [ "$state" = T ] && seen_stopped=1
  sleep 0.02
done
wait "$watcher"
check "the outside server was never stopped" '[ "$seen_stopped" = 0 ]'
err="$("$script" 20 20 10 -- bash -c "$inside_cmd" 2>&1 >/dev/null)"
rc=$?
check "the command's status is the script's (3, got $rc)" '[ "$rc" = 3 ]'
n="$(echo "$err" | sed -n 's/^stall_processes: \([0-9]*\) stalls.*/\1/p')"
check "the command's own server was stalled ($err)" '[ -n "$n" ] && [ "$n" -gt 0 ]'
exit "$fail"
