# llmload, the load generator, as a container image (see docker/README.md).
#
#   buildah bud -f docker/llmload.Dockerfile -t llmload:latest .        (or: docker build ...)
#   docker run --rm -v "$PWD/results:/results" llmload:latest run \
#       --base-url http://my-vllm:8000 --scenario-file /usr/share/llmload/scenarios/server.yaml \
#       --output /results/rate8
#
# The build context is the repository root. Two stages: the build stage compiles only the
# `llmload` target (no tests, no benchmarks) in Release; the runtime stage is Debian
# bookworm-slim with just the shared libraries `ldd` finds in the binary (docker/runtime-deps.sh),
# CA certificates for https endpoints, and a non-root user. Results go to the /results volume.
# The entrypoint is the binary itself (exec form), so its exit code is the container's:
# 0 done, 1 failure writing results, 2 bad configuration or unreachable endpoint, 3/4/5 with
# --fail-on-slo, 6 no measured request succeeded, 130 interrupted
# (SIGTERM from `docker stop` or a Kubernetes eviction drains requests in flight, then writes
# everything measured).
ARG BUILD_IMAGE=debian:bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${BUILD_IMAGE} AS build
ARG DEBIAN_FRONTEND=noninteractive
# The libraries of scripts/setup.sh ("build" and "libraries"), nothing for tests. The same line
# in llmload-server.Dockerfile, so a layer cache shares it.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      g++ cmake ninja-build pkg-config \
      libboost-dev libssl-dev zlib1g-dev nlohmann-json3-dev libspdlog-dev libfmt-dev libcli11-dev libyaml-cpp-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY common common
COPY analysis analysis
COPY loadgen loadgen
COPY server_stub server_stub
COPY docker/runtime-deps.sh /usr/local/bin/runtime-deps.sh
# Warnings are errors in CI (scripts/test.sh), not in an image build, whose compiler may be newer.
ARG LLMLOAD_WERROR=OFF
ARG JOBS=""
# The commit built (the context has no .git): recorded in every artifact's conditions.tool.git_commit.
#   --build-arg GIT_COMMIT=$(git rev-parse HEAD)
ARG GIT_COMMIT=""
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DLLMLOAD_BUILD_TESTS=OFF -DLLMLOAD_BUILD_BENCH=OFF -DLLMLOAD_ENABLE_CUDA=OFF \
      -DLLMLOAD_WERROR=${LLMLOAD_WERROR} "-DLLMLOAD_GIT_COMMIT=${GIT_COMMIT}" \
 && cmake --build /build --target llmload -j ${JOBS:-$(nproc)} \
 && mkdir -p /out/bin \
 && install -s -m 0755 /build/bin/llmload /out/bin/llmload \
 && runtime-deps.sh /out/bin/llmload >/out/runtime-packages \
 && /out/bin/llmload --version

FROM ${RUNTIME_IMAGE} AS runtime
ARG DEBIAN_FRONTEND=noninteractive
COPY --from=build /out/runtime-packages /tmp/runtime-packages
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates $(cat /tmp/runtime-packages) \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages \
 && useradd --system --uid 10001 --user-group --home-dir /results --no-create-home --shell /usr/sbin/nologin llmload \
 && mkdir -p /results \
 && chown llmload:llmload /results
COPY --from=build /out/bin/llmload /usr/local/bin/llmload
# The repository's example scenarios, for --scenario-file.
COPY scenarios /usr/share/llmload/scenarios
ARG GIT_COMMIT=""
LABEL org.opencontainers.image.title="llmload" \
      org.opencontainers.image.revision="${GIT_COMMIT}" \
      org.opencontainers.image.description="Load generator for OpenAI-compatible LLM inference servers" \
      org.opencontainers.image.licenses="see repository"
# Where results go when nothing else says: the lowest-precedence --output, below the flag,
# $LLMLOAD_OUTPUT and a scenario file's output key (so a run with no --output writes into the volume).
ENV LLMLOAD_OUTPUT_DEFAULT=/results
VOLUME ["/results"]
WORKDIR /results
USER 10001:10001
ENTRYPOINT ["/usr/local/bin/llmload"]
CMD ["--help"]
