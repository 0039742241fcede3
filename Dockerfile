# jvmos in a container: built in one stage by the same scripts as `make demo` / `make test`,
# shipped in another with only what its verbs run. BuildKit (DOCKER_BUILDKIT=1 on Docker 20.10;
# the default from 23.0 on) builds it:
#
#   DOCKER_BUILDKIT=1 docker build -t jvmos .
#   # on a network whose HTTPS goes through a proxy with a CA of its own, hand that CA to the
#   # build stage (it never reaches the shipped image): `make container-test` does this
#   scripts/extra-cas.py > extra-ca.pem
#   DOCKER_BUILDKIT=1 docker build --secret id=ca,src=extra-ca.pem -t jvmos .
#
# The README's "In a container" gives the run lines (capabilities, --pid=host, tracefs).

# ---- build: the engine (clang, Go), the C programs, the Java workloads (Maven), the venv
FROM debian:12 AS build
ENV DEBIAN_FRONTEND=noninteractive JVMOS_NO_BROWSER=1 \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt
WORKDIR /opt/jvmos
# the packages first (Debian's archive, no TLS involved), then the handed-in CAs, if any, into
# this stage's trust store (curl, Go and pip read the system bundle; Java's store is rebuilt
# from it by ca-certificates-java), so that Go's module proxy, Maven Central and PyPI answer;
# this stage is never shipped
COPY scripts/ scripts/
COPY probes/engine/go.mod probes/engine/go.sum probes/engine/
RUN --mount=type=secret,id=ca \
    apt-get update -qq \
    && apt-get install -y -qq --no-install-recommends ca-certificates make python3 >/dev/null \
    && if [ -s /run/secrets/ca ]; then \
         awk '/BEGIN CERT/{n++} {print > ("/usr/local/share/ca-certificates/build-ca-" n ".crt")}' \
             /run/secrets/ca && update-ca-certificates >/dev/null; fi \
    && scripts/install-deps.sh \
    && if [ -s /run/secrets/ca ]; then update-ca-certificates --fresh >/dev/null; fi
COPY . /opt/jvmos
# the DaCapo-style suite (100 MB) is left out: `jvmos run predictions` and `heldout` need it,
# not record, report, calibrate or the agent
RUN make build PIP_EXTRAS= \
    && find workloads/java -name 'original-*.jar' -delete \
    && rm -rf workloads/java/dacapo/target .venv/lib/python3*/site-packages/pip \
    && rm -rf build/go build/vmlinux.h build/toolchain.zip /root/.m2 /root/.cache /root/go

# ---- runtime: python3 and the venv, a JRE, the engine and its objects, the workloads and C
# programs `jvmos calibrate` runs, async-profiler and jattach (--sample); nm and glibc's debug
# symbols (the probes' placement). No compiler, no Go, no Maven, no bpftrace (no shipped verb
# needs it: it is make test's witness), no browser.
FROM debian:12
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -qq \
    && apt-get install -y -qq --no-install-recommends python3 openjdk-17-jre-headless \
       jattach binutils libc6-dbg fontconfig fonts-dejavu-core >/dev/null \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/*
WORKDIR /opt/jvmos
COPY --from=build /opt/jvmos/jvmos /opt/jvmos/jvmos
COPY --from=build /opt/jvmos/analyzers /opt/jvmos/analyzers
COPY --from=build /opt/jvmos/heuristic /opt/jvmos/heuristic
COPY --from=build /opt/jvmos/probes /opt/jvmos/probes
COPY --from=build /opt/jvmos/deploy /opt/jvmos/deploy
COPY --from=build /opt/jvmos/pyproject.toml /opt/jvmos/README.md /opt/jvmos/
COPY --from=build /opt/jvmos/.venv /opt/jvmos/.venv
COPY --from=build /opt/jvmos/build /opt/jvmos/build
COPY --from=build /opt/jvmos/workloads/c/build /opt/jvmos/workloads/c/build
COPY --from=build /opt/jvmos/workloads/java /opt/jvmos/workloads/java
# the agent's metrics (jvmos agent --listen HOST:9377); it stops its engine on SIGTERM
# (docker stop) and re-reads --config on SIGHUP (docker kill --signal HUP)
EXPOSE 9377
STOPSIGNAL SIGTERM
ENTRYPOINT ["/opt/jvmos/.venv/bin/jvmos"]
CMD ["doctor"]
