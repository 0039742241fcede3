"""A process's user and kernel CPU, page faults and I/O counters, read from the kernel without
any probe, with the JVM's service threads (JIT compilers, GC) apart.

`snapshot(pid)` reads:
  * /proc/PID/stat: utime and stime of the whole thread group, exited threads included (the
    kernel folds a thread's times into its signal struct when it exits), in clock ticks
    (USER_HZ, 10 ms here); minflt and majflt, the same way (every fault of every thread);
  * the process CPU clock (jvmos.cputime, ns, on-CPU of every thread): the precise total;
  * /proc/PID/io: syscr, syscw (read and write syscalls), rchar, wchar (bytes through them):
    the equal-work check of two arms;
  * /proc/PID/task/TID/stat of every live thread whose name is a JVM service thread: the JIT's
    compiler threads ("C1 CompilerThre", "C2 CompilerThre") and the GC's ("GC Thread#N",
    "G1 ...", "VM Thread"), their utime and stime. A service thread that exits between two
    snapshots loses its time from its class (it stays in the process's): run the JVM with
    -XX:-UseDynamicNumberOfCompilerThreads so that the compiler threads live as long as it.

`window(a, b)` is b - a, field by field, times in ns. The split of a thread's CPU into user and
kernel time is the kernel's (sampled at each tick, scaled to the thread's precise runtime):
over a window of a second or more its error is a few ticks.
"""
import os
import time
from typing import Dict

from jvmos import cputime

TICK_NS = 1e9 / os.sysconf("SC_CLK_TCK")

# the JVM's service threads by the name HotSpot gives them (comm is cut at 15 characters)
SERVICE_CLASSES = (
    ("jit", ("C1 CompilerThre", "C2 CompilerThre", "C1 CompilerThread", "C2 CompilerThread")),
    ("gc", ("GC Thread", "G1 ", "VM Thread", "GC Thre", "ZWorker", "ZDirector",
            "Shenandoah")),
)


def service_class(comm: str) -> str:
    """The class of a thread by its name: 'jit', 'gc' or '' (any other)."""
    for cls, prefixes in SERVICE_CLASSES:
        if comm.startswith(prefixes):
            return cls
    return ""


def _stat_fields(text: str):
    """(comm, the fields after it) of a /proc stat line; comm may hold spaces and ')'."""
    i, j = text.index("("), text.rindex(")")
    return text[i + 1:j], text[j + 2:].split()


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def io_counters(pid: int) -> Dict[str, str]:
    """/proc/PID/io as {field: text} (syscr, syscw, rchar, wchar, ...). FileNotFoundError or
    ProcessLookupError when the process is gone."""
    return dict(line.split(": ") for line in _read(f"/proc/{pid}/io").splitlines()
                if ": " in line)


def snapshot(pid: int) -> dict:
    """The counters of pid now. cputime.ProcessGone when the process is gone."""
    try:
        comm, f = _stat_fields(_read(f"/proc/{pid}/stat"))
        io = io_counters(pid)
    except (FileNotFoundError, ProcessLookupError) as e:
        raise cputime.ProcessGone(f"pid {pid}: {e}") from None
    # after comm: state(0) ppid pgrp session tty tpgid flags minflt(7) cminflt majflt(9)
    # cmajflt utime(11) stime(12)
    s = {"cpu_ns": cputime.process_cpu_ns(pid), "utime_ns": int(f[11]) * TICK_NS,
         "stime_ns": int(f[12]) * TICK_NS, "minflt": int(f[7]), "majflt": int(f[9]),
         "syscr": int(io.get("syscr", 0)), "syscw": int(io.get("syscw", 0)),
         "rchar": int(io.get("rchar", 0)), "wchar": int(io.get("wchar", 0)),
         "t": time.monotonic()}
    svc: Dict[str, Dict[str, float]] = {c: {"utime_ns": 0.0, "stime_ns": 0.0, "threads": 0}
                                        for c, _ in SERVICE_CLASSES}
    tids = {}
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        raise cputime.ProcessGone(f"pid {pid}: no task list") from None
    for tid in tasks:
        try:
            tcomm, tf = _stat_fields(_read(f"/proc/{pid}/task/{tid}/stat"))
        except (FileNotFoundError, ProcessLookupError):
            continue        # the thread exited between the listing and the read
        cls = service_class(tcomm)
        if not cls:
            continue
        u, k = int(tf[11]) * TICK_NS, int(tf[12]) * TICK_NS
        svc[cls]["utime_ns"] += u
        svc[cls]["stime_ns"] += k
        svc[cls]["threads"] += 1
        tids[tid] = cls
    s["service"] = svc
    s["service_tids"] = tids
    return s


FIELDS = ("cpu_ns", "utime_ns", "stime_ns", "minflt", "majflt", "syscr", "syscw", "rchar",
          "wchar", "t")


def window(a: dict, b: dict) -> dict:
    """What happened between snapshots a and b. A service thread seen in a but not in b (it
    exited) is named in `service_exited`: its class's figures are then incomplete."""
    w = {k: b[k] - a[k] for k in FIELDS}
    w["seconds"] = w.pop("t")
    w["service"] = {c: {"utime_ns": b["service"][c]["utime_ns"] - a["service"][c]["utime_ns"],
                        "stime_ns": b["service"][c]["stime_ns"] - a["service"][c]["stime_ns"],
                        "threads": b["service"][c]["threads"]}
                    for c in b["service"]}
    gone = sorted(set(a["service_tids"]) - set(b["service_tids"]))
    w["service_exited"] = {t: a["service_tids"][t] for t in gone}
    # the clocks the predictions test: the process's less its JIT compiler threads'
    w["stime_nojit_ns"] = w["stime_ns"] - w["service"]["jit"]["stime_ns"]
    w["utime_nojit_ns"] = w["utime_ns"] - w["service"]["jit"]["utime_ns"]
    # the precise CPU clock less the JIT threads' user and kernel time (ticks)
    w["cpu_nojit_ns"] = w["cpu_ns"] - w["service"]["jit"]["utime_ns"] - \
        w["service"]["jit"]["stime_ns"]
    return w
