#!/usr/bin/env bash
# One-time set-up for a fresh Debian (bookworm) machine: installs the Debian packages, then the
# npm test tooling. Idempotent: a package already installed is not touched, and `apt-get update`
# runs at most once per invocation (and only when something is missing).
# Usage: scripts/setup.sh          everything the build, the demo and every test stage need
#        scripts/setup.sh --demo   only what building and running llmload and llmload-server need
#                                  (the demo's set-up: no test tooling, browsers, JDK or MPI)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mode="all"
case "${1:-}" in
  "") ;;
  --demo) mode="demo" ;;
  *) echo "setup.sh: unknown option '$1' (use --demo for the demo's packages only, or nothing for all)" >&2; exit 2 ;;
esac

packages=(
  # build (lld: the linker CMake picks when present, several times faster than GNU ld)
  build-essential cmake ninja-build pkg-config ccache lld
  # libraries
  libboost1.74-dev libssl-dev zlib1g-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
  libcli11-dev libyaml-cpp-dev
  # --tokenizer PATH with a SentencePiece tokenizer.model (docs/tokenizers.md)
  libsentencepiece-dev
  # used by the demo/test scripts
  curl procps
)
test_packages=(
  # tests and benchmarks; clang with its sanitizer and libFuzzer runtimes for the ASan/UBSan,
  # TSan and fuzzing stages
  libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev
  # bench/uring_stream_floor.cpp: the lean receive path on io_uring (issue 20)
  liburing-dev
  # third-party readers of our exported histograms
  default-jdk-headless libhdrhistogram-java
  # third-party reader of the server's /metrics (the official Prometheus Python client)
  python3 python3-prometheus-client
  # the TLS tests: a throwaway CA (openssl) and a TLS-terminating proxy (nginx) on loopback
  openssl nginx
  # the HTML report test: renders report.html offline in headless Chromium
  chromium
  # multi-machine runs: llmload-mpi (built when CMake finds MPI) and its mpirun test
  openmpi-bin libopenmpi-dev
)
if [ "$mode" = "all" ]; then packages+=("${test_packages[@]}"); fi

# Node.js + npm: Debian's, unless the machine already has a node/npm (e.g. a NodeSource build,
# which conflicts with Debian's npm package).
if [ "$mode" = "all" ] && ! command -v npm >/dev/null 2>&1; then packages+=(nodejs npm); fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  # Packages only: no service starts (nginx would otherwise start its default site on port 80;
  # the tests run their own nginx as the current user on a loopback port).
  policy_rc_d=""
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    policy_rc_d=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy_rc_d" >/dev/null
    $SUDO chmod +x "$policy_rc_d"
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  if [[ -n "$policy_rc_d" ]]; then $SUDO rm -f "$policy_rc_d"; fi
else
  echo "setup: all Debian packages present"
fi

if [ "$mode" = "demo" ]; then exit 0; fi

# npm test tooling: hdr-histogram-js (third-party decoder of our exported histograms) and the
# official openai and @anthropic-ai/sdk packages (real clients of llmload-server in the
# conformance tests; pinned in tests/conformance/package.json and its lock file).
for dir in tests/interop/js tests/conformance tests/tokenizer; do
  if [ -f "$here/$dir/package-lock.json" ]; then
    # npm ci again only when the lock file changed since the last install.
    stamp="$here/$dir/node_modules/.llmload-lock-stamp"
    if [ ! -f "$stamp" ] || ! cmp -s "$here/$dir/package-lock.json" "$stamp"; then
      echo "setup: installing npm test tooling in $dir"
      (cd "$here/$dir" && npm ci --no-audit --no-fund --loglevel=error)
      cp "$here/$dir/package-lock.json" "$stamp"
    fi
  fi
done
