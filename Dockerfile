# CPU image of lockstep, built with the same scripts CI runs (ci/deps.sh,
# ci/build.sh), so the image only ever calls tested code. The CUDA image
# (CUDA + cuDNN base, LibTorch 2.x pinned by SHA-256) is future work.
FROM debian:bookworm-20241111

ENV TZ=UTC LANG=C.UTF-8 CUBLAS_WORKSPACE_CONFIG=:4096:8 \
    LD_LIBRARY_PATH= PYTHONPATH= DEBIAN_FRONTEND=noninteractive \
    LOCKSTEP_DATA_DIR=/var/cache/lockstep/data

COPY . /src/lockstep
WORKDIR /src/lockstep
RUN bash ci/deps.sh && bash ci/fetch-data.sh && bash ci/build.sh build \
    && install -m 0755 build/lockstep /usr/local/bin/lockstep \
    && useradd --create-home --uid 10001 lockstep \
    && chmod -R a+rX /var/cache/lockstep

USER lockstep
WORKDIR /work
ENTRYPOINT ["lockstep"]
CMD ["--help"]
