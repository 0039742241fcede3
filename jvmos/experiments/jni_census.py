"""`jvmos run jni-census`: the paper's Table 2 (section 3) on this machine, plus the NIO path.

Four tasks, each recorded with the io and jni layers: how many JNI calls the JVM makes, how
many of them copy, how many bytes they copy, how many I/O syscalls it makes, and which path
(JNI, NIO, other) the bytes of those syscalls took.
"""
import argparse
import http.client
import os
import subprocess
import tempfile
import time
from pathlib import Path

from jvmos.analyzers.tables import Table, fmt_bytes, fmt_count
from jvmos import JvmosError
from jvmos import record as rec
from jvmos.tools import IO_JAR, TOMCAT_JAR, jar
from jvmos.experiments.common import (jdk_label, load_finished, log, out_dir, publish, run_recorded,
                     select_jdks, workload_json)
from jvmos.experiments.common import PROBE_EFFECT_HEADERS, headline, probe_effect, probe_effect_cells

EXAMPLES = """\
examples:
  jvmos run jni-census                        # the four tasks at full size, default JDK
  jvmos run jni-census --quick --tasks socket,randomrw
  jvmos run jni-census --jdk /usr/lib/jvm/temurin-25-jdk-amd64 --out /tmp/census
  jvmos run jni-census --render results/jni-census  # the table again, nothing measured

cost: the jni layer attaches ~240 uprobes (tens of seconds per task) and every JNI call then
pays a uprobe hit (~1.3 us here).
"""
TASKS = ["tomcat", "java2d", "randomrw", "socket"]


def parse(argv):
    p = argparse.ArgumentParser(prog="jvmos run jni-census", epilog=EXAMPLES,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", default=",".join(TASKS), help=f"subset of {','.join(TASKS)}")
    p.add_argument("--jdk", help="JDK home (default: the first JDK found, java on PATH first)")
    p.add_argument("--out", help="output directory (default results/runs/<time>-jni-census)")
    p.add_argument("--requests", type=int, default=100, help="tomcat: pages fetched while traced")
    p.add_argument("--warmup", type=int, default=200, help="tomcat: pages fetched before tracing")
    p.add_argument("--frames", type=int, default=20, help="java2d: frames rendered")
    p.add_argument("--ops", type=int, default=1_000_000, help="randomrw: 10-byte read/writes")
    p.add_argument("--writes", type=int, default=200_000, help="socket: 10-byte socket writes")
    p.add_argument("--quick", action="store_true", help="small sizes (for tests and demos)")
    p.add_argument("--render", metavar="DIR",
                   help="write DIR's table, notes and figure again from DIR/table2.json "
                        "(no measuring)")
    a = p.parse_args(argv)
    a.tasks = [t.strip() for t in a.tasks.split(",") if t.strip()]
    bad = [t for t in a.tasks if t not in TASKS]
    if bad:
        p.error(f"unknown task(s) {', '.join(bad)} (known: {', '.join(TASKS)})")
    if a.quick:
        a.requests, a.warmup, a.frames = min(a.requests, 30), min(a.warmup, 30), min(a.frames, 3)
        a.ops, a.writes = min(a.ops, 100_000), min(a.writes, 50_000)
    return a


def fetch_pages(port: int, n: int, page_bytes: int, max_seconds: float = 120):
    """A bounded loopback client: n GETs of /page, one connection each, checked for size."""
    deadline = time.monotonic() + max_seconds
    for i in range(n):
        if time.monotonic() > deadline:
            raise JvmosError(f"client stopped after {i} pages: {max_seconds}s limit")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            conn.request("GET", "/page", headers={"Connection": "close"})
            resp = conn.getresponse()
            body = resp.read()
        finally:
            conn.close()
        if resp.status != 200 or len(body) != page_bytes:
            raise JvmosError(f"page {i}: HTTP {resp.status}, {len(body)} bytes "
                             f"(expected 200, {page_bytes})")


def task_tomcat(a, java, out, page_bytes=10240):
    """Serving only: Tomcat starts and warms up untraced; jvmos attaches for N pages.

    The server has no request limit (it would exit on the last traced page, before jvmos
    stops, and the recording would end `target_exited`): its --max-seconds bounds it, and
    it is terminated once the recording has stopped."""
    run_dir = out / "runs" / "tomcat"
    run_dir.mkdir(parents=True, exist_ok=True)
    port_file = run_dir / "port"
    srv_log = open(run_dir / "server-stdout.txt", "wb")
    srv = subprocess.Popen([java, "-jar", str(jar(TOMCAT_JAR)), "--page-bytes", str(page_bytes),
                            "--max-requests", "0", "--max-seconds", "900",
                            "--port-file", str(port_file)],
                           stdout=srv_log, stderr=open(run_dir / "server-stderr.txt", "wb"))
    try:
        t0 = time.monotonic()
        while not port_file.exists():
            if srv.poll() is not None:
                raise JvmosError(f"Tomcat exited ({srv.returncode}) before listening; see "
                                 f"{run_dir}/server-stderr.txt")
            if time.monotonic() - t0 > 120:
                raise JvmosError("Tomcat did not start listening within 120 s")
            time.sleep(0.1)
        port = int(port_file.read_text().strip())
        fetch_pages(port, a.warmup, page_bytes)
        res = rec.record(rec.Options(pid=srv.pid, layers=["io", "jni"], out=run_dir / "rec",
                                     workload=lambda: fetch_pages(port, a.requests, page_bytes),
                                     log=lambda m: log(f"  [tomcat] {m}")))
    finally:
        if srv.poll() is None:
            srv.terminate()
            try:
                srv.wait(timeout=30)
            except subprocess.TimeoutExpired:
                srv.kill()
                srv.wait(timeout=30)
    if res.status != "complete":
        raise JvmosError(f"tomcat recording ended {res.status}")
    return res, {"pages": a.requests, "page_bytes": page_bytes, "warmup_pages": a.warmup}


def main(argv) -> int:
    a = parse(argv)
    if a.render:
        out = Path(a.render)
        return report(out, load_finished(out / "table2.json", "jni-census", "tasks"))
    jvm = select_jdks([a.jdk] if a.jdk else None)[0]
    java = str(jvm.home / "bin" / "java")
    out = out_dir(a.out, "jni-census")
    iojar = str(jar(IO_JAR))
    tmp = tempfile.mkdtemp(prefix="jvmos-census-")
    tasks = {
        "java2d": ("Java2D demo graphics (headless, PNG)",
                   [java, "-cp", iojar, "org.jvmos.workloads.Java2dDemo", "--frames",
                    str(a.frames), "--width", "640", "--height", "480", "--out", tmp]),
        "randomrw": (f"{a.ops:,} 10-byte random read-writes (RandomAccessFile)",
                     [java, "-cp", iojar, "org.jvmos.workloads.RandomRw", "--ops", str(a.ops),
                      "--size", "10", "--file", os.path.join(tmp, "rw.dat"), "--seed", "42"]),
        "socket": (f"{a.writes:,} 10-byte java.net.Socket writes (loopback)",
                   [java, "-cp", iojar, "org.jvmos.workloads.SocketStream", "--writes",
                    str(a.writes), "--size", "10"]),
    }
    results = {"experiment": "jni-census", "jdk": jvm.as_dict(), "tasks": {}}
    for name in a.tasks:
        log(f"task {name} on JDK {jvm.version} ({jdk_label(jvm)})")
        if name == "tomcat":
            label = f"Tomcat serving a 10 kB page ({a.requests} pages, after {a.warmup} untraced)"
            res, extra = task_tomcat(a, java, out)
        else:
            label, cmd = tasks[name]
            res = run_recorded(name, cmd, out, layers=("io", "jni"))
            extra = {"workload": workload_json(res)}
        s = res.summary
        cats = s["categories"]
        jc = cats.get("jni_call", {})
        results["tasks"][name] = {
            "label": label, "run_dir": str(res.run_dir.relative_to(out)), **extra,
            "jni_calls": jc.get("calls", 0), "copying_calls": jc.get("copying_calls", 0),
            "copying_pct": jc.get("copying_pct", 0.0),
            "jni_copy_bytes": cats.get("jni_copy", {}).get("bytes", 0),
            "jni_copy_calls_without_bytes": cats.get("jni_copy", {}).get("calls_without_bytes", 0),
            "io_syscalls": cats.get("io_syscall", {}).get("calls", 0),
            "io_bytes": cats.get("io_syscall", {}).get("bytes", 0),
            "syscalls": cats.get("io_syscall", {}).get("syscalls", {}),
            "paths": s["paths"],
            "nio": {k: cats.get("nio_copy", {}).get(k) for k in
                    ("calls", "bytes", "unsafe_copy_calls", "unsafe_copy_bytes",
                     "confirmed_calls")},
            "top_jni_functions": dict(list(jc.get("functions", {}).items())[:10]),
            "attach_seconds": s["totals"].get("attach_seconds"),
            "probe_effect": probe_effect(s["totals"], None, None, "no bare run"),
        }
    return report(out, results)


def report(out: Path, results: dict) -> int:
    """table2.md/.csv/.json, the notes and the figure, from the recorded tasks (also
    --render's)."""
    version = results["jdk"]["version"]
    t = Table(f"Table 2: JNI calls required to perform routine tasks (JDK {version})",
              ["task", "JNI calls", "% copying", "bytes copied (JNI)", "I/O syscalls",
               "bytes via JNI", "bytes via NIO", "bytes other"] + PROBE_EFFECT_HEADERS)
    for name, r in results["tasks"].items():
        p = r["paths"]
        pe, pv = probe_effect_cells(r.get("probe_effect"))
        t.add([r["label"], fmt_count(r["jni_calls"]), f"{r['copying_pct']:.0f}",
               fmt_bytes(r["jni_copy_bytes"]), fmt_count(r["io_syscalls"]),
               fmt_bytes(p["jni"]["bytes"]), fmt_bytes(p["nio"]["bytes"]),
               fmt_bytes(p["other"]["bytes"])] + pe,
              [name, r["jni_calls"], round(r["copying_pct"], 2), r["jni_copy_bytes"],
               r["io_syscalls"], p["jni"]["bytes"], p["nio"]["bytes"], p["other"]["bytes"]] + pv)
    tc = results["tasks"].get("tomcat")
    results["headline"] = headline(
        "JNI calls per 10 kB Tomcat page (mean over the pages traced), and the share of "
        "them that copy",
        "unknown" if not tc or not tc.get("pages") else
        f"{tc['jni_calls'] / tc['pages']:,.1f} calls, {tc['copying_pct']:.0f}% copying",
        "590 calls, 18% copying (one page)")
    notes = ["paper (Sun JVM 1.6, Solaris): Tomcat 10k page 590 calls, 18% copying, 22k bytes; "
             "Java2D 2.5M, 12%, 360M; 1M 10-byte random read-writes 6.5M, 18%, 10M.",
             "JNI calls: entry uprobes on every jni_* entry point of libjvm.so; copying = the "
             "jni_copy functions (arrays and strings). Bytes copied count only the Region "
             "functions, whose arguments give a length; Elements/Critical/String*Chars calls "
             "are counted but their size is unknown.",
             "bytes by path: a syscall is JNI-path when its buffer is the one a JNI Region copy "
             "of the same thread filled (write) or drained (read); NIO-path when a libnio.so "
             "read/write native issued it; other = the rest (JVM-internal and direct-buffer I/O)."]
    from jvmos.analyzers.figures import bytes_by_path
    for name, r in results["tasks"].items():
        r["short"] = name
    figs = bytes_by_path(results["tasks"], out / "table2-paths",
                         f"I/O bytes by path, JDK {version} (JNI copy, NIO copy, other)")
    notes.append(f"figure: {figs[0].name} (and .svg), the share of each task's I/O bytes by path.")
    publish(out, "table2", [t], results, notes, also=f"; recordings in {out}/runs/")
    return 0
