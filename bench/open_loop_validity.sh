#!/usr/bin/env bash
# How often ordinary open-loop runs come out VALID (issue 15): llmload's server scenario at each of
# RATES requests/s against llmload-server with its default profile (the engine simulator, on the
# same host as the README's quick start), at normal priority, REPEATS times each. Prints one line
# per run (verdict, reasons, schedule lag p99, requests over 1 ms late, client CPU share) and the
# share of VALID runs. Each run sends --num-requests N (default 300: above the p99 floor of 100,
# with room for a few failures) after a 20-request warmup.
#
# Usage: bench/open_loop_validity.sh [REPEATS] [RATES] [N]   (default: 3 "1 10 25 50 100" 300)
# Needs a build (scripts/build.sh); LLMLOAD_BUILD_DIR overrides build/. Loopback only; bounded
# (each run by its request count and a timeout).
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=client_bench_lib.sh source-path=SCRIPTDIR
source "$here/client_bench_lib.sh"
repeats="${1:-3}"
rates="${2:-1 10 25 50 100}"
n="${3:-300}"

start_server
echo "# open-loop validity: llmload-server default profile, $n requests per run, $(date -u +%FT%TZ), $(nproc) cores"
valid=0
total=0
for rate in $rates; do
  for r in $(seq 1 "$repeats"); do
    out="$work/rate$rate-$r"
    timeout $((n / rate + 120)) "$bin/llmload" run --base-url "$url" --scenario server --request-rate "$rate" \
      --num-requests "$n" --warmup 20 --seed "$r" --quiet --output "$out" >/dev/null 2>&1
    line="$(python3 - "$out/result.json" "$rate" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
v = d["validity"]
codes = ",".join(r["code"] for r in v["reasons"]) or "-"
print(f"rate {sys.argv[2]:>4}/s  {v['verdict']:<8} reasons {codes:<16} lag p99 {d['schedule_lag']['p99_ms']:.3f} ms  "
      f"over 1 ms {100 * d['schedule_lag']['late_fraction']:.1f}%  client cpu {100 * (d['client_cpu']['core_share'] or 0):.0f}%")
PY
)"
    echo "$line"
    total=$((total + 1))
    case "$line" in *" VALID "*) valid=$((valid + 1)) ;; esac
  done
done
echo "VALID: $valid of $total runs"
