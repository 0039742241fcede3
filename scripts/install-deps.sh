#!/usr/bin/env bash
# Installs what jvmos needs on Debian/Ubuntu, as root, skipping what is already there.
# Used by `make deps` and by the Dockerfile, so both set up the same machine.
set -euo pipefail

need=()
have() { command -v "$1" >/dev/null 2>&1; }
pkg_missing() { ! dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

have bpftrace || need+=(bpftrace)
# the compiled engine (probes/*.bpf.c, probes/engine): clang compiles the BPF programs against
# libbpf's headers; bpftool writes vmlinux.h from the kernel's BTF (CO-RE)
have clang || need+=(clang)
have llvm-strip || need+=(llvm)
pkg_missing libbpf-dev && need+=(libbpf-dev)
have bpftool || need+=(bpftool)
have nm || need+=(binutils)
have cc || need+=(gcc)
have make || need+=(make)
have mvn || need+=(maven)
have curl || need+=(curl)
have unzip || need+=(unzip)
# a go command: the machine's own when new enough, else scripts/go.sh has it download the
# toolchain module (Debian 12's Go 1.19 can)
have go || need+=(golang-go)
have python3 || need+=(python3)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
if ! ls /usr/lib/jvm/*/bin/javac >/dev/null 2>&1 && ! have javac; then
  need+=(openjdk-17-jdk-headless)
fi
# glibc's separate debug file, by build id: the threads layer at --scope process probes
# functions glibc keeps local (__clone3, the futex waits), named only there
pkg_missing libc6-dbg && need+=(libc6-dbg)
# jattach loads async-profiler into a running JVM without starting a JVM per command (`jvmos
# agent --sample`)
have jattach || need+=(jattach)
# Java2D (the jni-census task) renders text: it needs fontconfig and a font
for p in fontconfig fonts-dejavu-core; do pkg_missing "$p" && need+=("$p"); done
# headless Chromium renders the HTML pages in the tests (and for a user's screenshot), and a
# real Prometheus server scrapes `jvmos agent` in its test; JVMOS_NO_BROWSER=1 leaves both out
# (the container, which only records)
[ "${JVMOS_NO_BROWSER:-0}" = 1 ] || [ -x /usr/bin/chromium ] || need+=(chromium)
new_prometheus=0
if [ "${JVMOS_NO_BROWSER:-0}" != 1 ] && ! have prometheus; then
  need+=(prometheus)
  new_prometheus=1
fi

if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing ${need[*]}; run as root (apt-get install)" >&2
    exit 1
  fi
  echo "install-deps: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  # Debian's package enables and starts a Prometheus server on :9090 (every interface); the
  # test starts its own on 127.0.0.1, so the one this install brought is stopped and disabled
  if [ "$new_prometheus" = 1 ] && command -v systemctl >/dev/null 2>&1 \
      && systemctl is-enabled prometheus.service >/dev/null 2>&1; then
    systemctl disable --now prometheus.service >/dev/null 2>&1 || true
    echo "install-deps: prometheus installed for the tests; its service (started by the package) stopped and disabled"
  fi
fi

# bpftrace needs tracefs (tracepoints) and, on older kernels, debugfs
if [ "$(id -u)" -eq 0 ]; then
  [ -d /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
  [ -d /sys/kernel/debug/tracing ] || mount -t debugfs nodev /sys/kernel/debug 2>/dev/null || true
fi
echo "install-deps: system packages ok"

# Go for the engine's loader (github.com/cilium/ebpf needs Go >= 1.25): scripts/go.sh finds a
# Go that is new enough, or fetches Go's own toolchain module from the Go module proxy
scripts/go.sh version >/dev/null
echo "install-deps: go ok ($(scripts/go.sh version))"
