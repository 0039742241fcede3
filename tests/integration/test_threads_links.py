"""The threads and links layers and the platform constants, on real JVMs with real probes."""
import json
import math

import pytest

from conftest import ROOT, can_trace, run_jvmos
from jvmos.jdk import discover_jdks

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")]

IO_JAR = ROOT / "workloads/java/io/target/jvmos-io.jar"


def java(min_version=0):
    for j in discover_jdks():
        try:
            if int(j.version.split(".")[0]) >= min_version:
                return str(j.home / "bin" / "java")
        except ValueError:
            continue
    return None


def record(out, layers, *args):
    r = run_jvmos(["record", "--layers", layers, "--out", str(out), "--", java(), "-cp",
                   str(IO_JAR)] + list(args))
    assert r.returncode == 0, r.stderr
    return json.loads((out / "summary.json").read_text())


def jvm_pid(s):
    """The pid that ran the workload's JVM (the one that started the Java threads)."""
    return max(s["by_pid"], key=lambda p: s["by_pid"][p]["categories"].get(
        "thread_jvm", {}).get("calls", 0))


def test_noop_threads_counts_every_native_thread(platform_file, tmp_path):
    R = 4
    s = record(tmp_path / "noop", "threads", "org.jvmos.workloads.NoOpThreads",
               "--threads", "100", "--repeat", str(R), "--warmup", "0")
    assert s["status"] == "complete"
    pid = jvm_pid(s)
    cats = s["by_pid"][pid]["categories"]
    tc = cats["thread_create"]
    assert tc["layers"]["java"]["threads"] >= 100 * R        # pthread_create from JVM_StartThread
    assert tc["calls"] >= 100 * R
    assert tc["clone_calls"] >= 100 * R                     # clone/clone3 syscalls of that JVM
    assert cats["thread_jvm"]["calls"] >= 100 * R
    java_layers = tc["layers"]["java"]
    for layer in ("libc_ns", "kernel_ns", "jvm_ns"):
        assert java_layers[layer] > 0, layer
    assert cats["thread_wait"]["parts"]["first run delay"]["calls"] >= 100 * R
    assert cats["sync"]["calls"] > 0
    cs = s["by_pid"][pid]["context_switches"]
    assert cs["threads"] >= 100 * R and cs["voluntary"] > 0
    assert s["totals"]["guaranteed_by_resource"]["threads"] == pytest.approx(
        s["categories"]["thread_create"]["time_ns"])


@pytest.mark.skipif(java(21) is None, reason="needs a JDK with virtual threads (21+)")
def test_virtual_threads_create_few_native_threads(platform_file, tmp_path):
    out = tmp_path / "virtual"
    r = run_jvmos(["record", "--layers", "threads", "--out", str(out), "--", java(21), "-cp",
                   str(IO_JAR), "org.jvmos.workloads.NoOpThreads", "--threads", "100",
                   "--repeat", "5", "--warmup", "0", "--virtual"])
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    started = 100 * 5
    tc = s["categories"]["thread_create"]
    assert tc["calls"] < started / 5           # carrier and JVM threads only
    assert "no JVM ran" not in r.stderr


def test_links_layer_counts_accepts_and_opens(platform_file, tmp_path):
    s = record(tmp_path / "accept", "links", "org.jvmos.workloads.LinkBench", "--mode", "accept",
               "--links", "300", "--batch", "50")
    link = s["categories"]["link"]
    accepts = sum(v["calls"] for k, v in link["syscalls"].items() if k.startswith("accept"))
    assert accepts >= 300
    assert link["syscalls"]["connect"]["calls"] >= 300
    assert link["time_ns"] > 0 and link["wall_ns"] >= link["time_raw_ns"]
    s = record(tmp_path / "open", "links", "org.jvmos.workloads.LinkBench", "--mode", "open",
               "--links", "500")
    f = s["categories"]["file"]
    # RandomAccessFile opens with libc's open64: counted as open on libc's functions (--scope
    # process), as openat by the kernel (--scope host)
    opens = sum(f["syscalls"].get(k, {}).get("calls", 0) for k in ("open", "openat"))
    assert opens >= 500 and f["syscalls"]["close"]["calls"] >= 500


def test_calibrate_writes_positive_constants_and_reads_them_back(platform_file):
    data = json.loads(platform_file.read_text())
    k = data["constants"]
    for name in ("C_nt", "C_link", "C_file", "C_io_chunk"):
        v = k[name]
        assert v["mean_us"] > 0 and math.isfinite(v["mean_us"]), name
        lo, hi = v["ci95_us"]
        assert math.isfinite(lo) and math.isfinite(hi) and lo <= v["mean_us"] <= hi, name
    for name in ("malloc_call", "free_call", "page_fault"):
        assert data["copy"][name]["ns_per_call"] > 0, name
    before = platform_file.read_bytes()
    r = run_jvmos(["calibrate"])
    assert r.returncode == 0, r.stderr
    assert platform_file.read_bytes() == before              # nothing recalibrated
    assert "C_nt" in r.stdout and "paper: 173 µs" in r.stdout


def test_calibrate_rejects_a_bad_chunk(platform_file):
    r = run_jvmos(["calibrate", "--chunk", "0"])
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert r.stderr.strip().startswith("jvmos: error: --chunk")


def test_count_mode_runs_every_layer_at_once(platform_file, tmp_path):
    """--mode count drops the time-only lines of every layer: the scripts must still load
    together, and the counts stay exact."""
    out = tmp_path / "count"
    r = run_jvmos(["record", "--mode", "count", "--layers", "io,threads,links,mem", "--out",
                   str(out), "--", java(), "-cp", str(IO_JAR), "org.jvmos.workloads.NoOpThreads",
                   "--threads", "20", "--repeat", "2", "--warmup", "0"])
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["status"] == "complete"
    cats = s["by_pid"][jvm_pid(s)]["categories"]
    assert cats["thread_create"]["clone_calls"] >= 40
    assert cats["thread_create"]["time_partial"]
    assert "per-layer times are partial" in r.stderr
    assert cats["malloc"]["calls"] > 0 and cats["malloc"]["method"] == "estimated"
    assert cats["vm"]["calls"] > 0


def test_spans_are_split_into_blocked_and_on_cpu(platform_file, tmp_path):
    """io_syscall and sync are spans (blocking included); with the threads layer, each is
    split into the time its threads were blocked in those syscalls and an on-CPU estimate,
    per process and in total. The acceptor waits for its peers in futex hand-offs: most of
    sync is blocked."""
    s = record(tmp_path / "split", "io,threads", "org.jvmos.workloads.LinkBench", "--mode",
               "accept", "--links", "300", "--batch", "50")
    sync = s["categories"]["sync"]
    assert sync["blocked_ns"] > sync["on_cpu_ns"] >= 0, sync
    assert "estimated" in sync["on_cpu_basis"]
    for pid, part in s["by_pid"].items():
        c = part["categories"].get("sync")
        if not c or "blocked_ns" not in c:
            continue
        off = part["off_cpu"]
        # the split is the process's own: its span less its off-CPU time in futex
        assert c["blocked_ns"] == off["by_syscall"]["futex"]["blocked_ns"] <= off["blocked_ns"]
        assert c["on_cpu_ns"] == max(0, c["time_ns"] - c["blocked_ns"]
                                     - c["preempted_in_it_ns"])
    # without the threads layer nothing is split
    s = record(tmp_path / "io", "io", "org.jvmos.workloads.LinkBench", "--mode", "accept",
               "--links", "100", "--batch", "50")
    assert "blocked_ns" not in s["categories"].get("io_syscall", {})
