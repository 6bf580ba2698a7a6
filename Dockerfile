# GPU image of lockstep: CUDA 12.4 + cuDNN 9 development base, LibTorch
# 2.5.0+cu124 pinned by version and SHA-256, built with the scripts CI runs
# (ci/deps.sh, ci/fetch-libtorch.sh — tested by tests/ci/fetch_libtorch_test.sh
# — and ci/build.sh), so the image only calls tested code. CPU image:
# Dockerfile.cpu.
#   docker build -t lockstep:cuda12.4 .
#   docker run --gpus all -v "$PWD:/work" lockstep:cuda12.4 check smoke/
# The base is pinned to an exact tag; pin its digest too
# (nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04@sha256:...) where your
# registry policy requires it.
FROM nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04

ARG LIBTORCH_URL=https://download.pytorch.org/libtorch/cu124/libtorch-cxx11-abi-shared-with-deps-2.5.0%2Bcu124.zip
ARG LIBTORCH_SHA256=51a5f8ec6030c99e949b3818f394de0079b2deee76a411e18b2339340cfb7a7b

# The determinism contract's environment, and no inherited library or
# Python paths (the binary finds LibTorch through its RPATH).
ENV TZ=UTC LANG=C.UTF-8 CUBLAS_WORKSPACE_CONFIG=:4096:8 \
    LD_LIBRARY_PATH= PYTHONPATH= DEBIAN_FRONTEND=noninteractive \
    LOCKSTEP_DATA_DIR=/var/cache/lockstep/data

COPY . /src/lockstep
WORKDIR /src/lockstep
RUN LOCKSTEP_DEPS=image bash ci/deps.sh \
    && bash ci/fetch-libtorch.sh /opt/libtorch "$LIBTORCH_URL" "$LIBTORCH_SHA256" \
    && bash ci/build.sh build -DCMAKE_PREFIX_PATH=/opt/libtorch -DLOCKSTEP_BUILD_TESTS=OFF \
    && cmake --install build --prefix /usr/local --strip \
    && useradd --create-home --uid 10001 lockstep \
    && mkdir -p /var/cache/lockstep/data && chmod -R a+rX /var/cache/lockstep

USER lockstep
WORKDIR /work
CMD ["lockstep", "--help"]
