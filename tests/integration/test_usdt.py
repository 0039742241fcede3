"""A JVM whose libjvm.so is stripped: real bpftrace, a real copy of an installed JDK.

`strip` removes the symbol table that the JNI uprobes are found by, but not the ELF notes that
hold HotSpot's USDT probes (provider hotspot_jni), so the JNI layers still count through them.
A copy whose notes are removed as well (objcopy --remove-section=.note.stapsdt: a JDK built
without DTrace probes looks the same) has neither: its JNI probes are named missing, the syscall
probes still run, and the recording says partial (non-zero exit).
"""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, can_trace, run_jvmos
from jvmos.jdk import discover_jdks, usdt_probes

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")]

IO_JAR = ROOT / "workloads/java/io/target/jvmos-io.jar"
SIZE = 10          # bytes per write: one GetByteArrayRegion of 10 bytes each


def _jdk_with_notes():
    for j in discover_jdks():
        if ("hotspot_jni", "GetByteArrayRegion__entry") in usdt_probes(j.libjvm):
            return j
    pytest.skip("no installed JDK carries HotSpot's USDT probes")


def copy_jdk(src: Path, dst: Path, remove_notes: bool = False) -> Path:
    """A JDK at dst whose launcher and libjvm.so are real files (the launcher finds its libjvm
    beside itself, libjvm finds the rest of the JDK through its own path); libjvm.so stripped;
    everything else is a symlink into src (a full copy is ~260 MB)."""
    (dst / "bin").mkdir(parents=True)
    (dst / "lib" / "server").mkdir(parents=True)
    shutil.copy2(src / "bin" / "java", dst / "bin" / "java")
    shutil.copy2(src / "lib" / "server" / "libjvm.so", dst / "lib" / "server" / "libjvm.so")
    for d in ("", "lib", "lib/server"):
        for child in (src / d).iterdir():
            target = dst / d / child.name
            if not os.path.lexists(target):
                target.symlink_to(child)
    lib = dst / "lib" / "server" / "libjvm.so"
    assert not lib.is_symlink()      # strip must never reach the installed file
    cmd = ["strip", str(lib)] if not remove_notes else \
          ["strip", "--remove-section=.note.stapsdt", str(lib)]
    subprocess.run(cmd, check=True)
    return dst


@pytest.fixture(scope="module")
def stripped(tmp_path_factory):
    j = _jdk_with_notes()
    if not shutil.which("strip"):
        pytest.skip("needs binutils (strip)")
    base = tmp_path_factory.mktemp("jdks")
    home = copy_jdk(j.home, base / "stripped")
    bare = copy_jdk(j.home, base / "no-notes", remove_notes=True)
    lib = home / "lib/server/libjvm.so"
    # the premise: no symbol left, the notes still there (and gone from the other copy)
    nm = subprocess.run(["nm", str(lib)], capture_output=True, text=True)
    assert "no symbols" in nm.stderr and "jni_GetByteArrayRegion" not in nm.stdout
    assert usdt_probes(lib) and not usdt_probes(bare / "lib/server/libjvm.so")
    return home, bare


def record(out: Path, java: Path, n: int, layers="io", env=None):
    r = run_jvmos(["record", "--layers", layers, "--out", str(out), "--", str(java), "-cp",
                   str(IO_JAR), "org.jvmos.workloads.BlockingIo", "--iterations", str(n),
                   "--size", str(SIZE), "--target", "/dev/null"], env=env)
    s = json.loads((out / "summary.json").read_text())
    m = json.loads((out / "manifest.json").read_text())
    return r, s, m


def gbar(s):
    return s["categories"]["jni_copy"]["functions"]["GetByteArrayRegion"]


def test_stripped_libjvm_still_counts_jni_copies_through_usdt(own_platform, stripped,
                                                               tmp_path):
    home, _ = stripped
    java = home / "bin" / "java"
    n1, n2 = 20_000, 50_000
    r1, s1, m1 = record(tmp_path / "a", java, n1, env=own_platform)
    # the probes of the JNI copies are USDT probes of the stripped file
    kinds = m1["probes"]["kinds"]
    lib = str(home / "lib/server/libjvm.so")
    for suffix in ("__entry", "__return"):
        assert kinds[f"usdt:{lib}:hotspot_jni:GetByteArrayRegion{suffix}"] == "usdt"
    assert not any(k.startswith(f"uretprobe:{lib}") for k in kinds)
    # nothing of the JNI layer is missing; what is (Unsafe_CopyMemory0: no USDT probe, no
    # symbol) is named, and the status says partial because of it
    missing = [x.rsplit(":", 1)[-1] for x in m1["probes"]["missing"]]
    assert not [x for x in missing if x.startswith("jni_")], missing
    assert "Unsafe_CopyMemory0" in missing
    assert s1["status"] == "partial" and r1.returncode != 0
    assert "partial" in r1.stderr.strip().splitlines()[-1]

    # with the census layer too, n2 writes: the census counts through USDT as well
    r2, s2, m2 = record(tmp_path / "b", java, n2, layers="io,jni", env=own_platform)
    assert s2["status"] == "partial", r2.stderr
    census = s2["categories"]["jni_call"]
    assert census["functions"]["GetByteArrayRegion"] == gbar(s2)["calls"]
    assert sum(1 for k, v in m2["probes"]["kinds"].items()
               if v == "usdt" and k.endswith("__entry")) > 200     # ~235 JNI functions

    # every write is one GetByteArrayRegion of SIZE bytes; the JVM's own start-up copies are
    # the same in both runs, so the difference is exact: (50,000 - 20,000) calls and
    # (50,000 - 20,000) x 10 = 300,000 bytes (len x element size 1, read from the USDT arg3),
    # plus the one thing of variable length, the result line the workload prints through
    # System.out (also a GetByteArrayRegion): its elapsed_ns has as many digits as it has
    assert gbar(s1)["calls"] >= n1 and gbar(s2)["calls"] >= n2
    assert gbar(s2)["calls"] - gbar(s1)["calls"] == n2 - n1
    line = lambda r: next(l for l in r.stdout.splitlines() if l.startswith('{"workload"'))
    assert gbar(s2)["bytes"] - gbar(s1)["bytes"] == (n2 - n1) * SIZE + len(line(r2)) - len(line(r1))
    # time mode: the __return probe closes every span the __entry probe opened
    assert gbar(s1).get("time_raw_ns", gbar(s1)["time_ns"]) > 0
    for s in (s1, s2):
        assert s["totals"]["missed_events"].get("jni_copy_no_entry", 0) == 0


def test_libjvm_without_symbols_or_notes_names_jni_probes_missing(own_platform, stripped,
                                                                   tmp_path):
    _, bare = stripped
    n = 20_000
    r, s, m = record(tmp_path / "c", bare / "bin" / "java", n, env=own_platform)
    assert r.returncode != 0
    assert r.stderr.strip().splitlines()[-1].startswith("jvmos: error:")
    assert s["status"] == "partial" and m["status"] == "partial"
    missing = {x.rsplit(":", 1)[-1] for x in m["probes"]["missing"]}
    assert {"jni_GetByteArrayRegion", "jni_SetByteArrayRegion", "Unsafe_CopyMemory0"} <= missing
    assert not any(v == "usdt" for v in m["probes"]["kinds"].values())
    assert any("skipped" in w and "not found" in w for w in m["warnings"])
    # the rest still ran: every write was counted
    assert s["categories"]["io_syscall"]["syscalls"]["write"]["calls"] >= n
    assert s["categories"].get("jni_copy", {}).get("calls", 0) == 0


def test_attach_to_a_running_jvm_with_stripped_libjvm(own_platform, stripped, tmp_path):
    """--pid: the JVM exists before bpftrace; the USDT probes attach by path all the same."""
    import time
    home, _ = stripped
    lib = str(home / "lib/server/libjvm.so")
    jvm = subprocess.Popen([str(home / "bin" / "java"), "-cp", str(IO_JAR),
                            "org.jvmos.workloads.BlockingIo", "--iterations", "100000000000",
                            "--seconds", "600", "--size", str(SIZE), "--target", "/dev/null"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)
        out = tmp_path / "attach"
        r = run_jvmos(["record", "--pid", str(jvm.pid), "--duration", "3", "--out", str(out)],
                      env=own_platform)
        s = json.loads((out / "summary.json").read_text())
        m = json.loads((out / "manifest.json").read_text())
        assert m["probes"]["kinds"][f"usdt:{lib}:hotspot_jni:GetByteArrayRegion__entry"] == "usdt"
        assert s["status"] == "partial" and r.returncode != 0      # Unsafe_CopyMemory0 missing
        g = gbar(s)
        assert g["calls"] > 1000
        # every copy of the loop is SIZE bytes, read from the USDT probe's len argument.
        # (Copies are not compared with writes here: with --pid, counting starts in BEGIN
        # while bpftrace is still attaching probes one by one, so the write tracepoints and
        # the USDT probes start counting at different moments: measured 503,333 writes for
        # 435,826 copies in one run.)
        assert g["bytes"] == SIZE * g["calls"]
        assert jvm.poll() is None, "the JVM keeps running after jvmos detaches"
    finally:
        jvm.kill()
        jvm.wait()
