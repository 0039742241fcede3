# jvmos in a container, set up by the same scripts as `make demo` / `make test`.
# No Docker engine runs on the reference machine, so this file is kept driven by those scripts.
#
#   docker build -t jvmos .
#   # profile a JVM of the host: privileged (BPF, uprobes) and in the host's PID namespace
#   docker run --rm -it --privileged --pid=host \
#       -v /sys/kernel/tracing:/sys/kernel/tracing -v /sys/kernel/debug:/sys/kernel/debug \
#       -v "$PWD/runs:/opt/jvmos/results/runs" jvmos record --pid 4242 --duration 30
#   # the agent, as a service of the host: the host's PID namespace (it finds the host's JVMs in
#   # /proc and reaches their files through /proc/PID/root), the host's network (its metrics on
#   # the host's 127.0.0.1:9377), the platform file in a volume, calibrated once first:
#   docker run --rm --privileged -v jvmos-platform:/root/.local/share/jvmos jvmos calibrate
#   docker run -d --name jvmos-agent --restart=on-failure --privileged --pid=host --network=host \
#       -v /sys/kernel/tracing:/sys/kernel/tracing -v /sys/kernel/debug:/sys/kernel/debug \
#       -v jvmos-platform:/root/.local/share/jvmos jvmos agent --listen 127.0.0.1:9377
FROM debian:12
ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /opt/jvmos
COPY . /opt/jvmos
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends ca-certificates \
    && JVMOS_NO_BROWSER=1 make build \
    && rm -rf /var/lib/apt/lists/* /root/.m2/repository
# the agent's metrics (jvmos agent --listen HOST:9377); it stops its engines on SIGTERM
# (docker stop) and re-reads --config on SIGHUP (docker kill --signal HUP)
EXPOSE 9377
STOPSIGNAL SIGTERM
ENTRYPOINT ["/opt/jvmos/.venv/bin/jvmos"]
CMD ["doctor"]
