# jvmos in a container, set up by the same scripts as `make demo` / `make test`.
# No Docker engine runs on the reference machine, so this file is kept driven by those scripts.
#
#   docker build -t jvmos .
#   # profile a JVM of the host: privileged (BPF, uprobes) and in the host's PID namespace
#   docker run --rm -it --privileged --pid=host \
#       -v /sys/kernel/tracing:/sys/kernel/tracing -v /sys/kernel/debug:/sys/kernel/debug \
#       -v "$PWD/runs:/opt/jvmos/results/runs" jvmos record --pid 4242 --duration 30
FROM debian:12
ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /opt/jvmos
COPY . /opt/jvmos
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends ca-certificates \
    && JVMOS_NO_BROWSER=1 scripts/install-deps.sh \
    && make build \
    && rm -rf /var/lib/apt/lists/* /root/.m2/repository
ENTRYPOINT ["/opt/jvmos/.venv/bin/jvmos"]
CMD ["doctor"]
