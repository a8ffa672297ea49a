#!/usr/bin/env bash
# Issue 15's check of the capacity search, as a user runs it: the README's command
#   llmload sweep --base-url URL --find-capacity --slo ttft:500ms,tpot:50ms --duration 60s --output DIR
# against llmload-server with its default profile, --profile tiny and --latency-model fixed
# --max-num-seqs 8, then a 60 s run at 80% and one at 150% of each answer with the same SLO (the
# first must PASS, the second FAIL). Prints a summary (OUT/summary.txt); every artifact stays in OUT.
#
# Usage: bench/capacity_check.sh [OUT] [PROFILES]   (default: /tmp/capcheck "default tiny fixed8")
# Needs a build (scripts/build.sh); LLMLOAD_BUILD_DIR overrides build/. Loopback only. Long: about
# 20 minutes for the default profile, 10 for tiny, more for the fixed model (6 req/s probes).
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
B="${LLMLOAD_BUILD_DIR:-$here/build}/bin"
out="${1:-/tmp/capcheck}"
profiles="${2:-default tiny fixed8}"
rm -rf "$out"; mkdir -p "$out"
port=18700
for prof in $profiles; do
  case $prof in
    default) args=() ;;
    tiny) args=(--profile tiny) ;;
    fixed8) args=(--latency-model fixed --max-num-seqs 8) ;;
  esac
  port=$((port+1))
  $B/llmload-server --port $port "${args[@]}" > "$out"/$prof.server.log 2>&1 &
  spid=$!
  sleep 1
  u=http://127.0.0.1:$port
  start=$(date +%s)
  $B/llmload sweep --base-url $u --find-capacity --slo ttft:500ms,tpot:50ms --duration 60s --output "$out"/$prof-cap > "$out"/$prof.sweep.out 2> "$out"/$prof.sweep.err
  echo "$prof sweep exit $? in $(( $(date +%s) - start )) s" >> "$out"/summary.txt
  grep -A4 "^Capacity at" "$out"/$prof.sweep.out >> "$out"/summary.txt
  cap=$(python3 -c "import json; c=json.load(open('"$out"/$prof-cap/sweep.json'))['capacity']; print(c['highest_pass'] if c.get('highest_pass') else '')")
  if [ -n "$cap" ]; then
    for f in 0.8 1.5; do
      r=$(python3 -c "print(round($cap*$f, 3))")
      $B/llmload run --base-url $u --request-rate $r --duration 60s --slo ttft:500ms,tpot:50ms --quiet --output "$out"/$prof-run-$f > "$out"/$prof-run-$f.out 2>&1
      python3 -c "
import json; r=json.load(open('"$out"/$prof-run-$f/result.json'))
print('$prof at $f x $cap = $r req/s: SLO', r['slo']['verdict'], 'validity', r['validity']['verdict'], 'p99 TTFT %.1f ms p99 TPOT %.2f ms' % (r['p99_ttft_ms'], r['p99_tpot_ms']), 'throughput %.2f' % r['request_throughput'])" >> "$out"/summary.txt
      # At a few requests/s, 60 s holds fewer requests than a p99 PASS needs (459 with none over
      # the bound): INCONCLUSIVE is then the honest answer. The same run without a size runs
      # until the verdict is conclusive (sequential early stopping, docs/statistics.md).
      if python3 -c "import json,sys; sys.exit(0 if json.load(open('"$out"/$prof-run-$f/result.json'))['slo']['verdict'] == 'INCONCLUSIVE' else 1)"; then
        $B/llmload run --base-url $u --request-rate $r --slo ttft:500ms,tpot:50ms --quiet --output "$out"/$prof-run-$f-seq > "$out"/$prof-run-$f-seq.out 2>&1
        python3 -c "
import json; r=json.load(open('"$out"/$prof-run-$f-seq/result.json'))
print('  the same without --duration (until conclusive): %d requests, SLO' % r['completed'], r['slo']['verdict'], 'validity', r['validity']['verdict'], 'p99 TTFT %.1f ms' % r['p99_ttft_ms'])" >> "$out"/summary.txt
      fi
    done
  fi
  kill $spid; wait $spid 2>/dev/null
done
echo done >> "$out"/summary.txt
