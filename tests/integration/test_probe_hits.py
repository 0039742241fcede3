"""Probe hits counted for the probe-effect estimate, checked against the kernel's own counts.

A JVM is started by a small wrapper that reaps it and reads its rusage (every thread's context
switches and page faults, counted by the kernel, not by jvmos). Each switch the kernel counted
for the JVM ran the layers' sched_switch blocks once; a thread's last switch (after its counts
were folded into the process's) is the only one the kernel leaves out, so the hits lie between
the rusage count and the rusage count plus one per thread.
"""
import json
import sys

import pytest

from conftest import ROOT, can_trace, run_jvmos
from jvmos.jdk import discover_jdks

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")]

IO_JAR = ROOT / "workloads/java/io/target/jvmos-io.jar"
THREADS = 50

WRAPPER = """
import json, resource, subprocess, sys
p = subprocess.Popen(sys.argv[2:])
p.wait()
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
json.dump({"pid": p.pid, "rc": p.returncode, "switches": ru.ru_nvcsw + ru.ru_nivcsw,
           "faults": ru.ru_minflt + ru.ru_majflt}, open(sys.argv[1], "w"))
"""


def test_sched_switch_and_fault_hits_match_the_kernels_counts(platform_file, tmp_path):
    jdks = discover_jdks()
    if not jdks:
        pytest.skip("needs a JDK")
    wrap = tmp_path / "wrap.py"
    wrap.write_text(WRAPPER)
    facts = tmp_path / "rusage.json"
    out = tmp_path / "rec"
    r = run_jvmos(["record", "--layers", "threads,mem", "--out", str(out), "--",
                   sys.executable, str(wrap), str(facts), str(jdks[0].home / "bin" / "java"),
                   "-cp", str(IO_JAR), "org.jvmos.workloads.NoOpThreads", "--threads",
                   str(THREADS), "--repeat", "1", "--warmup", "0"])
    assert r.returncode == 0, r.stderr
    k = json.loads(facts.read_text())
    assert k["rc"] == 0
    s = json.loads((out / "summary.json").read_text())
    t = s["totals"]
    hits = t["probe_hits_by_pid"][str(k["pid"])]
    # the JVM started THREADS Java threads, plus its own (GC, compiler, ...): a generous
    # bound on its threads, for the last switch of each
    most_threads = THREADS + 200
    for kind in ("threads:sched_switch", "mem:sched_switch"):
        assert k["switches"] <= hits[kind] <= k["switches"] + most_threads, (kind, hits, k)
    # both layers count the same events, in different maps (@csw and @hits)
    assert hits["threads:sched_switch"] == hits["mem:sched_switch"]
    # user page faults: a subset of the faults the kernel counted (it also counts faults the
    # kernel takes on user memory, e.g. in copy_to_user)
    assert 0 < hits["mem:page_fault"] <= k["faults"]
    # thread life: at least one new task and one wake-up per Java thread, an exit per thread
    for kind in ("common:task_newtask", "threads:sched_wakeup_new", "common:sched_process_exit"):
        assert THREADS <= hits[kind] <= most_threads, (kind, hits)
    # at --scope process (the default) a futex wait is a uprobe pair on glibc's function, and
    # a thread's exit is seen at sched_process_exit: one per thread that left by the exit
    # syscall, fewer than the kernel's exits of every task
    assert hits["mem:malloc_pair"] > 0 and hits["threads:futex_libc"] > 0
    assert "threads:futex_pair" not in hits and "threads:sys_enter_exit" not in hits
    assert THREADS <= hits["threads:sched_process_exit"] <= hits["common:sched_process_exit"]
    # every kind is costed or listed as unknown, never silently 0
    costs = t["probe_cost_per_hit_ns"]
    assert set(costs) == set(t["probe_hits"])
    unknown = {kd for kd, c in costs.items() if c["ns"] is None}
    assert set(t["probe_overhead_unknown_kinds"]) == unknown
    assert (t["probe_overhead_ns"] is None) == bool(unknown)
