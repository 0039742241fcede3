#!/usr/bin/env bash
# Fetches async-profiler 4.1 from Maven Central (tools.profiler:async-profiler) with Maven and
# unpacks its Linux x64 library into build/async-profiler/. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=4.1
dest=build/async-profiler
mkdir -p "$dest"
if [ ! -f "$dest/libasyncProfiler.so" ]; then
mvn -q -B dependency:copy -Dartifact="tools.profiler:async-profiler:$VERSION:jar" \
    -DoutputDirectory="$dest" -Dmdep.stripVersion=true
unzip -o -q -j "$dest/async-profiler.jar" 'linux-x64/libasyncProfiler.so' -d "$dest"
echo "async-profiler $VERSION: $dest/libasyncProfiler.so"
fi
# its converter (collapsed stacks / JFR -> HTML flame graph), also on Maven Central
if [ ! -f "$dest/jfr-converter.jar" ]; then
  mvn -q -B dependency:copy -Dartifact="tools.profiler:jfr-converter:$VERSION:jar" \
      -DoutputDirectory="$dest" -Dmdep.stripVersion=true
fi
