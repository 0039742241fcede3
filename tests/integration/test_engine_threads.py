"""The compiled threads layer (`jvmos record --layers threads`) on real processes,
with bpftrace as the independent witness: both count the same events of the same process, and
must agree exactly.

  - a JVM that starts 100 threads (NoOpThreads): the engine's pthread_create calls, clone
    calls and JVM_StartThread calls against bpftrace's count of the JVM's new threads
    (task_newtask with CLONE_THREAD) and its own uprobe on JVM_StartThread; and the syscalls
    the engine timed inside pthread_create against the witness's count of the same syscalls
    between its own pthread_create entry and return;
  - two threads yielding to each other: the engine's context switches per thread and kind
    against sched_switch's formatted prev_state, as the kernel formats it for the tracepoint.
"""
import json
import secrets
import shutil
from pathlib import Path

import pytest

from conftest import bpftrace_witness, stop_witness, ROOT, can_trace, run_jvmos

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")]

PROBECAL = ROOT / "workloads/c/build/probecal"
ENGINE = ROOT / "build/jvmos-engine"
JAR = ROOT / "workloads/java/io/target/jvmos-io.jar"
THREADS = 100
NOOP = ["-cp", str(JAR), "org.jvmos.workloads.NoOpThreads", "--threads", str(THREADS),
        "--repeat", "1", "--warmup", "0"]
# the syscalls threads.bt times inside a span (catalogue.THREAD_SPAN_SYSCALLS but exit), by
# x86-64 number: clone, clone3, mmap, munmap, mprotect, madvise, rseq, set_robust_list,
# rt_sigprocmask, prctl, sched_getaffinity, gettid
SPAN_SYSCALL_NRS = (56, 435, 9, 11, 10, 28, 334, 273, 14, 157, 204, 186)


@pytest.fixture(autouse=True)
def _built():
    if not ENGINE.exists() or not (ROOT / "build/probes/threads.bpf.o").exists():
        pytest.fail("the engine or threads.bpf.o is not built: make build")
    if not JAR.exists():
        pytest.fail(f"{JAR} is not built: make build")


def java() -> str:
    from test_record import java as first_jdk
    return first_jdk()


def libjvm_of(java_bin: str) -> Path:
    home = Path(java_bin).resolve().parent.parent
    return next(home.glob("lib/server/libjvm.so"))


def libc() -> str:
    from jvmos.jdk import libc_of
    return str(libc_of(None))


class Witness:
    """bpftrace running a script whose maps are keyed (by pid, tid, ...), attached before the
    workload starts; stop() returns {map: {key tuple: count}}."""

    def __init__(self, tmp_path: Path, script: str):
        self.out = tmp_path / f"witness-{secrets.token_hex(3)}.json"
        self.p = bpftrace_witness(self.out, script)

    def stop(self) -> dict:
        stop_witness(self.p)
        maps = {}
        for line in self.out.read_text().splitlines():
            rec = json.loads(line)
            if rec.get("type") != "map":
                continue
            for name, data in rec["data"].items():
                maps[name] = ({tuple(k.split(",")): v for k, v in data.items()}
                              if isinstance(data, dict) else {(): data})
        return maps

    def kill(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def engine_maps(out: Path) -> dict:
    return json.loads((out / "raw" / "engine.json").read_text())


def jvm_pid(s: dict) -> str:
    pids = [p for p, v in s["by_pid"].items() if "thread_jvm" in v["categories"]]
    assert len(pids) == 1, s["by_pid"].keys()
    return pids[0]


def thread_counts(s: dict, pid: str) -> dict:
    c = s["by_pid"][pid]["categories"]
    tc, tj = c["thread_create"], c["thread_jvm"]
    parts = {k: v["calls"] for k, v in tc["parts"].items()}
    jparts = {k: v["calls"] for k, v in tj["parts"].items()}
    return {"pthread_create": tc["calls"], "clone": tc["clone_calls"],
            "JVM_StartThread": tj["calls"],
            "pthread_create java": tc["layers"]["java"]["threads"],
            "libc start java": parts["libc start java"],
            "libc exit java": parts["libc exit java"],
            "jvm exit java": jparts["jvm exit java"]}


def _in_create_witness(scope: str) -> str:
    """The witness's count of what the engine times inside pthread_create, on the same hooks:
    at --scope host the syscalls (raw_syscalls), at --scope process the entries of the libc
    functions the engine probes there, by address (glibc's __clone3 is named only in its
    debug file, which bpftrace does not read)."""
    if scope == "host":
        in_create = " || ".join(f"args->id == {n}" for n in SPAN_SYSCALL_NRS)
        return (f"tracepoint:raw_syscalls:sys_exit /@in[tid] && ({in_create})/ "
                "{ @in_create[pid] = count(); }\n")
    from jvmos.catalogue import THREAD_LIBC_CLONE, THREAD_LIBC_FUTEX, THREAD_LIBC_SPAN
    from jvmos.jdk import symbols
    syms = symbols(libc())
    missing = [f for f in THREAD_LIBC_CLONE + THREAD_LIBC_SPAN + tuple(THREAD_LIBC_FUTEX)
               if f not in syms]
    assert not missing, f"libc lacks {missing}: is libc6-dbg installed (make deps)?"
    addrs = sorted({syms[f] for f in THREAD_LIBC_CLONE + THREAD_LIBC_SPAN})
    # and every entry of glibc's futex wait functions, for the sync category's count
    waits = sorted({syms[f] for f in THREAD_LIBC_FUTEX})
    return "".join(f"uprobe:{libc()}:{a:#x} /@in[tid]/ {{ @in_create[pid] = count(); }}\n"
                   for a in addrs) + \
        "".join(f"uprobe:{libc()}:{a:#x} {{ @waits[pid] = count(); }}\n" for a in waits)


@pytest.mark.parametrize("scope", ["host", "process"])
def test_jvm_thread_creation_agrees_with_bpftrace(platform_file, tmp_path, scope):
    """100 Java threads: the engine's counts of pthread_create, clone and JVM_StartThread
    against bpftrace's task_newtask (CLONE_THREAD) and JVM_StartThread uprobe for the same
    pid; the syscalls inside pthread_create against the witness's own pthread_create span, on
    the hooks the engine uses at that scope (the syscall tracepoints, or libc's functions)."""
    jbin = java()
    script = (
        "tracepoint:task:task_newtask /args->clone_flags & 0x10000/ { @threads[pid] = count(); }\n"
        f"uprobe:{libjvm_of(jbin)}:JVM_StartThread {{ @jst[pid] = count(); }}\n"
        f"uprobe:{libc()}:pthread_create {{ @in[tid] = 1; }}\n"
        f"uretprobe:{libc()}:pthread_create {{ delete(@in[tid]); }}\n"
        + _in_create_witness(scope))
    w = Witness(tmp_path, script)
    out = tmp_path / "rec"
    try:
        r = run_jvmos(["record", "--layers", "threads", "--scope", scope, "--out", str(out),
                       "--", jbin] + NOOP, timeout=600)
    finally:
        seen = w.stop()
    assert r.returncode == 0, r.stderr
    s = summary(out)
    assert s["status"] == "complete", s.get("warnings")
    pid = jvm_pid(s)
    n = thread_counts(s, pid)
    threads = seen["@threads"][(pid,)]
    # every thread the JVM created came through pthread_create and clone3, and was seen
    assert n["pthread_create"] == n["clone"] == threads > THREADS, (n, threads)
    assert n["JVM_StartThread"] == n["pthread_create java"] == seen["@jst"][(pid,)] > THREADS
    # NoOpThreads's threads start through thread_native_entry (each one's start-up span counted
    # unless it was abandoned after 1 ms), and exit through JavaThread::exit and the exit syscall
    tc = s["by_pid"][pid]["categories"]["thread_create"]
    assert n["JVM_StartThread"] - tc["abandoned_start_spans"] <= n["libc start java"] \
        <= n["JVM_StartThread"]
    assert n["jvm exit java"] == n["libc exit java"] >= THREADS
    # the span syscalls inside pthread_create: a start-up span abandoned at one of them
    # (threads.bt's 1 ms rule) leaves that one syscall out
    in_create_engine = sum(tc["parts"][f"kernel in create {lab}"]["calls"]
                           for lab in ("java", "internal"))
    witness = seen["@in_create"][(pid,)]
    assert witness - tc["abandoned_start_spans"] <= in_create_engine <= witness
    # host: 2 rt_sigprocmask + clone3 each; process: clone3 each (the signal masks are inline
    # syscalls, and a cached stack needs no mmap)
    assert in_create_engine >= (3 if scope == "host" else 1) * n["pthread_create"]
    if scope == "process":
        # and no syscall tracepoint was asked for: the blind spots are said instead
        assert "threads" in json.loads((out / "manifest.json").read_text())["blind_spots"]
        # every futex wait the witness saw enter glibc's functions is one of sync's waits (a
        # wait open when the process exits is ended at sched_process_exit), and no wake is
        # claimed
        sync = s["by_pid"][pid]["categories"]["sync"]
        assert sync["wait_calls"] == seen["@waits"][(pid,)] > 0, (sync["wait_calls"], seen)
        assert sync["wake_calls"] is None
        # each clone's return program counted its pair as a span_libc hit, in --mode time
        hits = s["totals"]["probe_hits"]
        assert hits["threads:span_libc"] >= n["clone"] and "threads:clone_libc" not in hits
    # the probes' cost is known for every kind this layer's programs ran
    t = s["totals"]
    assert t["probe_overhead_ns"] is not None and not t["probe_overhead_unknown_kinds"], t
    assert t["probe_hits"]["threads:sched_switch"] > 0
    assert not s["totals"]["missed_events"]


def test_context_switches_agree_with_bpftrace(platform_file, tmp_path):
    """Two threads yielding to each other on one CPU: each one's switches, voluntary and
    involuntary as sched_switch's formatted prev_state & 0xff says (threads.bt's test), against
    the engine's, whose kind is computed from the raw tracepoint's arguments."""
    prog = tmp_path / f"jt{secrets.token_hex(4)}"
    shutil.copy(PROBECAL, prog)
    w = Witness(tmp_path, f'tracepoint:sched:sched_switch /comm == "{prog.name}" && tid != pid/ '
                          '{ @csw[tid, (args->prev_state & 0xff) ? "voluntary" : "involuntary"] '
                          '= count(); }')
    out = tmp_path / "rec"
    try:
        r = run_jvmos(["record", "--layers", "threads", "--out", str(out),
                       "--", str(prog), "--mode", "yield", "--iterations", "20000"],
                      timeout=600)
    finally:
        seen = w.stop()
    assert r.returncode == 0, r.stderr
    s = summary(out)
    assert s["status"] == "complete", s.get("warnings")
    (pid,) = s["by_pid"]
    counted = {}
    from jvmos.engine import records
    for row in records(engine_maps(out), "counts"):       # decoded by the engine's schema
        tgid, what, sub, v, x = row["tgid"], row["what"], row["sub"], row["value"], row["x"]
        if str(tgid) == pid and what == 256 + 2 and str(x) != pid:     # JVMOS_WHAT_CSW
            counted[(str(x), {1: "voluntary", 2: "involuntary"}[sub])] = v
    witness = {k: v for k, v in seen["@csw"].items() if k[0] != pid}
    assert counted == witness, (counted, witness)
    # the yields are involuntary (a running task that gave up the CPU; a yield finds the other
    # thread runnable nearly every time), each thread's last switch is voluntary (it is dead)
    assert sum(v for (_, kind), v in counted.items() if kind == "involuntary") > 20000
    assert {tid for tid, kind in counted if kind == "voluntary"} == {tid for tid, _ in counted}
