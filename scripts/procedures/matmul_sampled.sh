#!/bin/bash
# socket against datagram SPA, n = 100, k = 4: ten cold runs (one multiplication each) and one
# warm run (200 multiplications), each mechanism sampled with async-profiler through jvmos
# (--mode sample: no probes); each run's result line goes to its run directory's workload.jsonl.
# Then: .venv/bin/python scripts/frames.py --per-run 10 results/matmul/sampled/*-cold -p ...
set -e
cd "$(dirname "$0")/../.."
export JVMOS_PLATFORM=build/test-platform.json
OUT=results/matmul/sampled
JAVA=$(.venv/bin/python -c "from jvmos.jdk import discover_jdks; print(discover_jdks()[0].home / 'bin' / 'java')")
JAR=workloads/java/matmul/target/jvmos-matmul.jar
for m in socket datagram; do
  .venv/bin/python -m jvmos.cli record --mode sample --out $OUT/$m-cold -- /bin/sh -c \
    "for i in 1 2 3 4 5 6 7 8 9 10; do '$JAVA' -jar $JAR --algorithm spa --n 100 --seed \$i --repeat 1 --max-seconds 120 --mechanism $m --k 4 | tail -n 1 >> $PWD/$OUT/$m-cold/workload.jsonl; done"
  .venv/bin/python -m jvmos.cli record --mode sample --out $OUT/$m-warm -- /bin/sh -c \
    "'$JAVA' -jar $JAR --algorithm spa --n 100 --seed 1 --repeat 200 --max-seconds 300 --mechanism $m --k 4 | tail -n 1 >> $PWD/$OUT/$m-warm/workload.jsonl"
done
# bare, no agent: five warm runs of each, alternated
for r in 1 2 3 4 5; do for m in socket datagram; do
  "$JAVA" -jar $JAR --algorithm spa --n 100 --seed $r --repeat 200 --max-seconds 300 --mechanism $m --k 4 | tail -n 1 >> $OUT/bare-warm-$m.jsonl
done; done
