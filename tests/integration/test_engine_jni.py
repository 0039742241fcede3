"""The compiled JNI census (`jvmos record --layers jni`, probes/jni.bpf.c) on a
real JVM, with bpftrace as the independent witness, and on a stripped libjvm.so through
HotSpot's USDT probes.

One deterministic program (BlockingIo, interpreted: the same JNI calls on every run) is
recorded
  - by the engine on the installed JDK (symbol uprobes on the jni_* functions), while a
    bpftrace witness counts a few of those functions with its own uprobes, per pid: the
    engine's per-function counts for the recorded pid must equal the witness's;
  - by the engine on a JDK whose libjvm.so is stripped (no jni_* symbol left, the notes
    kept): every probe is a USDT site, and the counts must equal the unstripped run's, and a
    bpftrace witness's on the stripped file's USDT probes.
"""
import json
import secrets
import shutil
from pathlib import Path

import pytest

from conftest import bpftrace_witness, stop_witness, ROOT, can_trace, run_jvmos
from test_usdt import copy_jdk
from jvmos.jdk import symbols, usdt_probes

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")]

ENGINE = ROOT / "build/jvmos-engine"
IO_JAR = ROOT / "workloads/java/io/target/jvmos-io.jar"
JDK = Path("/usr/lib/jvm/java-17-openjdk-amd64")
ITERATIONS = 1000
# functions the program calls a known number of times or more (one write = one of each of the
# first three, libjava's writeBytes), and the witness counts
WITNESSED = ("GetByteArrayRegion", "GetArrayLength", "GetObjectField", "ExceptionOccurred")


def program(java: Path) -> list:
    return [str(java), "-Xint", "-cp", str(IO_JAR), "org.jvmos.workloads.BlockingIo",
            "--iterations", str(ITERATIONS), "--size", "10", "--target", "/dev/null"]


@pytest.fixture(scope="module", autouse=True)
def _built():
    if not ENGINE.exists():
        pytest.fail("build/jvmos-engine is not built: make build")
    if not (ROOT / "build/probes/jni.bpf.o").exists():
        pytest.fail("build/probes/jni.bpf.o is not built: make build")
    if not IO_JAR.exists():
        pytest.skip(f"{IO_JAR} is not built")
    if not (JDK / "lib/server/libjvm.so").exists():
        pytest.skip(f"needs {JDK}")


class Witness:
    """bpftrace counting the probes it is given into @n[pid, probe], attached before the
    workload starts; stop() -> {pid: {probe: n}}."""

    def __init__(self, tmp: Path, probes: list):
        self.out = tmp / f"witness-{secrets.token_hex(3)}.json"
        self.p = bpftrace_witness(self.out, ",".join(probes) + " { @n[pid, probe] = count(); }")

    def stop(self) -> dict:
        stop_witness(self.p)
        seen = {}
        for line in self.out.read_text().splitlines():
            rec = json.loads(line)
            if rec.get("type") == "map" and "@n" in rec["data"]:
                for key, n in rec["data"]["@n"].items():
                    pid, probe = key.split(",", 1)
                    seen.setdefault(int(pid), {})[probe] = n
        return seen


def record(out: Path, java: Path, witness: list = ()):
    """The program recorded with the jni layer: (summary, manifest, witness counts of the
    recorded pid by function)."""
    w = Witness(out.parent, list(witness)) if witness else None
    try:
        r = run_jvmos(["record", "--layers", "jni", "--out", str(out),
                       "--"] + program(java), timeout=600)
    finally:
        seen = w.stop() if w else {}
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    m = json.loads((out / "manifest.json").read_text())
    assert s["status"] == "complete", s["status"]
    pids = [p for p, v in s["by_pid"].items() if "jni_call" in v["categories"]]
    assert len(pids) == 1, pids
    by_fn = {}
    for probe, n in seen.get(int(pids[0]), {}).items():
        fn = probe.rsplit(":", 1)[-1]
        fn = fn[len("jni_"):] if fn.startswith("jni_") else fn[: -len("__entry")]
        by_fn[fn] = by_fn.get(fn, 0) + n
    return s, m, by_fn


def census(s: dict) -> dict:
    return s["categories"]["jni_call"]["functions"]


@pytest.fixture(scope="module")
def unstripped(platform_file, tmp_path_factory):
    lib = JDK / "lib/server/libjvm.so"
    tmp = tmp_path_factory.mktemp("jni-unstripped")
    return record(tmp / "rec", JDK / "bin/java",
                  [f"uprobe:{lib}:jni_{fn}" for fn in WITNESSED])


@pytest.fixture(scope="module")
def stripped(platform_file, tmp_path_factory):
    if not shutil.which("strip"):
        pytest.skip("needs binutils (strip)")
    if ("hotspot_jni", "GetByteArrayRegion__entry") not in usdt_probes(JDK / "lib/server/libjvm.so"):
        pytest.skip(f"{JDK}'s libjvm.so carries no hotspot_jni USDT probes")
    tmp = tmp_path_factory.mktemp("jni-stripped")
    home = copy_jdk(JDK, tmp / "jdk")    # libjvm.so stripped, the rest linked
    lib = home / "lib/server/libjvm.so"
    # the premise: no JNI symbol left, the notes still there
    assert not any(s.startswith("jni_") for s in symbols(lib)) and usdt_probes(lib)
    s, m, seen = record(tmp / "rec", home / "bin/java",
                        [f"usdt:{lib}:hotspot_jni:{fn}__entry" for fn in WITNESSED])
    return s, m, seen, lib


def test_census_agrees_with_bpftrace_witness(unstripped):
    s, m, seen = unstripped
    fns = census(s)
    for fn in WITNESSED:
        assert fns.get(fn, 0) == seen.get(fn, 0), (fn, fns.get(fn), seen.get(fn))
    # the program's writes: one GetByteArrayRegion each, at least
    assert fns["GetByteArrayRegion"] >= ITERATIONS
    # every probe a symbol uprobe on a JNI entry point, said so in the manifest
    kinds = m["probes"]["kinds"]
    jni = [k for k in kinds if ":jni_" in k]
    assert len(jni) >= 200 and all(kinds[k] == "uprobe" for k in jni)
    assert m["probes"]["usdt"] == 0
    assert not any(x.get("kind") == "usdt" for x in m["probes"]["sites"])


def test_stripped_libjvm_counts_through_usdt(unstripped, stripped):
    s, m, seen, lib = stripped
    # every JNI probe is a USDT site of the stripped file, a nop, emulated, never moved
    kinds = m["probes"]["kinds"]
    usdt = [k for k in kinds if k.startswith(f"usdt:{lib}:hotspot_jni:")]
    assert len(usdt) >= 200 and all(kinds[k] == "usdt" for k in usdt)
    assert m["probes"]["usdt"] == len(usdt) and m["probes"]["uprobes"] == 0
    sites = m["probes"]["sites"]
    assert sites and all(x["kind"] == "usdt" and x["class"] == "emulated" and x["shift"] == 0
                         and x["insn"] == "nop" for x in sites), sites[:3]
    # the census reads the JNI function names, as on the unstripped JDK: the same counts
    a, b = census(unstripped[0]), census(s)
    assert a == b, {k: (a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k)}
    for fn in WITNESSED:
        assert b.get(fn, 0) == seen.get(fn, 0), (fn, b.get(fn), seen.get(fn))


def test_stripped_libjvm_io_copies_through_usdt_arguments(unstripped, stripped, tmp_path):
    """io + jni on the stripped libjvm, --mode time: the JNI Region copies are counted
    through their USDT probes, their bytes read from the note's argument specs (len, buf),
    timed to their __return probes; the copy functions are io's, the census adds them."""
    _, _, _, lib = stripped
    java = lib.parent.parent.parent / "bin/java"
    out = tmp_path / "rec"
    r = run_jvmos(["record", "--layers", "io,jni", "--mode", "time",
                   "--out", str(out), "--"] + program(java), timeout=600)
    s = json.loads((out / "summary.json").read_text())
    m = json.loads((out / "manifest.json").read_text())
    # partial: Unsafe_CopyMemory0 has no USDT probe, and is named missing
    assert r.returncode in (0, 1), r.stderr
    assert any("Unsafe_CopyMemory0" in x for x in m["probes"]["missing"])
    g = s["categories"]["jni_copy"]["functions"]["GetByteArrayRegion"]
    assert g["calls"] == census(unstripped[0])["GetByteArrayRegion"]
    # every write of the program copies 10 bytes; the rest are the program's own prints,
    # whose length varies by a few digits from run to run
    assert 10 * ITERATIONS <= g["bytes"] <= 10 * ITERATIONS + 40_000
    assert g["time_hits"] == g["calls"]
    assert census(s) == census(unstripped[0])
    kinds = m["probes"]["kinds"]
    assert kinds[f"usdt:{lib}:hotspot_jni:GetByteArrayRegion__entry"] == "usdt"
    assert kinds[f"usdt:{lib}:hotspot_jni:GetByteArrayRegion__return"] == "usdt"
    assert not [w for w in s.get("warnings", []) if "USDT probe whose length" in w]
