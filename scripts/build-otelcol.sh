#!/usr/bin/env bash
# Builds the tests' OpenTelemetry collector, build/otelcol/src/otelcol-jvmos-test, from
# tests/otelcol/manifest.yaml with the collector's builder (ocb) at the same release, both
# from the Go module proxy through the go command's own settings (GOPROXY, GOSUMDB), with the
# Go that builds the engine (scripts/go.sh). Nothing is done when the binary was built from
# this manifest, with this builder and this Go (build/otelcol/stamp). A collector is not part
# of jvmos: `jvmos agent --otlp-endpoint` pushes to the user's own.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
BUILDER_VERSION=v0.161.0
manifest="$here/tests/otelcol/manifest.yaml"
out="$here/build/otelcol"
bin="$out/src/otelcol-jvmos-test"
go_bin="$("$here/scripts/go.sh" --which)"
gover="$(GOTOOLCHAIN=local "$go_bin" env GOVERSION)"
msum="$(sha256sum "$manifest" | cut -d' ' -f1)"
stamp="$BUILDER_VERSION $gover $msum"
if [ -x "$bin" ] && [ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp" ]; then
  exit 0
fi
mkdir -p "$out"
cd "$out"
rm -rf src
# ocb runs `go` from PATH (go mod tidy, go build): the one go.sh picked
PATH="$(dirname "$go_bin"):$PATH" GOTOOLCHAIN=local \
  "$go_bin" run "go.opentelemetry.io/collector/cmd/builder@$BUILDER_VERSION" \
  --config "$manifest" > "$out/build.log" 2>&1 || { tail -20 "$out/build.log" >&2;
  echo "build-otelcol.sh: the builder failed (whole log: $out/build.log)" >&2; exit 1; }
test -x "$bin"
echo "$stamp" > "$out/stamp"
echo "otelcol: $bin"
