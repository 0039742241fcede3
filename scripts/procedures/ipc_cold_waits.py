"""Where a cold seed-000 call waits (issue 25, item 6): the size-5 VV call of `jvmos run ipc`
(server and one client JVM, one call each, as the campaigns run it) recorded with the threads
and io layers, for sockets on the socket's own streams (seed 000's), sockets with buffered
streams and TCP_NODELAY, and XML-RPC; ROUNDS recordings of each, interleaved. The table is
the client JVM's off-CPU time by boundary (threads layer, sched_switch), per recording.

  JVMOS_PLATFORM=build/test-platform.json .venv/bin/python scripts/procedures/ipc_cold_waits.py \
      results/ipc/cold-waits/runs [ROUNDS]
"""
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from jvmos.tools import IPC_JAR, jar                         # noqa: E402
from jvmos.experiments.ipc import SCRIPT                      # noqa: E402
from jvmos.jdk import discover_jdks                           # noqa: E402

VARIANTS = {"sockets": ("sockets", ""),
            "sockets-buffered-nodelay": ("sockets", " --buffer 8192 --tcp-nodelay"),
            "xmlrpc": ("xmlrpc", "")}
java = str(discover_jdks()[0].home / "bin" / "java")
base = Path(sys.argv[1])
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
shutil.rmtree(base, ignore_errors=True)
base.mkdir(parents=True)
rows = []
for r in range(rounds):
    for name, (prim, opts) in VARIANTS.items():
        run = base / f"{name}-{r + 1}"
        d = run / "workload"
        d.mkdir(parents=True)
        (d / "campaign.sh").write_text(SCRIPT.format(dir=d, java=java, jar=jar(IPC_JAR),
                                                     prim=prim, bench="VV", size=5, calls=1,
                                                     opts=opts))
        p = subprocess.run([sys.executable, "-m", "jvmos.cli", "record", "--layers", "threads,io",
                            "--out", str(run / "rec"), "--", "sh", str(d / "campaign.sh")],
                           cwd=ROOT, capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            sys.exit(f"{run}: jvmos record failed: {p.stderr.strip()[-300:]}")
        client_pid = (d / "client.pid").read_text().strip()
        client = json.loads((d / "client.out").read_text().strip().splitlines()[-1])
        s = json.loads((run / "rec" / "summary.json").read_text())
        off = s["by_pid"][client_pid]["off_cpu"]
        rows.append({"variant": name, "round": r + 1, "run": str(run.relative_to(base)),
                     "client_pid": client_pid, "validated": client.get("validated"),
                     "language_timer_ns": client.get("language_ns"),
                     "language_incl_connect_ns": client.get("language_incl_connect_ns"),
                     "off_cpu_total_ns": off["total_ns"],
                     "by_boundary": off["by_boundary"], "by_syscall": off["by_syscall"]})
        print(name, r + 1, {b: (e["intervals"], round(e["ns"] / 1e6, 1))
                            for b, e in off["by_boundary"].items()}, flush=True)
(base / "cold-waits.json").write_text(json.dumps(rows, indent=1))
