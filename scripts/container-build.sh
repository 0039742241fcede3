#!/usr/bin/env bash
# The container image, built for real (make container-test): Debian's docker.io installed if
# no docker is, a dockerd started if none answers, debian:12 used if present or pullable and
# otherwise made from Debian's archive with debootstrap, then the Dockerfile built with
# BuildKit, handing the build stage the CAs this host trusts beyond Debian's own
# (scripts/extra-cas.py; none on most networks) as a secret, never a layer of the image.
#
#   scripts/container-build.sh [TAG]      (default jvmos:test)
# Prints the build's wall time and the image's size; build/container/ keeps the log.
#   scripts/container-build.sh --stop-dockerd   (stops the dockerd this script started, if any)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--stop-dockerd" ]; then
  pidf=build/container/dockerd.pid
  [ -s "$pidf" ] || exit 0
  pid="$(cat "$pidf")"
  # only that pid if it is still a dockerd (not a pid reused since, e.g. after a reboot)
  if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = dockerd ]; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 60); do [ -d "/proc/$pid" ] || break; sleep 0.5; done
    if [ -d "/proc/$pid" ]; then
      echo "container: the dockerd it started (pid $pid) is still running after 30 s" >&2
      exit 1
    fi
    echo "container: stopped the dockerd it started (pid $pid)"
  fi
  rm -f "$pidf"
  exit 0
fi
TAG="${1:-jvmos:test}"
mkdir -p build/container
export DEBIAN_FRONTEND=noninteractive

if ! command -v docker >/dev/null 2>&1 || ! command -v dockerd >/dev/null 2>&1; then
  echo "container: installing Debian's docker.io"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends docker.io >/dev/null
fi
if ! docker info >/dev/null 2>&1; then
  echo "container: starting dockerd (log: build/container/dockerd.log)"
  nohup dockerd >build/container/dockerd.log 2>&1 &
  echo $! > build/container/dockerd.pid     # stopped after the tests (container-stop-dockerd)
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
  docker info >/dev/null 2>&1 || { echo "container: dockerd did not start:" >&2; tail -5 build/container/dockerd.log >&2; exit 1; }
fi

if ! docker image inspect debian:12 >/dev/null 2>&1; then
  if ! timeout 60 docker pull -q debian:12 >/dev/null 2>&1; then
    echo "container: no debian:12 from a registry; making it with debootstrap (Debian's archive)"
    command -v debootstrap >/dev/null 2>&1 || apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
    root=build/container/debian12
    rm -rf "$root"
    debootstrap --variant=minbase bookworm "$root" >build/container/debootstrap.log 2>&1 \
      || { echo "container: debootstrap failed:" >&2; tail -5 build/container/debootstrap.log >&2; exit 1; }
    # debootstrap's sources name its mirror's bookworm alone: the updates and security
    # suites are added from that same line (the mirror's debian-security beside debian), as
    # Debian's own image has them, so the image's packages get their fixes
    src="$(grep -m1 '^deb ' "$root/etc/apt/sources.list" || true)"
    if [ -z "$src" ]; then
      echo "container: debootstrap wrote no 'deb' line in $root/etc/apt/sources.list" >&2
      rm -rf "$root"; exit 1
    fi
    { echo "$src"; echo "${src/ bookworm / bookworm-updates }";
      echo "${src/\/debian bookworm //debian-security bookworm-security }"; } \
      > "$root/etc/apt/sources.list.tmp"
    mv "$root/etc/apt/sources.list.tmp" "$root/etc/apt/sources.list"
    tar -C "$root" -c . | docker import - debian:12 >/dev/null
    rm -rf "$root"
  fi
fi

# BuildKit (the build stage's secret mount): a client of Docker 23 or later builds with it
# through its buildx plugin; without that plugin, Debian's docker.io client (20.10) has it
# built in
client=docker
if ! docker buildx version >/dev/null 2>&1 && [ -x /usr/bin/docker ] \
    && /usr/bin/docker version --format '{{.Client.Version}}' 2>/dev/null | grep -q '^20\.'; then
  client=/usr/bin/docker
fi

secret=()
scripts/extra-cas.py >build/container/extra-ca.pem
if [ -s build/container/extra-ca.pem ]; then
  secret=(--secret "id=ca,src=build/container/extra-ca.pem")
fi
t0=$(date +%s)
if ! DOCKER_BUILDKIT=1 "$client" build --progress=plain "${secret[@]}" -t "$TAG" . \
    >build/container/build.log 2>&1; then
  echo "container: the image did not build (build/container/build.log):" >&2
  grep -E "ERROR|error:|failed" build/container/build.log | tail -5 >&2
  exit 1
fi
t1=$(date +%s)
size=$(docker image inspect -f '{{.Size}}' "$TAG")
echo "container: $TAG built in $((t1 - t0)) s; $((size / 1000000)) MB"
