#!/usr/bin/env bash
# Soak (issue 16): one long run at a moderate rate against llmload-server with faults on, to see
# that nothing is lost and how the client's memory evolves.
#
# llmload-server (fixed model: TTFT 20 ms, ITL 5 ms) answers 2% of generation requests with HTTP
# 500 and resets 1% after their third token. llmload runs `--request-rate RATE --duration DURATION`
# (warmup 0, 64 output tokens) while this script samples the client's resident set (VmRSS of
# /proc/PID/status) every 10 s. At the end it checks the accounting:
#   - every request the schedule released is in requests.jsonl (records == requests.issued), and
#     each ended as completed, failed or canceled by a stop (completed + failed + stopped == issued);
#   - the failures are the injected ones (http_status 500 and incomplete), about 2% and 1%;
#   - the server's own count of successful requests (vllm:request_success_total, read from its
#     /metrics after the run) against the client's completed plus the reset ones (the server
#     counts a request it finished writing; a reset one it also counts as finished).
# and prints RSS at the start, the middle and the end, and its growth per 1,000 requests.
#
# Usage: bench/soak.sh [DURATION] [RATE]      (default: 3600s 20)
# Needs a build (scripts/build.sh); LLMLOAD_BUILD_DIR overrides build/. Loopback only; bounded by
# DURATION (plus a 120 s margin, then SIGTERM).
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=client_bench_lib.sh source-path=SCRIPTDIR
source "$here/client_bench_lib.sh"
duration="${1:-3600s}"
rate="${2:-20}"
seconds="$(python3 -c "import re,sys; m=re.fullmatch(r'(\d+)(s|m|h)', sys.argv[1]); \
print(int(m[1]) * {'s': 1, 'm': 60, 'h': 3600}[m[2]] if m else sys.exit('DURATION: e.g. 3600s, 60m or 1h'))" "$duration")"

start_server --latency-model fixed --ttft 20ms --itl 5ms --fault 0.02:error=500 --fault 0.01:reset@3

"$bin/llmload" run --base-url "$url" --request-rate "$rate" --duration "$duration" --warmup 0 --seed 1 \
  --input-tokens 64 --output-tokens 64 --server-metrics-interval off --quiet --output "$work/soak" \
  >"$work/soak.out" 2>"$work/soak.err" &
client=$!
echo "t_s rss_kb" >"$work/rss.txt"
t=0
limit=$((seconds + 120))
while kill -0 "$client" 2>/dev/null; do
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$client/status" 2>/dev/null || true)
  [ -n "$rss" ] && echo "$t $rss" >>"$work/rss.txt"
  sleep 10
  t=$((t + 10))
  if [ "$t" -ge "$limit" ]; then kill -TERM "$client"; fi
done
wait "$client" || { echo "llmload exited $?:" >&2; tail -20 "$work/soak.err" >&2; }
curl -s "$url/metrics" >"$work/server_metrics.txt"

python3 - "$work" "$rate" "$seconds" <<'PY'
import json, sys
work, rate, seconds = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
r = json.load(open(f"{work}/soak/result.json"))
recs = [json.loads(l) for l in open(f"{work}/soak/requests.jsonl")]
req = r["requests"]
by_class = {}
for x in recs:
    by_class[x["error_class"]] = by_class.get(x["error_class"], 0) + 1
server_ok = 0.0
for line in open(f"{work}/server_metrics.txt"):
    if line.startswith("vllm:request_success_total"):
        server_ok += float(line.split()[-1])
rss = [tuple(map(int, l.split())) for l in open(f"{work}/rss.txt").read().split("\n")[1:] if l.strip()]
issued = req["issued"]
print(f"requests: issued {issued}, records in requests.jsonl {len(recs)}, completed {r['completed']}, "
      f"failed {r['failed']}, stopped early {req.get('stopped_early', 0)}")
print(f"outcomes: {json.dumps(by_class, sort_keys=True)}")
print(f"server: vllm:request_success_total {server_ok:.0f}; client completed + incomplete (reset after "
      f"the 3rd token) {by_class.get('none', 0) + by_class.get('incomplete', 0)}")
ok = len(recs) == issued and r["completed"] + r["failed"] + req.get("stopped_early", 0) == issued
print("accounting:", "every request accounted for" if ok else "MISMATCH")
# While the load runs (the samples before its end), then the peak after it (the results computed
# and written).
during = [x for x in rss if x[0] < seconds]
if len(during) >= 3:
    first, mid, last = during[1], during[len(during) // 2], during[-1]
    per_k = (last[1] - first[1]) / max(1.0, (last[0] - first[0]) * rate / 1000.0)
    print(f"client RSS while the load ran: {first[1] / 1024:.1f} MB at {first[0]} s, {mid[1] / 1024:.1f} MB at "
          f"{mid[0]} s, {last[1] / 1024:.1f} MB at {last[0]} s: {per_k:.0f} KB per 1,000 requests "
          f"({(last[1] - first[1]) / max(1, last[0] - first[0]):.1f} KB/s)")
    # The token-arrival bins fill their bound (4 MiB) in the first 8.7 minutes: the second half
    # shows whether anything else grows with the run.
    per_k_late = (last[1] - mid[1]) / max(1.0, (last[0] - mid[0]) * rate / 1000.0)
    print(f"  second half: {(last[1] - mid[1]) / 1024:+.2f} MB, {per_k_late:.1f} KB per 1,000 requests")
if rss:
    print(f"client RSS at the end (results computed and written): {max(x[1] for x in rss) / 1024:.1f} MB at most; "
          f"samples in {work}/rss.txt")
PY
