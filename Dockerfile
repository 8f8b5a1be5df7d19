# goro-hello as a container image (README "Deploying").
#
#   docker build -t goro-hello .
#   docker run --rm -p 8080:8080 --cpus 1.5 --memory 256m goro-hello
#
# Two stages: the build stage compiles the apps on debian:bookworm with the
# project's own deps script (only the build subset); the run stage is
# debian:bookworm-slim with only the Debian packages the binaries' shared
# libraries come from (scripts/runtime-packages.sh writes that list), a
# non-root user, and nothing else. tests/deploy checks this file's
# instructions and runs its HEALTHCHECK against a live goro-hello.

FROM debian:bookworm AS build
WORKDIR /src
# The deps script alone first, so the package layer survives source edits.
COPY scripts/deps.sh scripts/deps.sh
RUN bash scripts/deps.sh --build && rm -rf /var/lib/apt/lists/*
COPY . .
RUN cmake --preset release -DGORO_BUILD_TESTS=OFF -DGORO_BUILD_BENCHMARKS=OFF -DGORO_WERROR=OFF \
 && cmake --build --preset release --target goro-hello goro-fileserver \
 && mkdir -p /out/bin \
 && cp build/release/bin/goro-hello build/release/bin/goro-fileserver /out/bin/ \
 && bash scripts/runtime-packages.sh /out/bin/goro-hello /out/bin/goro-fileserver > /out/runtime-packages.txt

FROM debian:bookworm-slim
COPY --from=build /out/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update \
 && xargs apt-get install -y --no-install-recommends < /tmp/runtime-packages.txt \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt \
 && groupadd --system --gid 10001 goro \
 && useradd --system --uid 10001 --gid goro --no-create-home --shell /usr/sbin/nologin goro
COPY --from=build /out/bin/ /usr/local/bin/

# PORT alone sets the address to ":PORT", every interface (goro-hello
# --print-config shows it); JSON log lines for the cluster's log collector
# (text stays the default on a terminal outside the image). maxprocs and the
# memory limit come from the container's cgroup (README "Deploying").
ENV PORT=8080 \
    GORO_LOG_FORMAT=json
# A numeric UID, so Kubernetes' runAsNonRoot can check it without a runAsUser.
USER 10001:10001
EXPOSE 8080
# SIGTERM: graceful shutdown (lame duck for GORO_SHUTDOWN_DELAY, then the
# listener closes and requests in flight finish within GORO_SHUTDOWN_TIMEOUT).
STOPSIGNAL SIGTERM
# The slim image has no HTTP client: bash's /dev/tcp sends the request.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${PORT:-8080} && printf 'GET /healthz HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n' >&3 && IFS= read -r -t 2 status <&3 && [[ $status == 'HTTP/1.1 200 '* ]]"]
ENTRYPOINT ["/usr/local/bin/goro-hello"]
