#!/usr/bin/env bash
# Fetches async-profiler 4.1 from Maven Central (tools.profiler:async-profiler) with Maven and
# unpacks its Linux x64 library into build/async-profiler/. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=4.1
dest=build/async-profiler
[ -f "$dest/libasyncProfiler.so" ] && exit 0
mkdir -p "$dest"
mvn -q -B dependency:copy -Dartifact="tools.profiler:async-profiler:$VERSION:jar" \
    -DoutputDirectory="$dest" -Dmdep.stripVersion=true
unzip -o -q -j "$dest/async-profiler.jar" 'linux-x64/libasyncProfiler.so' -d "$dest"
echo "async-profiler $VERSION: $dest/libasyncProfiler.so"
