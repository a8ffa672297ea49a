#!/usr/bin/env bash
# Interop with hdr-histogram-js (npm, installed into tests/interop/js by scripts/setup.sh).
# Fails, never skips, when node or the module is missing.
#   run_js.sh <hdr_interop_tool> <work dir> js_reads_ours|ours_reads_js
# js_reads_ours: its HistogramLogReader reads our .hlog and gets our numbers.
# ours_reads_js: we read its HistogramLogWriter output / encodeIntoCompressedBase64 strings
#   (normalizingIndexOffset 1, ratio bits 1, zlib 78 9C) and get its numbers and counts. Its
#   encoder is not byte-compatible with Java's, so only decoded equality is asserted.
set -euo pipefail
tool=$1 work=$2 mode=$3
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v node >/dev/null 2>&1 || fail "node not found: run scripts/setup.sh (installs nodejs and npm)"
[ -f "$here/js/node_modules/hdr-histogram-js/package.json" ] ||
  fail "hdr-histogram-js is not installed in tests/interop/js: run scripts/setup.sh (runs npm ci there)"

rm -rf "$work"
mkdir -p "$work"
cd "$work"

"$tool" gen values.txt ours.hlog ours.json
case $mode in
  js_reads_ours)
    node "$here/js/check.js" read-hlog ours.hlog > js.json
    "$tool" compare ours.json js.json
    ;;
  ours_reads_js)
    node "$here/js/check.js" write values.txt js.hlog js-b64.txt > js.json
    "$tool" compare ours.json js.json                   # same values, same numbers
    "$tool" read-hlog js.hlog > ours-of-js.json
    "$tool" compare js.json ours-of-js.json             # we decode what it wrote
    "$tool" check-b64 values.txt js-b64.txt decoded
    ;;
  *) fail "unknown mode $mode" ;;
esac
