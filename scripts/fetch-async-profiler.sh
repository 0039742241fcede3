#!/usr/bin/env bash
# Fetches async-profiler 4.1 from Maven Central (tools.profiler:async-profiler) with Maven and
# unpacks its Linux x64 library into build/async-profiler/. Idempotent. Both jars are checked
# against the SHA-256 pinned here (those Maven Central served for 4.1 on 28 Nov 2026): a
# mismatch stops the build.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=4.1
SHA_PROFILER=5535baa56133628cfffe2f05ca9bfef1fae3d5abe49835447262b1c6da4a9582
SHA_CONVERTER=8e60f9faba893993a99cac524981074095a928cad0ffa9dfddf9ff6de9747e4c
dest=build/async-profiler
mkdir -p "$dest"

check() {  # FILE SHA256
  local got; got="$(sha256sum "$1" | cut -d' ' -f1)"
  if [ "$got" != "$2" ]; then
    echo "fetch-async-profiler: $1 has SHA-256 $got, not the pinned $2" >&2
    rm -f "$1"
    exit 1
  fi
}

# what an earlier run fetched is checked again: a jar changed since is refused, and fetched
# anew below
for f in async-profiler.jar:$SHA_PROFILER jfr-converter.jar:$SHA_CONVERTER; do
  if [ -f "$dest/${f%%:*}" ] && \
     [ "$(sha256sum "$dest/${f%%:*}" | cut -d' ' -f1)" != "${f#*:}" ]; then
    echo "fetch-async-profiler: $dest/${f%%:*} differs from the pinned SHA-256: fetched again" >&2
    rm -f "$dest/${f%%:*}"
    [ "${f%%:*}" = async-profiler.jar ] && rm -f "$dest/libasyncProfiler.so"
  fi
done
if [ ! -f "$dest/libasyncProfiler.so" ] || [ ! -f "$dest/async-profiler.jar" ]; then
  mvn -q -B dependency:copy -Dartifact="tools.profiler:async-profiler:$VERSION:jar" \
      -DoutputDirectory="$dest" -Dmdep.stripVersion=true
  check "$dest/async-profiler.jar" "$SHA_PROFILER"
  unzip -o -q -j "$dest/async-profiler.jar" 'linux-x64/libasyncProfiler.so' -d "$dest"
  echo "async-profiler $VERSION: $dest/libasyncProfiler.so"
fi
# the library is the jar's (checked above) byte for byte, or unpacked from it again
if ! unzip -p "$dest/async-profiler.jar" 'linux-x64/libasyncProfiler.so' | cmp -s - "$dest/libasyncProfiler.so"; then
  echo "fetch-async-profiler: $dest/libasyncProfiler.so differs from the pinned jar's: unpacked again" >&2
  unzip -o -q -j "$dest/async-profiler.jar" 'linux-x64/libasyncProfiler.so' -d "$dest"
fi
# its converter (collapsed stacks / JFR -> HTML flame graph, JFR -> pprof), also on Maven Central
if [ ! -f "$dest/jfr-converter.jar" ]; then
  mvn -q -B dependency:copy -Dartifact="tools.profiler:jfr-converter:$VERSION:jar" \
      -DoutputDirectory="$dest" -Dmdep.stripVersion=true
  check "$dest/jfr-converter.jar" "$SHA_CONVERTER"
fi
