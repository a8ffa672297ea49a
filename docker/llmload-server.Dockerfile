# llmload-server, the mock OpenAI-compatible server, as a container image (see docker/README.md).
# Two variants from this one file, chosen by build arguments:
#
#   CPU (default; steps timed by the roofline model):
#     buildah bud -f docker/llmload-server.Dockerfile -t llmload-server:cpu .
#   CUDA (steps timed by real kernels on the GPU, --device auto|cuda; docs/gpu.md):
#     docker build -f docker/llmload-server.Dockerfile -t llmload-server:cuda \
#       --build-arg BUILD_IMAGE=nvidia/cuda:13.0.2-devel-ubuntu24.04 \
#       --build-arg RUNTIME_IMAGE=nvidia/cuda:13.0.2-runtime-ubuntu24.04 \
#       --build-arg LLMLOAD_ENABLE_CUDA=ON .
#     docker run --rm --gpus all -p 8000:8000 llmload-server:cuda --device cuda
#
# The build context is the repository root. The build stage compiles only the `llmload-server`
# target in Release; the runtime stage holds the binary, the shared libraries `ldd` finds in it
# (docker/runtime-deps.sh: package names right for Debian and for Ubuntu, the CUDA images' base)
# and a non-root user. With CUDA the CUDA runtime is linked statically and NVML is loaded at run
# time, so the GPU driver that the NVIDIA container toolkit mounts is all the image needs
# (the nvidia/cuda runtime images set NVIDIA_VISIBLE_DEVICES and NVIDIA_DRIVER_CAPABILITIES).
ARG BUILD_IMAGE=debian:bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${BUILD_IMAGE} AS build
ARG DEBIAN_FRONTEND=noninteractive
# The libraries of scripts/setup.sh ("build" and "libraries"), nothing for tests. The same line
# in llmload.Dockerfile, so a layer cache shares it.
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
# OFF: the CPU variant (the GPU module is a stub that says so). ON: requires nvcc (the nvidia/cuda
# devel images have it in /usr/local/cuda/bin) and builds the kernels for LLMLOAD_CUDA_ARCHITECTURES.
ARG LLMLOAD_ENABLE_CUDA=OFF
ARG LLMLOAD_CUDA_ARCHITECTURES=80-real;90
# Warnings are errors in CI (scripts/test.sh), not in an image build, whose compiler may be newer.
ARG LLMLOAD_WERROR=OFF
ARG JOBS=""
# The commit built (the context has no .git): recorded in every artifact's conditions.tool.git_commit.
#   --build-arg GIT_COMMIT=$(git rev-parse HEAD)
ARG GIT_COMMIT=""
ENV PATH=${PATH}:/usr/local/cuda/bin
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DLLMLOAD_BUILD_TESTS=OFF -DLLMLOAD_BUILD_BENCH=OFF \
      -DLLMLOAD_ENABLE_CUDA=${LLMLOAD_ENABLE_CUDA} "-DLLMLOAD_CUDA_ARCHITECTURES=${LLMLOAD_CUDA_ARCHITECTURES}" \
      -DLLMLOAD_WERROR=${LLMLOAD_WERROR} "-DLLMLOAD_GIT_COMMIT=${GIT_COMMIT}" \
 && cmake --build /build --target llmload-server -j ${JOBS:-$(nproc)} \
 && mkdir -p /out/bin \
 && install -s -m 0755 /build/bin/llmload-server /out/bin/llmload-server \
 && runtime-deps.sh /out/bin/llmload-server >/out/runtime-packages \
 && /out/bin/llmload-server --version

FROM ${RUNTIME_IMAGE} AS runtime
ARG DEBIAN_FRONTEND=noninteractive
COPY --from=build /out/runtime-packages /tmp/runtime-packages
RUN apt-get update \
 && apt-get install -y --no-install-recommends $(cat /tmp/runtime-packages) \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages \
 && useradd --system --uid 10001 --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin llmload
COPY --from=build /out/bin/llmload-server /usr/local/bin/llmload-server
ARG GIT_COMMIT=""
LABEL org.opencontainers.image.title="llmload-server" \
      org.opencontainers.image.revision="${GIT_COMMIT}" \
      org.opencontainers.image.description="Mock OpenAI-compatible LLM inference server (vLLM-shaped engine simulator)"
EXPOSE 8000
USER 10001:10001
# Listens on all interfaces of the container (its own network namespace; --allow-remote is what
# the server asks for before it leaves loopback). Every other flag of `llmload-server --help` can
# follow the image name (replacing this CMD), e.g. `--profile tiny --max-num-seqs 8 --fault 0.01:reset@5`.
ENTRYPOINT ["/usr/local/bin/llmload-server", "--host", "0.0.0.0", "--allow-remote"]
CMD ["--port", "8000"]
