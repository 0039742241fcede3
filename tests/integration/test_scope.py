"""Uprobes trap only in the traced process (jvmos.scope): bystanders on the same host, a C
malloc loop and a second JVM of the same JDK doing JNI copies, are not probed.

The kernel is asked, not the scripts: with JVMOS_BPF_STATS=1 jvmos turns on the kernel's
per-program run counters (BPF_ENABLE_STATS) and the manifest records how often each scoped
program ran. A program that a bystander trapped into would have run once per bystander call
(2,000,000 mallocs, 300,000 JNI copies), far beyond what the traced JVM's own counts allow."""
import json
import os
import subprocess
import time

import pytest

from conftest import JVMOS, ROOT, can_trace
from test_record import IO_JAR, java

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("bpftrace_engine"),
              pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")]

BYSTANDER = ROOT / "workloads/c/build/bystander"
MALLOCS = 2_000_000
JNI_COPIES = 300_000


def _wait_tracing(manifest, proc, timeout=180):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if manifest.exists():
            try:
                if json.loads(manifest.read_text()).get("start_time"):
                    return
            except ValueError:
                pass            # being rewritten
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    raise AssertionError("the recording did not start")


def test_bystanders_are_not_probed(platform_file, tmp_path):
    out = tmp_path / "scoped"
    # the traced JVM: a write loop that outlasts the recording, killed at the end; bounded by
    # time, not count, since the attach can take minutes while other recordings' uprobes are
    # being detached (the kernel serialises both; 166 s seen here under make test)
    traced = subprocess.Popen([java(), "-cp", str(IO_JAR), "org.jvmos.workloads.BlockingIo",
                               "--iterations", "100000000000", "--seconds", "600",
                               "--size", "10", "--target", "/dev/null"],
                              stdout=subprocess.DEVNULL)
    bystanders = []
    try:
        time.sleep(1.0)
        rec = subprocess.Popen(
            JVMOS + ["record", "--pid", str(traced.pid), "--duration", "8", "--layers",
                     "io,mem", "--mode", "count", "--out", str(out)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
            env=dict(os.environ, JVMOS_BPF_STATS="1"))
        _wait_tracing(out / "manifest.json", rec)
        # both bystanders start once the probes are in place, and end well before the 8 s
        bystanders = [
            subprocess.Popen([str(BYSTANDER), "--loop", "malloc", "--count", str(MALLOCS)],
                             stdout=subprocess.PIPE, text=True),
            subprocess.Popen([java(), "-cp", str(IO_JAR), "org.jvmos.workloads.BlockingIo",
                              "--iterations", str(JNI_COPIES), "--size", "10",
                              "--target", "/dev/null"], stdout=subprocess.DEVNULL)]
        for b in bystanders:
            assert b.wait(timeout=60) == 0
        assert json.loads(bystanders[0].stdout.readline())["count"] == MALLOCS
        stdout, stderr = rec.communicate(timeout=300)
        assert rec.returncode == 0, stderr
    finally:
        for p in [traced] + bystanders:
            if p.poll() is None:
                p.kill()
                p.wait()

    m = json.loads((out / "manifest.json").read_text())
    s = json.loads((out / "summary.json").read_text())
    sc = m["probes"]["scope"]
    assert sc["mode"] == "process" and sc["pids"] == [traced.pid]
    assert sc["uprobes_scoped"] > 0
    # every uprobe bpftrace attached sits on a decoy copy, not on a library a process maps
    script = (out / "probes.bt").read_text()
    for lib in sc["decoys"].values():
        assert f":{lib}:" not in script
    # no bystander appears among the traced processes
    assert set(s["by_pid"]) == {str(traced.pid)}
    assert not ({str(b.pid) for b in bystanders} & set(s["by_pid"]))

    runs = sc["program_runs"]
    assert runs, "no program run counts: JVMOS_BPF_STATS was not honoured"
    hits = s["totals"]["probe_hits"]
    # every entry program (libjvm's JNI copies, libnio's natives, libc's I/O wrappers and
    # allocator) ran as often as the traced JVM's probes were counted: the bystanders'
    # 2,000,000 mallocs and 300,000 JNI copies and writes would have run them too. The kernel's
    # counts are read twice: at the stop signal, and once the maps are printed; the traced pid
    # is cleared by bpftrace's user space between the two (CI saw 9,102,992 runs at the stop
    # for 9,745,428 hits counted), so the hits lie between the two readings
    # Counting starts at jvmos's start signal, once every uprobe is open: the runs before it
    # (read as it was sent, runs_at_start) were filtered out.
    entry = sum(r["runs"] - r["runs_at_start"] for r in runs if not r["ret"])
    entry_later = sum(r["runs_when_maps_printed"] - r["runs_at_start"]
                      for r in runs if not r["ret"])
    counted = sum(hits.get(k, 0) for k in ("io:jni_copy", "io:uprobe", "io:syscall_upair",
                                           "mem:malloc_pair", "mem:vm_syscall_upair"))
    assert hits["io:jni_copy"] > 100_000, hits              # the traced loop really was probed
    tol = max(100, counted // 100)
    # the bystanders would have added millions of runs beyond what was counted
    assert entry - counted <= tol, (entry, counted, entry_later)
    # the other way is not exact on a loaded machine, and why is not known yet: under make
    # test's three workers the counted hits exceeded even the later reading by 5.4% (8,732,415
    # for 8,284,027 runs), on a quiet machine they equalled the runs at the stop (2,349,715);
    # bounded here so that a gross miscount still fails
    assert counted <= entry_later * 1.10, (entry, counted, entry_later)
    # what ran after the stop and before the clear is the traced JVM's loop for a moment,
    # not the bystanders' millions (they had ended before the stop)
    assert entry_later - entry < MALLOCS, (entry, entry_later)
    libc = m["probes"]["libc"]
    malloc_runs = sum(r["runs"] - r["runs_at_start"] for r in runs
                      if r["path"] == libc and not r["ret"])
    # runs are read at the stop, hits when the maps are printed: the same race as above, so
    # the same relative tolerance (CI on 24 Nov: 3,747,036 runs for 3,746,920 hits, +116)
    assert malloc_runs <= hits.get("io:syscall_upair", 0) + hits.get("mem:malloc_pair", 0) \
        + hits.get("mem:vm_syscall_upair", 0) + tol


def test_thread_probes_are_scoped_in_launch_mode(platform_file, tmp_path):
    """The threads layer's uprobes (libjvm's JVM_StartThread, libc's pthread_create, ...) in
    launch mode: a second JVM starting 400 threads beside the recording runs none of them."""
    out = tmp_path / "threads"
    rec = subprocess.Popen(
        JVMOS + ["record", "--layers", "threads", "--out", str(out), "--", java(), "-cp",
                 str(IO_JAR), "org.jvmos.workloads.BlockingIo", "--iterations", "30000000",
                 "--size", "10", "--target", "/dev/null"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        env=dict(os.environ, JVMOS_BPF_STATS="1"))
    by = None
    try:
        _wait_tracing(out / "manifest.json", rec)
        by = subprocess.run([java(), "-cp", str(IO_JAR), "org.jvmos.workloads.NoOpThreads",
                             "--threads", "100", "--repeat", "4", "--warmup", "0"],
                            capture_output=True, text=True, timeout=120)
        assert by.returncode == 0, by.stderr
        _, stderr = rec.communicate(timeout=600)
        assert rec.returncode == 0, stderr
    finally:
        if rec.poll() is None:
            rec.kill()
            rec.wait()
    m = json.loads((out / "manifest.json").read_text())
    s = json.loads((out / "summary.json").read_text())
    sc = m["probes"]["scope"]
    assert sc["mode"] == "process" and len(sc["pids"]) == 1 and sc["uprobes_scoped"] > 0
    runs = [r for r in sc["program_runs"] if not r["ret"]]
    hits = s["totals"]["probe_hits"]
    # entry programs ran exactly as often as the traced JVM's thread probes were counted; the
    # bystander's 400 thread starts (800+ entry hits) would show here
    counted = hits.get("threads:uprobe", 0)
    assert counted > 0, hits
    assert sum(r["runs"] for r in runs) <= counted + 20 < counted + 400, (runs, hits)
