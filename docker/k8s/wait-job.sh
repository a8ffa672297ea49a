#!/usr/bin/env bash
# Waits for a Kubernetes Job of docker/k8s to finish, either way, and exits with what happened:
# `kubectl wait --for=condition=complete` alone would block until its timeout when the Job fails.
#
#   docker/k8s/wait-job.sh JOB [TIMEOUT_SECONDS]      (default 3600; needs kubectl)
#
# Polls the Job's conditions every 5 s (LLMLOAD_WAIT_INTERVAL) until Complete or Failed is True,
# then prints the Job's logs (llmload's report; rank/shard 0 for an Indexed Job: use
# `kubectl logs job/JOB` or the pods for the others) and exits:
#   0      the Job completed (llmload exited 0 in every pod);
#   N      the Job failed: N is the exit code of the first llmload container that exited non-zero
#          (docs/artifact.md: 1 writing failed, 2 bad configuration or unreachable endpoint,
#          3/4/5 --fail-on-slo, 6 no measured request succeeded, 130 interrupted); 1 when no
#          container exit code is recorded (deadline exceeded, pod deleted). The Job's reason and
#          message are printed;
#   124    TIMEOUT_SECONDS passed with the Job still running;
#   2      bad arguments, or the Job does not exist.
# The namespace and context are kubectl's (KUBECONFIG, `kubectl config set-context --current
# --namespace ...`).
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ] || [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  [ $# -ge 1 ] && { [ "$1" = "-h" ] || [ "$1" = "--help" ]; } && exit 0
  exit 2
fi
job="$1"
timeout="${2:-3600}"
interval="${LLMLOAD_WAIT_INTERVAL:-5}"
case "$timeout" in ''|*[!0-9]*) echo "wait-job.sh: bad TIMEOUT_SECONDS '$timeout': give whole seconds, e.g. 1800" >&2; exit 2 ;; esac
command -v kubectl >/dev/null 2>&1 || { echo "wait-job.sh: kubectl not found on PATH" >&2; exit 2; }

if ! kubectl get job "$job" -o name >/dev/null 2>&1; then
  echo "wait-job.sh: job/$job not found (kubectl get job $job); is the name (with its run id) and namespace right?" >&2
  exit 2
fi

deadline=$(( $(date +%s) + timeout ))
state=""
while :; do
  # The types of the Job's conditions that are True, e.g. "Complete" or "FailureTarget Failed".
  state="$(kubectl get job "$job" -o 'jsonpath={.status.conditions[?(@.status=="True")].type}' 2>/dev/null || true)"
  case " $state " in
    *" Complete "*|*" Failed "*) break ;;
  esac
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "wait-job.sh: job/$job still running after ${timeout} s" >&2
    exit 124
  fi
  sleep "$interval"
done

kubectl logs "job/$job" --tail=-1 2>/dev/null || echo "wait-job.sh: no logs for job/$job (pods deleted?)" >&2

case " $state " in
  *" Complete "*)
    echo "wait-job.sh: job/$job complete" >&2
    exit 0
    ;;
esac
reason="$(kubectl get job "$job" -o 'jsonpath={.status.conditions[?(@.type=="Failed")].reason}' 2>/dev/null || true)"
message="$(kubectl get job "$job" -o 'jsonpath={.status.conditions[?(@.type=="Failed")].message}' 2>/dev/null || true)"
# The exit codes of the llmload containers that terminated with one other than 0.
codes="$(kubectl get pods -l "job-name=$job" \
  -o 'jsonpath={range .items[*]}{.status.containerStatuses[?(@.name=="llmload")].state.terminated.exitCode}{" "}{end}' \
  2>/dev/null || true)"
code=1
for c in $codes; do
  if [ "$c" != 0 ]; then code="$c"; break; fi
done
echo "wait-job.sh: job/$job failed (${reason:-no reason given}${message:+: $message}); llmload exit code ${code}" >&2
exit "$code"
