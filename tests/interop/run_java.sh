#!/usr/bin/env bash
# Interop with HdrHistogram Java (Debian libhdrhistogram-java). Fails, never skips, when Java or
# the jar is missing.
#   run_java.sh <hdr_interop_tool> <work dir> java_reads_ours|ours_reads_java
# java_reads_ours: Java's HistogramLogReader reads our .hlog: same counts, percentiles, min/max
#   and mean as our library; HistogramLogProcessor's .hgrm output agrees with our merge.
# ours_reads_java: we read Java's HistogramLogWriter output and get Java's numbers; our V2
#   encoding of the same values is byte-identical to Java's, and so is the whole .hlog.
set -euo pipefail
tool=$1 work=$2 mode=$3
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
jar=/usr/share/java/hdrhistogram.jar
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v java >/dev/null 2>&1 || fail "java not found: run scripts/setup.sh (installs default-jdk-headless)"
[ -f "$jar" ] || fail "$jar not found: run scripts/setup.sh (installs libhdrhistogram-java)"

rm -rf "$work"
mkdir -p "$work"
cd "$work"
run_java() { java -Duser.timezone=UTC -XX:TieredStopAtLevel=1 -cp "$jar" "$@"; }

"$tool" gen values.txt ours.hlog ours.json
case $mode in
  java_reads_ours)
    run_java "$here/java/Check.java" read-hlog ours.hlog > java.json
    "$tool" compare ours.json java.json
    for tag in ttft -; do
      tag_args=()
      [ "$tag" = - ] || tag_args=(-tag "$tag")
      run_java org.HdrHistogram.HistogramLogProcessor -i ours.hlog -o "processed$tag" "${tag_args[@]}" \
        -outputValueUnitRatio 1
      "$tool" check-hgrm ours.hlog "$tag" "processed$tag.hgrm"
    done
    ;;
  ours_reads_java)
    run_java "$here/java/Check.java" write values.txt java.hlog java-b64.txt > java.json
    "$tool" compare ours.json java.json                 # same values, same numbers
    "$tool" read-hlog java.hlog > ours-of-java.json
    "$tool" compare java.json ours-of-java.json         # we decode what Java wrote
    "$tool" check-b64 values.txt java-b64.txt exact     # byte-identical V2 encoding
    diff ours.hlog java.hlog || fail "our .hlog differs from Java's HistogramLogWriter output"
    echo "our .hlog is byte-identical to Java's"
    ;;
  *) fail "unknown mode $mode" ;;
esac
