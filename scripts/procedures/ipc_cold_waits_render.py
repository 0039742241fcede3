"""cold-waits.md from cold-waits.json (ipc_cold_waits.py's output): the client JVM's off-CPU time
blocked in the syscalls a socket client waits in (SOCKET_SYSCALLS: poll and the socket
reads and writes; pread64 and other file I/O left out) per recording, beside its language
timer.

  .venv/bin/python scripts/procedures/ipc_cold_waits_render.py results/ipc/cold-waits/runs
"""
import json
import sys
from pathlib import Path

SOCKET_SYSCALLS = ("poll", "ppoll", "epoll_wait", "epoll_pwait", "select", "pselect6", "read",
                   "readv", "recvfrom", "recvmsg", "write", "writev", "sendto", "sendmsg",
                   "connect", "accept", "accept4")
base = Path(sys.argv[1])
rows = json.loads((base / "cold-waits.json").read_text())
out = ["### The client JVM's socket waits in one cold VV call at size 5 (threads layer, "
       "sched_switch; recorded, so every time includes the probes' effect)", "",
       "| variant | round | socket-wait intervals (blocked in poll or a socket read/write) | socket-wait time (ms) | "
       "mean per interval (ms) | language timer, recorded (ms) | client off-CPU total (ms) |",
       "|---|---|---|---|---|---|---|"]
for r in rows:
    waits = [e for name, e in r["by_syscall"].items() if name in SOCKET_SYSCALLS]
    n = sum(e["intervals"] for e in waits)
    ns = sum(e["blocked_ns"] for e in waits)
    lang = r.get("language_timer_ns")
    lang = sum(lang) if isinstance(lang, list) else lang
    out.append(f"| {r['variant']} | {r['round']} | {n} | {ns / 1e6:.1f} | "
               f"{ns / n / 1e6:.1f} | " if n else f"| {r['variant']} | {r['round']} | 0 | 0.0 | — | ")
    out[-1] += (f"{lang / 1e6:.1f} | " if lang is not None else "— | ") + \
        f"{r['off_cpu_total_ns'] / 1e6:.1f} |"
(base.parent / "cold-waits.md").write_text("\n".join(out) + "\n")
print("\n".join(out))
