#!/usr/bin/env bash
# Runs the Go command that builds the engine (probes/engine): the machine's own `go` when it is
# as new as probes/engine/go.mod asks (1.26: cilium/ebpf v0.22.0 needs 1.25, golang.org/x/arch
# v0.33.0 1.26), else Go's toolchain module golang.org/toolchain (what GOTOOLCHAIN switching
# downloads), fetched once by the machine's older go (`go mod download`, with the go command's
# own proxy and checksum settings: GOPROXY, GOSUMDB, GOFLAGS) and copied into build/go.
# Debian 12's apt has Go 1.19, which predates GOTOOLCHAIN switching but can download a module;
# scripts/install-deps.sh installs it when no go is found.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
TOOLCHAIN="${JVMOS_GO_TOOLCHAIN:-go1.27.3}"
# the SHA-256 of golang.org/toolchain@v0.0.1-go1.27.3.linux-amd64.zip as it was served on
# 25 Nov 2026: a zip that differs is refused (another toolchain needs JVMOS_GO_SHA256)
SHA256_go1_27_3_linux_amd64=af4c06478303fdd1bfb335fab86c7ccb9b12e529044a946a16a1c4bcc779f8d7

# the Go the engine's go.mod asks for (its "go 1.N" line): golang.org/x/arch v0.33.0 needs 1.26
NEED_MINOR="$(sed -n 's/^go 1\.\([0-9]*\).*/\1/p' "$here/probes/engine/go.mod" | head -1)"
NEED_MINOR="${NEED_MINOR:-26}"

new_enough() {  # "go1.26.8" -> true when it is at least what go.mod asks for
  local v="${1#go}"; local major="${v%%.*}"; local rest="${v#*.}"; local minor="${rest%%.*}"
  [ "$major" -gt 1 ] 2>/dev/null || { [ "$major" -eq 1 ] && [ "${minor%%[!0-9]*}" -ge "$NEED_MINOR" ]; }
}

pick() {
  if command -v go >/dev/null 2>&1; then
    local v; v="$(GOTOOLCHAIN=local go env GOVERSION 2>/dev/null || true)"
    if [ -n "$v" ] && new_enough "$v"; then command -v go; return; fi
  fi
  local dir="$here/build/go/$TOOLCHAIN"
  if [ ! -x "$dir/bin/go" ]; then
    local mod="v0.0.1-$TOOLCHAIN.linux-$(uname -m | sed 's/x86_64/amd64/;s/aarch64/arm64/')"
    if ! command -v go >/dev/null 2>&1; then
      echo "go.sh: no go command here (install Debian's golang-go: scripts/install-deps.sh)" >&2
      exit 1
    fi
    echo "go.sh: no Go >= 1.$NEED_MINOR here; fetching golang.org/toolchain@$mod with" \
         "$(GOTOOLCHAIN=local go env GOVERSION 2>/dev/null || go version)" >&2
    mkdir -p "$here/build/go"
    local zip
    zip="$(cd "$here/build/go" && GOTOOLCHAIN=local GOFLAGS=-mod=mod \
           go mod download -json "golang.org/toolchain@$mod" |
           python3 -c 'import json,sys; print(json.load(sys.stdin)["Zip"])')"
    cp "$zip" "$here/build/go/toolchain.zip"
    local want="${JVMOS_GO_SHA256:-}"
    if [ -z "$want" ]; then
      local var="SHA256_$(echo "$TOOLCHAIN.linux-$(uname -m | sed 's/x86_64/amd64/')" | tr '.-' '__')"
      want="${!var:-}"
    fi
    local got; got="$(sha256sum "$here/build/go/toolchain.zip" | cut -d' ' -f1)"
    if [ -z "$want" ] || [ "$got" != "$want" ]; then
      rm -f "$here/build/go/toolchain.zip"
      echo "go.sh: golang.org/toolchain@$mod has SHA-256 $got, expected ${want:-a pinned one (set JVMOS_GO_SHA256)}: refused" >&2
      exit 1
    fi
    rm -rf "$dir.tmp"
    python3 - "$here/build/go/toolchain.zip" "$dir.tmp" <<'PY'
import os, sys, zipfile
src, dst = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(src) as z:
    for info in z.infolist():
        # entries are "golang.org/toolchain@VERSION/bin/go": keep what follows the version
        head, sep, name = info.filename.partition(".linux-")
        name = name.split("/", 1)[1] if sep and "/" in name else ""
        if not name or info.is_dir():
            continue
        path = os.path.join(dst, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with z.open(info) as f, open(path, "wb") as out:
            out.write(f.read())
        mode = (info.external_attr >> 16) & 0o777
        os.chmod(path, mode or 0o644)
PY
    rm -rf "$dir"; mv "$dir.tmp" "$dir"
    rm -f "$here/build/go/toolchain.zip"
  fi
  echo "$dir/bin/go"
}

GO="$(pick)"
export GOTOOLCHAIN=local
if [ "${1:-}" = "--which" ]; then   # the go binary picked (scripts/build-otelcol.sh)
  echo "$GO"; exit 0
fi
exec "$GO" "$@"
