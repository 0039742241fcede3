"""Real probes on real processes: what `jvmos record` counts must match what the programs did."""
import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ROOT, JVMOS, can_trace, run_jvmos, wait_for_manifest
from jvmos.jdk import discover_jdks

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")]

IO_JAR = ROOT / "workloads/java/io/target/jvmos-io.jar"
C_LOOP = ROOT / "workloads/c/build/blocking_io"


def java():
    jdks = discover_jdks()
    assert jdks, "no JDK found"
    return str(jdks[0].home / "bin" / "java")


def summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def cat(s, name):
    return s["categories"].get(name, {"calls": 0, "bytes": 0, "functions": {}, "syscalls": {}})


def test_java_loop_counts_every_write_and_jni_copy(platform_file, tmp_path):
    out = tmp_path / "java-loop"
    r = run_jvmos(["record", "--out", str(out), "--", java(), "-cp", str(IO_JAR),
                   "org.jvmos.workloads.BlockingIo", "--iterations", "1000000", "--size", "10",
                   "--target", "/dev/null"])
    assert r.returncode == 0, r.stderr
    s = summary(out)
    assert s["status"] == "complete"
    writes = cat(s, "io_syscall")["syscalls"]["write"]
    assert writes["calls"] >= 1_000_000
    assert writes["bytes"] >= 10_000_000
    gbar = cat(s, "jni_copy")["functions"]["GetByteArrayRegion"]
    assert gbar["calls"] >= 1_000_000
    assert gbar["bytes"] >= 10_000_000
    # the loop's bytes went through the JNI path, and are attributed to it
    assert s["paths"]["jni"]["bytes"] >= 10_000_000
    assert cat(s, "kernel_copy")["method"] == "estimated"
    assert cat(s, "kernel_copy")["time_ns"] > 0
    assert s["totals"]["wall_ns"] > 0
    m = json.loads((out / "manifest.json").read_text())
    assert m["status"] == "complete" and m["jvms_probed"] and m["engine"]["name"] == "bpf"
    # complete means: after the stop the engine handed over its final maps and closed every
    # link, and exited 0
    assert s["status_reason"] is None
    assert m["engine"]["end"] == "stopped by jvmos: final maps read, every link closed"
    assert m["engine_exit_status"] == 0
    assert m["teardown_seconds"] is not None and m["attach_seconds"] is not None
    maps = json.loads((out / "raw" / "engine.json").read_text())   # as the engine handed it
    assert maps and (out / "probes.plan.json").exists()
    assert any(x.get("symbol") == "jni_GetByteArrayRegion" for x in m["probes"]["sites"])
    assert not (out / "probes.bt").exists() and not (out / "raw" / "bpftrace.json").exists()
    # report reads it back later, without the process
    rep = run_jvmos(["report", str(out)])
    assert rep.returncode == 0 and "jni_copy" in rep.stdout


def test_c_loop_has_no_jni_and_still_traces_syscalls(platform_file, tmp_path):
    out = tmp_path / "c-loop"
    r = run_jvmos(["record", "--out", str(out), "--", str(C_LOOP), "--iterations", "1000000",
                   "--size", "10"])
    assert r.returncode == 0, r.stderr
    assert "not a JVM" in r.stderr and "Traceback" not in r.stderr
    s = summary(out)
    assert cat(s, "jni_copy")["calls"] == 0
    assert cat(s, "io_syscall")["syscalls"]["write"]["calls"] >= 1_000_000


def test_socket_stream_copies_through_nio_not_jni(platform_file, tmp_path):
    out = tmp_path / "socket"
    n = 200_000
    r = run_jvmos(["record", "--out", str(out), "--", java(), "-cp", str(IO_JAR),
                   "org.jvmos.workloads.SocketStream", "--writes", str(n), "--size", "10"])
    assert r.returncode == 0, r.stderr
    s = summary(out)
    writes = cat(s, "io_syscall")["syscalls"]["write"]["calls"]
    assert writes >= n
    jni = cat(s, "jni_copy")["functions"]
    region = sum(f["calls"] for name, f in jni.items() if name.endswith("ArrayRegion"))
    assert region < 0.01 * writes
    nio = cat(s, "nio_copy")
    assert nio["bytes"] >= n * 10          # the client's bytes (and the server's reads)
    assert nio["calls"] >= n
    assert nio["method"] == "estimated" and nio["time_ns"] > 0


def test_attach_by_pid_detaches_and_jvm_exits_normally(platform_file, tmp_path):
    out = tmp_path / "attach"
    # the loop runs until the test makes its stop file, after the recording (at most 600 s:
    # longer than the attach takes while other tests' probes are being torn down, the kernel
    # serialising uprobe attach and detach; 53 s seen here), then ends by itself
    stop = tmp_path / "stop"
    jvm = subprocess.Popen([java(), "-cp", str(IO_JAR), "org.jvmos.workloads.BlockingIo",
                            "--iterations", "100000000000", "--seconds", "600", "--size", "10",
                            "--target", "/dev/null", "--stop-file", str(stop)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(1.0)
        r = run_jvmos(["record", "--pid", str(jvm.pid), "--duration", "3", "--out", str(out)])
        assert r.returncode == 0, r.stderr
        assert jvm.poll() is None, "the JVM must keep running after jvmos detaches"
        s = summary(out)
        assert s["status"] == "complete"
        assert cat(s, "io_syscall")["syscalls"]["write"]["calls"] > 1000
        assert cat(s, "jni_copy")["functions"]["GetByteArrayRegion"]["calls"] > 1000
        # libc's wrappers against the kernel's own count of the JVM's writes over the
        # recording (/proc/PID/io, read on both sides of the start and the stop of counting):
        # the loop's writes all go through write(3), so the wrappers' count lies in that range
        b = s["totals"]["io_wrapper_bound"]
        lo, hi = b["kernel_writes_range"]
        assert b["pid"] == jvm.pid and lo > 1000
        assert lo <= b["wrapper_writes"] <= hi and b["writes_not_seen_at_least"] == 0, b
        stop.touch()
        out_, err = jvm.communicate(timeout=120)
        assert jvm.returncode == 0, err
        assert json.loads(out_.splitlines()[-1])["ops"] > 1000
    finally:
        if jvm.poll() is None:
            jvm.kill()


def test_attach_stops_on_sigterm_and_writes_results(platform_file, tmp_path):
    out = tmp_path / "sigterm"
    jvm = subprocess.Popen([java(), "-cp", str(IO_JAR), "org.jvmos.workloads.BlockingIo",
                            "--iterations", "2000000000", "--size", "10", "--target", "/dev/null"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)
        rec = subprocess.Popen(JVMOS + ["record", "--pid", str(jvm.pid), "--out", str(out)],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for_manifest(out, started=True)
        time.sleep(2)
        rec.send_signal(signal.SIGTERM)
        _, err = rec.communicate(timeout=300)
        assert rec.returncode == 0, err
        assert summary(out)["status"] == "complete"
        assert jvm.poll() is None
    finally:
        jvm.kill()


def test_interrupted_launch_is_marked_interrupted(platform_file, tmp_path):
    out = tmp_path / "interrupted"
    rec = subprocess.Popen(JVMOS + ["record", "--out", str(out), "--", "sleep", "60"],
                           cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # a signal before the start is another case ("interrupted before tracing started", no
    # summary)
    wait_for_manifest(out, started=True)
    time.sleep(1)
    rec.send_signal(signal.SIGINT)
    _, err = rec.communicate(timeout=600)
    assert rec.returncode != 0
    s = summary(out)
    assert s["status"] == "interrupted", "an interrupted run must not look complete"
    assert "SIGINT stopped the command" in s["status_reason"]
    assert json.loads((out / "manifest.json").read_text())["status"] == "interrupted"
    assert "Traceback" not in err
    errors = [l for l in err.splitlines() if l.startswith("jvmos: error:")]
    assert len(errors) == 1 and "recording interrupted" in errors[0]


def test_child_jvm_of_a_shell_command_is_traced(platform_file, tmp_path):
    out = tmp_path / "child"
    r = run_jvmos(["record", "--out", str(out), "--", "/bin/sh", "-c",
                   f"'{java()}' -cp '{IO_JAR}' org.jvmos.workloads.BlockingIo --iterations 100000"
                   " --size 10 --target /dev/null; true"])
    assert r.returncode == 0, r.stderr
    s = summary(out)
    assert cat(s, "jni_copy")["functions"]["GetByteArrayRegion"]["calls"] >= 100_000
    # the shell and its java child are both traced, each under its own pid
    jvm_pids = [p for p, v in s["by_pid"].items()
                if v["categories"].get("jni_copy", {}).get("calls", 0) >= 100_000]
    assert len(jvm_pids) == 1 and len(s["by_pid"]) >= 2


def test_every_layer_records_with_bpftrace_absent(platform_file, tmp_path):
    """jvmos records with its own engine: every layer, in both modes, with no bpftrace on the
    PATH (a directory holding every other program of /usr/bin and /bin). bpftrace remains
    only the tests' witness, ipc's network counter and the accuracy sampler's."""
    import os
    import shutil
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for d in ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"):
        for p in Path(d).iterdir() if Path(d).is_dir() else []:
            if p.name != "bpftrace" and not (bin_dir / p.name).exists():
                (bin_dir / p.name).symlink_to(p)
    path = f"{ROOT / '.venv/bin'}:{bin_dir}"
    assert shutil.which("bpftrace", path=path) is None
    for mode in ("time", "count"):
        out = tmp_path / mode
        r = run_jvmos(["record", "--layers", "io,jni,threads,links,mem", "--mode", mode,
                       "--out", str(out), "--", java(), "-cp", str(IO_JAR),
                       "org.jvmos.workloads.BlockingIo", "--iterations", "20000", "--size", "10",
                       "--target", "/dev/null"], env={"PATH": path}, timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
        s = summary(out)
        assert s["status"] == "complete", s.get("warnings")
        # every layer counted what the loop makes it do: its copies (io), its JNI calls
        # (jni), the JVM's threads (threads), its file opens (links), its allocations (mem)
        for c, least in (("jni_copy", 20000), ("jni_call", 20000), ("thread_create", 1),
                         ("file", 1), ("malloc", 1)):
            assert cat(s, c)["calls"] >= least, (mode, c, cat(s, c)["calls"])
        assert not any("bpftrace" in p.read_text() for p in out.rglob("*.json")
                       if p.name == "manifest.json"), "the manifest names bpftrace"
        assert os.path.exists(out / "raw" / "engine.json")
