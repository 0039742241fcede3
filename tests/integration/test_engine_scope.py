"""The engine's uprobes trap only in the traced processes: bystanders on the same host, a C
malloc loop and a second JVM of the same JDK making JNI copies, never run the probes.

The kernel is asked, not the programs' own counts: with the plan's `stats` on, the engine turns
on the kernel's per-program run counters (BPF_ENABLE_STATS) and hands back each program's run
count. A program that a bystander trapped into would have run once per bystander call
(2,000,000 mallocs, 300,000 JNI copies), far beyond the traced JVM's own calls, which the same
programs counted for its pid. (What replaced the decoy libraries' test when bpftrace retired.)"""
import subprocess
from typing import Optional

import pytest

from conftest import ROOT, can_trace
from jvmos import enginecost
from jvmos.jdk import discover_jdks, libc_of

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")]

IO_JAR = ROOT / "workloads/java/io/target/jvmos-io.jar"
BYSTANDER = ROOT / "workloads/c/build/bystander"
MALLOCS = 2_000_000
JNI_COPIES = 300_000


def test_bystanders_never_run_the_probes(tmp_path):
    jdk = discover_jdks()[0]
    java = str(jdk.home / "bin/java")
    loop = [java, "-cp", str(IO_JAR), "org.jvmos.workloads.BlockingIo", "--size", "10",
            "--target", "/dev/null"]
    done = {}

    def bystanders():
        # while the traced JVM runs (it loops for 6 s): both bystanders end well before it
        done["malloc"] = subprocess.run([str(BYSTANDER), "--loop", "malloc", "--count",
                                         str(MALLOCS)], capture_output=True, timeout=300)
        done["jvm"] = subprocess.run(loop + ["--iterations", str(JNI_COPIES)],
                                     capture_output=True, timeout=300)
    libs = {"LIBJVM": [jdk.libjvm], "LIBNIO": [jdk.libnio] if jdk.libnio else [],
            "LIBC": [libc_of()]}
    _, raw, _ = enginecost.run_cmd(loop + ["--iterations", "100000000000", "--seconds", "6"],
                                   layers=["io", "mem"], run_mode="count", libs=libs,
                                   workload=bystanders, stats=True)
    assert done["malloc"].returncode == 0 and done["jvm"].returncode == 0
    runs = {k: v[0] for k, v in raw.prog_stats.items()}
    calls = raw.keyed("calls")
    traced_copies = sum(int(v) for (pid, cat, probe), v in calls.items()
                        if cat == "jni_copy" and probe.endswith(":jni_GetByteArrayRegion"))
    traced_mallocs = sum(int(v) for (pid, cat, probe), v in calls.items() if cat == "malloc")
    assert traced_copies > 1000 and len({pid for (pid, _, _) in calls}) == 1, calls
    # every run of the copy program is one of the traced JVM's copies (the other Region
    # copies share the program: a small margin), none of the bystander JVM's 300,000
    jni_runs = runs.get("io:jni_get_region", 0)
    print("runs", runs, "traced copies", traced_copies, "traced mallocs", traced_mallocs)
    assert traced_copies <= jni_runs < traced_copies + 10_000, (jni_runs, traced_copies)
    # the allocator's entry program ran for the traced JVM's calls only, not the 2,000,000
    alloc_runs = runs.get("mem:alloc_entry", 0)
    assert traced_mallocs <= alloc_runs < traced_mallocs + 10_000, (alloc_runs, traced_mallocs)


def _raw_tracepoints_of(pid: int) -> list:
    """The raw (BTF) tracepoint links a process holds, by tracepoint, one entry per link:
    read from the kernel's fdinfo of its link descriptors, not from the engine"""
    import os
    got = []
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            info = dict(line.split(":", 1) for line in
                        open(f"/proc/{pid}/fdinfo/{fd}").read().splitlines() if ":" in line)
        except OSError:
            continue
        if info.get("link_type", "").strip() == "raw_tracepoint":
            got.append(info.get("tp_name", "").strip())
    return sorted(got)


def _syscall_tracepoints_while_recording(tmp_path, layers: str, scope: str,
                                         mode: str = "time", raw: Optional[list] = None) -> list:
    """The syscall tracepoints the kernel holds for the engine of one recording, while it
    traces (bpftool's list of perf events, by the engine's pid): read from the kernel, not
    from the engine or its plan. `raw`, when given, gets the engine's raw tracepoint links
    (_raw_tracepoints_of)."""
    import json
    import os
    import shutil
    import sys
    out = tmp_path / f"rec-{scope}"
    # a copy of the session's platform file: a recording may add to its own (a JDK met for the
    # first time), and the shared one must stay as the other tests found it
    plat = tmp_path / f"platform-{scope}.json"
    shutil.copy(os.environ["JVMOS_PLATFORM"], plat)
    p = subprocess.Popen([sys.executable, "-m", "jvmos.cli", "record", "--layers", layers,
                          "--scope", scope, "--mode", mode, "--platform", str(plat),
                          "--out", str(out), "--",
                          "sleep", "8"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         cwd=ROOT)
    try:
        for line in p.stderr:               # the engine is attached once it says it traces
            if "tracing pid" in line:
                break
        else:
            raise AssertionError("the recording never started tracing")
        engines = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                exe = os.readlink(f"/proc/{pid}/exe")
                ppid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            if exe.endswith("jvmos-engine") and ppid == p.pid:
                engines.append(int(pid))
        assert len(engines) == 1, engines
        if raw is not None:
            raw.extend(_raw_tracepoints_of(engines[0]))
        perf = json.loads(subprocess.run(["bpftool", "perf", "list", "-j"], capture_output=True,
                                         text=True, check=True).stdout or "[]")
        return [x["tracepoint"] for x in perf if x.get("pid") == engines[0]
                and x.get("fd_type") == "tracepoint"
                and x.get("tracepoint", "").startswith(("sys_enter_", "sys_exit_"))]
    finally:
        p.communicate(timeout=120)         # drains its stderr to the end


def test_process_scope_enables_no_syscall_tracepoint(platform_file, tmp_path):
    """Issue 31: at --scope process a full recording (every layer that watches syscalls)
    holds no syscall tracepoint (every task of the host would pay for one); at --scope host
    the same check sees the threads and links layers', so it can fail."""
    host = _syscall_tracepoints_while_recording(tmp_path, "threads,links", "host")
    assert {"sys_enter_accept", "sys_exit_close", "sys_enter_futex", "sys_enter_clone3"} \
        <= set(host), host
    assert _syscall_tracepoints_while_recording(tmp_path, "io,threads,links,mem",
                                                "process") == []


def test_one_scheduler_program_for_every_layer(platform_file, tmp_path):
    """The layers' scheduler handlers run from one sched_switch program (common.bpf.h's
    chain), which every context switch on the host pays for; in --mode count no sched_wakeup
    program is attached (it only starts the run-queue waits of --mode time). Read from the
    engine's link descriptors, in both modes, so that either half can fail."""
    count, time_ = [], []
    for d in ("count", "time"):
        (tmp_path / d).mkdir()
    _syscall_tracepoints_while_recording(tmp_path / "count", "io,threads,links,mem", "process",
                                         mode="count", raw=count)
    _syscall_tracepoints_while_recording(tmp_path / "time", "io,threads,links,mem", "process",
                                         mode="time", raw=time_)
    for got in (count, time_):
        assert got.count("sched_switch") == 1, got
        assert "sched_process_fork" in got, got      # the list is the engine's, and complete
    assert "sched_wakeup" not in count, count
    assert time_.count("sched_wakeup") == 1, time_
