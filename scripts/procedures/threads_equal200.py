"""per-thread.md: the native cost of a Java thread (thread_create's java parts: libc and kernel,
create, start and exit) per thread, at 200 threads, in NoOpThreads (recorded here with the
threads layer alone and with the chat experiment's four layers, 3 recordings each; command
below) and in the chat server's 5x20 level (results/chat/repeats, its 3 repeats).

  for i in 1 2 3; do for L in threads io,threads,links,mem; do jvmos record --layers $L \\
      --out results/threads/equal-200/record-{threads,four-layers}-$i -- java -cp \\
      workloads/java/io/target/jvmos-io.jar org.jvmos.workloads.NoOpThreads --threads 200 \\
      --repeat 1 --warmup 1; done; done
  .venv/bin/python scripts/procedures/threads_equal200.py results/threads/equal-200 \
      results/chat/repeats/runs > results/threads/equal-200/per-thread.md
"""
import json
import sys
from pathlib import Path

HERE, CHAT = Path(sys.argv[1]), Path(sys.argv[2])


def parts(summary: Path) -> dict:
    c = json.loads(summary.read_text())["categories"]["thread_create"]
    return {k: v for k, v in (c.get("parts") or {}).items() if k.endswith(" java")}


def row(name: str, summary: Path) -> str:
    p = parts(summary)
    n = p["libc create java"]["calls"]
    ms = {k: (v.get("time_ns") or 0) / 1e6 for k, v in p.items()}
    total = sum(ms.values())
    return (f"| {name} | {n} | {total:.2f} | {1e3 * total / n:.1f} | "
            f"{1e3 * ms['libc create java'] / n:.1f} | {1e3 * ms['libc exit java'] / n:.1f} | "
            f"{p['kernel in create java']['calls'] / n:.1f} |")


print("| recording | Java threads | native ms (java parts) | µs per thread | libc create µs | "
      "libc exit µs | syscalls in create per thread |")
print("|---|---|---|---|---|---|---|")
for kind in ("threads", "four-layers"):
    for i in (1, 2, 3):
        print(row(f"NoOpThreads, {kind} {i}", HERE / f"record-{kind}-{i}" / "summary.json"))
for i in (1, 2, 3):
    print(row(f"chat 5x20, four layers, repeat {i}", CHAT / f"platform-5x20-r{i}" / "summary.json"))
