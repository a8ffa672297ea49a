#!/usr/bin/env bash
# Builds the CPU container images of docker/ for real and runs the demo inside them; a separate
# check, not part of CI (it takes many minutes: a debootstrap, then compiling both programs in
# the build stages). What it printed when last run is recorded in docs/deploy.md.
#
#   scripts/images.sh [--rebuild-base] [--no-cache] [--keep]
#
# 1. The Debian base: `debootstrap --variant=minbase bookworm` from a reachable Debian mirror,
#    imported with `podman import` as debian:bookworm (the build stages' FROM) and, with
#    documentation, man pages and locales left out as Docker's slim images do, as
#    debian:bookworm-slim (the runtime stages' FROM). Skipped when both images exist already
#    (--rebuild-base forces it). No container registry is used: every build runs with --pull=never.
# 2. `buildah bud --isolation chroot --network host --pull=never --layers` of
#    docker/llmload.Dockerfile (llmload:latest) and docker/llmload-server.Dockerfile
#    (llmload-server:cpu). --no-cache rebuilds every layer.
# 3. Checks of each image's configuration: the entrypoint is the program, it runs as the non-root
#    user 10001, llmload declares the /results volume, the binaries start (--version).
# 4. The demo inside the images, with `buildah run --isolation chroot` (this machine has no Docker
#    engine, and `podman run` fails on rlimits): llmload-server from llmload-server:cpu on a free
#    loopback port (checked to run as uid 10001), then llmload from llmload:latest running
#    scenarios/demo.yaml against it with the host directory out/images/results bind-mounted at
#    /results. Checked: llmload exits 0; result.json, requests.jsonl and latency.hlog land in the
#    host directory, written by uid 10001; result.json counts 600 completed requests and none
#    failed (its validity verdict is printed). Then a short run configured by the environment
#    (LLMLOAD_BASE_URL, and LLMLOAD_OUTPUT_DEFAULT=/results set by the image), one whose scenario
#    file's output key must win over the image's default, and the exit codes a job runner acts on, passed through the
#    container: 2 for an unreachable endpoint, 6 when the server fails every request (the
#    X-Llmload-Fault header), 3 for an SLO missed with --fail-on-slo; the last two with their
#    result.json written.
#
# Needs root (or sudo) for debootstrap and the image store; installs buildah, podman and
# debootstrap from Debian's packages when they are missing. Environment: LLMLOAD_DEBIAN_MIRROR
# (default: the first of http://deb.debian.org/debian and the machine's own apt sources that
# answers), LLMLOAD_IMAGES_WORK (default out/images), LLMLOAD_JOBS (compile jobs in the build stage).
# Exit status 0 when every check passed, 1 otherwise.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"

rebuild_base=0
no_cache=()
keep=0
for arg in "$@"; do
  case "$arg" in
    --rebuild-base) rebuild_base=1 ;;
    --no-cache) no_cache=(--no-cache) ;;
    --keep) keep=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "images.sh: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done

work="${LLMLOAD_IMAGES_WORK:-$here/out/images}"
jobs="${LLMLOAD_JOBS:-$(nproc)}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
t_start=$(date +%s)
stamp() { printf '\n=== [%s +%ss] %s\n' "$(date +%H:%M:%S)" "$(( $(date +%s) - t_start ))" "$*"; }
failures=0
check() {  # check DESCRIPTION COMMAND...: runs the command, prints PASS or FAIL with the description
  local what="$1"
  shift
  if "$@"; then echo "PASS  $what"; else echo "FAIL  $what"; failures=$((failures + 1)); fi
}

# --- tools ------------------------------------------------------------------------------------
missing=()
for tool in buildah podman debootstrap python3; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
  stamp "installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
buildah=(buildah)
podman=(podman)
if [ -n "$SUDO" ]; then buildah=(sudo buildah); podman=(sudo podman); fi
echo "images.sh: $(buildah --version), $(podman --version), debootstrap $(dpkg-query -W -f='${Version}' debootstrap 2>/dev/null || echo '?')"

image_exists() { "${buildah[@]}" inspect --type image "$1" >/dev/null 2>&1; }
image_size() { "${podman[@]}" image inspect --format '{{.Size}}' "$1" 2>/dev/null || echo 0; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }

# --- 1. the Debian base -----------------------------------------------------------------------
if [ "$rebuild_base" = 1 ] || ! image_exists debian:bookworm || ! image_exists debian:bookworm-slim; then
  mirror="${LLMLOAD_DEBIAN_MIRROR:-}"
  if [ -z "$mirror" ]; then
    candidates=(http://deb.debian.org/debian)
    while read -r uri; do candidates+=("$uri"); done < <(
      { grep -h '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}'
        grep -h '^deb ' /etc/apt/sources.list 2>/dev/null | awk '{print $2}'; } | grep -v security || true)
    for uri in "${candidates[@]}"; do
      if curl -fsS --max-time 10 -o /dev/null "${uri%/}/dists/bookworm/Release"; then mirror="${uri%/}"; break; fi
      echo "images.sh: mirror $uri does not answer"
    done
    [ -n "$mirror" ] || { echo "images.sh: no Debian mirror answers; set LLMLOAD_DEBIAN_MIRROR" >&2; exit 1; }
  fi
  rootfs="$work/rootfs"
  stamp "debootstrap --variant=minbase bookworm from $mirror"
  t0=$(date +%s)
  $SUDO rm -rf "$rootfs"
  mkdir -p "$work"
  $SUDO debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
    || { tail -20 "$work/debootstrap.log"; echo "images.sh: debootstrap failed (log: $work/debootstrap.log)" >&2; exit 1; }
  # As in Docker's debian images: the three suites, no apt cache kept, no recommends.
  $SUDO rm -f "$rootfs/etc/apt/sources.list"
  printf 'Types: deb\nURIs: %s\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\nTypes: deb\nURIs: %s\nSuites: bookworm-security\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$mirror" "${mirror%/debian}/debian-security" | $SUDO tee "$rootfs/etc/apt/sources.list.d/debian.sources" >/dev/null
  printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' | $SUDO tee "$rootfs/etc/apt/apt.conf.d/90llmload-norecommends" >/dev/null
  printf 'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };\nAPT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };\nDir::Cache::pkgcache "";\nDir::Cache::srcpkgcache "";\n' \
    | $SUDO tee "$rootfs/etc/apt/apt.conf.d/docker-clean" >/dev/null
  $SUDO rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/*.log "$rootfs"/tmp/*
  # debootstrap leaves the host's resolv.conf and hostname; buildah provides its own at run time.
  $SUDO truncate -s 0 "$rootfs/etc/resolv.conf" 2>/dev/null || true
  $SUDO tar -C "$rootfs" --numeric-owner -c . | "${podman[@]}" import --quiet - debian:bookworm >/dev/null
  # slim: documentation, man pages and translations out, and kept out of later installs.
  $SUDO mkdir -p "$rootfs/etc/dpkg/dpkg.cfg.d"
  printf 'path-exclude /usr/share/doc/*\npath-include /usr/share/doc/*/copyright\npath-exclude /usr/share/man/*\npath-exclude /usr/share/groff/*\npath-exclude /usr/share/info/*\npath-exclude /usr/share/locale/*\npath-include /usr/share/locale/locale.alias\npath-exclude /usr/share/lintian/*\npath-exclude /usr/share/linda/*\n' \
    | $SUDO tee "$rootfs/etc/dpkg/dpkg.cfg.d/docker" >/dev/null
  $SUDO find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  $SUDO find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
  $SUDO rm -rf "$rootfs"/usr/share/man/* "$rootfs"/usr/share/groff/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/lintian/*
  $SUDO find "$rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
  $SUDO tar -C "$rootfs" --numeric-owner -c . | "${podman[@]}" import --quiet - debian:bookworm-slim >/dev/null
  $SUDO rm -rf "$rootfs"
  echo "images.sh: base images made in $(( $(date +%s) - t0 )) s: debian:bookworm $(mib "$(image_size debian:bookworm)"), debian:bookworm-slim $(mib "$(image_size debian:bookworm-slim)")"
else
  stamp "base images debian:bookworm and debian:bookworm-slim exist (--rebuild-base makes them again)"
fi

# --- 2. the images ----------------------------------------------------------------------------
build_image() {  # build_image DOCKERFILE TAG
  local t0 rc=0
  stamp "buildah bud -f $1 -t $2"
  t0=$(date +%s)
  "${buildah[@]}" bud --isolation chroot --network host --pull=never --layers "${no_cache[@]}" \
    --build-arg "JOBS=$jobs" --build-arg "GIT_COMMIT=$commit" -f "$1" -t "$2" . >"$work/build-$(basename "$1" .Dockerfile).log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    tail -40 "$work/build-$(basename "$1" .Dockerfile).log"
    echo "images.sh: building $2 failed (log: $work/build-$(basename "$1" .Dockerfile).log)" >&2
    exit 1
  fi
  echo "images.sh: $2 built in $(( $(date +%s) - t0 )) s, $(mib "$(image_size "$2")")"
}
mkdir -p "$work"
# The commit built, recorded in the images' label and in every artifact (the context has no .git).
commit="$(git -C "$here" rev-parse HEAD 2>/dev/null || echo unknown)"
if [ -n "$(git -C "$here" status --porcelain --untracked-files=no 2>/dev/null)" ]; then commit="$commit+dirty"; fi
build_image docker/llmload.Dockerfile llmload:latest
build_image docker/llmload-server.Dockerfile llmload-server:cpu

# --- 3. image configuration -------------------------------------------------------------------
stamp "image configuration"
cfg() { "${buildah[@]}" inspect --type image --format "$2" "$1"; }
check "llmload:latest runs as user 10001:10001" test "$(cfg llmload:latest '{{.OCIv1.Config.User}}')" = "10001:10001"
check "llmload-server:cpu runs as user 10001:10001" test "$(cfg llmload-server:cpu '{{.OCIv1.Config.User}}')" = "10001:10001"
check "llmload:latest entrypoint is /usr/local/bin/llmload" test "$(cfg llmload:latest '{{.OCIv1.Config.Entrypoint}}')" = "[/usr/local/bin/llmload]"
check "llmload-server:cpu entrypoint is llmload-server on all interfaces" \
  test "$(cfg llmload-server:cpu '{{.OCIv1.Config.Entrypoint}}')" = "[/usr/local/bin/llmload-server --host 0.0.0.0 --allow-remote]"
check "llmload:latest declares the /results volume" grep -q '/results' <<<"$(cfg llmload:latest '{{.OCIv1.Config.Volumes}}')"
check "llmload:latest is labelled with the commit built ($commit)" \
  test "$(cfg llmload:latest '{{index .OCIv1.Config.Labels "org.opencontainers.image.revision"}}')" = "$commit"
check "llmload-server:cpu exposes 8000/tcp" grep -q '8000/tcp' <<<"$(cfg llmload-server:cpu '{{.OCIv1.Config.ExposedPorts}}')"

# --- 4. the demo inside the images ------------------------------------------------------------
results="$work/results"
$SUDO rm -rf "$results"
mkdir -p "$results"
# The container writes as uid 10001: the mounted directory must be writable by it.
$SUDO chown 10001:10001 "$results"
srv=$("${buildah[@]}" from --pull=never --name llmload-images-server llmload-server:cpu 2>/dev/null || true)
[ -n "$srv" ] || { "${buildah[@]}" rm llmload-images-server >/dev/null 2>&1 || true
                  srv=$("${buildah[@]}" from --pull=never --name llmload-images-server llmload-server:cpu); }
cli=$("${buildah[@]}" from --pull=never --name llmload-images-client llmload:latest 2>/dev/null || true)
[ -n "$cli" ] || { "${buildah[@]}" rm llmload-images-client >/dev/null 2>&1 || true
                  cli=$("${buildah[@]}" from --pull=never --name llmload-images-client llmload:latest); }
# buildah run (1.28) mounts a volume the image declares (VOLUME /results) over a -v bind mount of
# the same path, hiding it: the working container forgets the declaration (the image keeps it).
"${buildah[@]}" config --volume /results- "$cli"
server_log="$work/server.log"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then
    # buildah run with chroot isolation runs the server as a child in the host's PID namespace.
    pkill -TERM -P "$server_pid" 2>/dev/null || true
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  if [ "$keep" != 1 ]; then "${buildah[@]}" rm "$srv" "$cli" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

stamp "versions inside the images"
check "llmload --version runs in llmload:latest" "${buildah[@]}" run --isolation chroot "$cli" -- llmload --version
check "llmload-server --version runs in llmload-server:cpu" "${buildah[@]}" run --isolation chroot "$srv" -- llmload-server --version

stamp "demo: llmload-server (llmload-server:cpu) on a free loopback port"
# Loopback only: with chroot isolation the container shares the host's network.
"${buildah[@]}" run --isolation chroot "$srv" -- llmload-server --host 127.0.0.1 --port 0 --profile llama-3-8b-h100 \
  >"$server_log" 2>&1 &
server_pid=$!
url=""
for _ in $(seq 1 200); do
  url="$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$server_log" | head -1 || true)"
  [ -n "$url" ] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$server_log"; echo "images.sh: llmload-server failed to start" >&2; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { cat "$server_log"; echo "images.sh: llmload-server did not report its address" >&2; exit 1; }
echo "images.sh: llmload-server listening on $url"
descendants() { local p; for p in $(ps -o pid= --ppid "$1"); do echo "$p"; descendants "$p"; done; }
server_uid=""
for p in $(descendants "$server_pid"); do
  [ "$(ps -o comm= -p "$p")" = llmload-server ] && server_uid="$(ps -o uid= -p "$p" | tr -d ' ')"
done
check "llmload-server runs as uid 10001 (got ${server_uid:-none})" test "$server_uid" = 10001

stamp "demo: llmload run (llmload:latest) scenarios/demo.yaml, results on the mounted volume $results"
t0=$(date +%s)
rc=0
"${buildah[@]}" run --isolation chroot -v "$results:/results" "$cli" -- \
  llmload run --scenario-file /usr/share/llmload/scenarios/demo.yaml --base-url "$url" --output /results/demo || rc=$?
echo "images.sh: llmload exited $rc after $(( $(date +%s) - t0 )) s"
check "llmload exits 0" test "$rc" = 0
for f in result.json requests.jsonl latency.hlog; do
  check "$f on the mounted volume, written by uid 10001" test "$(stat -c %u "$results/demo/$f" 2>/dev/null)" = 10001
done
check "result.json: 600 completed, 0 failed" python3 - "$results/demo/result.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
# The validity verdict (could the client hold the offered load?) is printed, not required: on a
# 2-core machine busy with other work the client may lag its schedule, and says so.
v = r.get("validity", {})
print(f"  completed={r.get('completed')} failed={r.get('failed')} "
      f"valid={v.get('valid')}{' (' + v['reason'] + ')' if v.get('reason') else ''}")
print(f"  request_throughput={r.get('request_throughput', 0):.2f}/s median_ttft_ms={r.get('median_ttft_ms', 0):.1f} "
      f"p99_ttft_ms={r.get('p99_ttft_ms', 0):.1f} median_tpot_ms={r.get('median_tpot_ms', 0):.2f} "
      f"slo={json.dumps(r.get('slo', {}).get('verdict', r.get('slo', {}).get('status')))}")
sys.exit(0 if r.get("completed") == 600 and r.get("failed") == 0 else 1)
EOF
check "result.json records the commit built ($commit)" \
  test "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["conditions"]["tool"]["git_commit"])' "$results/demo/result.json")" = "$commit"

stamp "configuration from the environment: LLMLOAD_BASE_URL, and LLMLOAD_OUTPUT_DEFAULT=/results from the image"
mkdir -p "$results/env"
$SUDO chown 10001:10001 "$results/env"
rc=0
"${buildah[@]}" run --isolation chroot -v "$results/env:/results" --env "LLMLOAD_BASE_URL=$url" "$cli" -- \
  llmload run --scenario concurrency --concurrency 4 --num-requests 20 --input-tokens 64 --output-tokens 16 \
  >"$work/env.log" 2>&1 || rc=$?
grep -E '^(llmload|Requests in window)' "$work/env.log" || true
check "llmload configured by LLMLOAD_BASE_URL exits 0 (got $rc)" test "$rc" = 0
check "results at the image's default output (/results, the mounted directory)" \
  test "$(stat -c %u "$results/env/result.json" 2>/dev/null)" = 10001
# A scenario file's output key wins over the image's default.
mkdir -p "$results/file"
printf 'scenario: concurrency\nconcurrency: 4\nnum_requests: 20\ninput_tokens: 64\noutput_tokens: 16\noutput: /results/from-file\n' \
  >"$results/file/scenario.yaml"
$SUDO chown -R 10001:10001 "$results/file"
rc=0
"${buildah[@]}" run --isolation chroot -v "$results/file:/results" --env "LLMLOAD_BASE_URL=$url" "$cli" -- \
  llmload run --scenario-file /results/scenario.yaml >"$work/file.log" 2>&1 || rc=$?
check "llmload with a mounted scenario file exits 0 (got $rc)" test "$rc" = 0
check "results where the scenario file says (output: /results/from-file), not at the image's default" \
  test "$(stat -c %u "$results/file/from-file/result.json" 2>/dev/null)" = 10001 -a ! -e "$results/file/result.json"

stamp "exit codes pass through: an unreachable endpoint"
rc=0
"${buildah[@]}" run --isolation chroot "$cli" -- llmload run --base-url http://127.0.0.1:1 --num-requests 1 \
  >"$work/unreachable.log" 2>&1 || rc=$?
grep -m1 '^llmload' "$work/unreachable.log" || tail -3 "$work/unreachable.log"
check "llmload exits 2 on an unreachable endpoint (got $rc)" test "$rc" = 2

stamp "exit codes pass through: a server failing every request (6), an SLO missed with --fail-on-slo (3)"
# The server injects a fault into every request that asks for one (X-Llmload-Fault).
for d in failing slo; do mkdir -p "$results/$d"; done
$SUDO chown 10001:10001 "$results/failing" "$results/slo"
rc=0
"${buildah[@]}" run --isolation chroot -v "$results/failing:/results" "$cli" -- llmload run --base-url "$url" \
  --header "X-Llmload-Fault: error=500" --scenario concurrency --concurrency 4 --num-requests 20 \
  --input-tokens 64 --output-tokens 16 >"$work/failing.log" 2>&1 || rc=$?
grep -m1 'no measured request succeeded' "$work/failing.log" || tail -3 "$work/failing.log"
check "llmload exits 6 when every request failed (got $rc)" test "$rc" = 6
check "... and its result.json is written all the same" test "$(stat -c %u "$results/failing/result.json" 2>/dev/null)" = 10001
rc=0
"${buildah[@]}" run --isolation chroot -v "$results/slo:/results" "$cli" -- llmload run --base-url "$url" \
  --scenario concurrency --concurrency 4 --num-requests 100 --input-tokens 64 --output-tokens 16 \
  --slo ttft:1ms,p50 --fail-on-slo >"$work/slo.log" 2>&1 || rc=$?
grep -m1 'p50 verdict' "$work/slo.log" || tail -3 "$work/slo.log"
check "llmload --fail-on-slo exits 3 when the SLO is missed (got $rc)" test "$rc" = 3
check "... and its result.json is written all the same" test "$(stat -c %u "$results/slo/result.json" 2>/dev/null)" = 10001

stamp "summary"
"${podman[@]}" images --format '{{.Repository}}:{{.Tag}}  {{.Size}}' \
  | grep -E '/(llmload|llmload-server|debian):' || true
total=$(( $(date +%s) - t_start ))
if [ "$failures" -eq 0 ]; then
  echo "images.sh: all checks passed in ${total} s"
else
  echo "images.sh: $failures check(s) failed (${total} s)"
  exit 1
fi
