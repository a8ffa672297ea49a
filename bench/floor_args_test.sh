#!/usr/bin/env bash
# The floor benches refuse bad arguments with exit 2 and a message naming what is wrong, before
# any connection (so no server is needed): ctest FloorBench.BadArgumentsAreExit2NamingTheFix.
# Usage: bench/floor_args_test.sh FLOOR_BINARY...
set -u
fails=0
check() {  # check BINARY EXPECTED_TEXT ARGS...
  local bin="$1" want="$2"; shift 2
  local err rc
  err="$("$bin" "$@" 2>&1 >/dev/null)"; rc=$?
  if [ "$rc" -ne 2 ] || [[ "$err" != *"$want"* ]]; then
    echo "FAIL: $(basename "$bin") $*: exit $rc, stderr: $err (wanted exit 2 and '$want')"
    fails=$((fails + 1))
  fi
}
for bin in "$@"; do
  check "$bin" "too few arguments" 127.0.0.1 1
  check "$bin" "PORT must be a number from 1 to 65535, not 'abc'" 127.0.0.1 abc 1 1 1
  check "$bin" "PORT must be a number from 1 to 65535, not '70000'" 127.0.0.1 70000 1 1 1
  check "$bin" "CONNECTIONS must be a positive whole number, not '0'" 127.0.0.1 9 0 1 1
  check "$bin" "REQUESTS must be a positive whole number, not 'x'" 127.0.0.1 9 1 x 1
  check "$bin" "OUTPUT_TOKENS must be a positive whole number, not '-3'" 127.0.0.1 9 1 1 -3
  check "$bin" "unknown option '--timestamp'" 127.0.0.1 9 1 1 1 --timestamp
  check "$bin" "--decode takes nlohmann or fast, not 'fastt'" 127.0.0.1 9 1 1 1 --decode fastt
  check "$bin" "--decode takes nlohmann or fast, not ''" 127.0.0.1 9 1 1 1 --decode
done
[ "$fails" -eq 0 ] && echo "all bad arguments refused with exit 2 ($# binaries)"
exit $((fails > 0))
