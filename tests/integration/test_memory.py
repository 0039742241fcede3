"""The memory layer on real JVMs, and the memory experiment's input checks."""
import json

import pytest

from conftest import ROOT, can_trace, run_jvmos
from jvmos.jdk import discover_jdks

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")]

IO_JAR = ROOT / "workloads/java/io/target/jvmos-io.jar"


def java():
    return str(discover_jdks()[0].home / "bin" / "java")


def test_direct_buffers_are_counted_as_mallocs(platform_file, tmp_path):
    n = 3000
    out = tmp_path / "direct"
    r = run_jvmos(["record", "--layers", "mem", "--out", str(out), "--", java(), "-cp",
                   str(IO_JAR), "org.jvmos.workloads.NativeAlloc", "--direct", str(n),
                   "--size", "4096"])
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    m = s["categories"]["malloc"]
    # every ByteBuffer.allocateDirect is one Unsafe.allocateMemory -> os::malloc -> malloc
    assert m["functions"]["malloc"]["calls"] >= n
    assert m["functions"]["malloc"]["bytes"] >= n * 4096
    assert m["time_ns"] > 0 and "free" not in m["functions"]
    # the frees are not probed: estimated apart, one per block allocated, never in malloc.calls
    fe = s["categories"]["free_estimated"]
    assert fe["method"] == "estimated" and fe["calls_method"] == "estimated"
    assert fe["calls"] == sum(f["calls"] for k, f in m["functions"].items() if k != "realloc")
    assert m["calls"] == sum(f["calls"] for f in m["functions"].values())
    assert s["totals"]["guaranteed_by_resource"]["mem"] > 0


def test_a_growing_heap_maps_memory(platform_file, tmp_path):
    out = tmp_path / "heap"
    r = run_jvmos(["record", "--layers", "mem", "--out", str(out), "--", java(), "-Xms8m",
                   "-Xmx512m", "-cp", str(IO_JAR), "org.jvmos.workloads.NativeAlloc",
                   "--direct", "0", "--heap-mb", "200"])
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    vm = s["categories"]["vm"]["syscalls"]
    assert vm.get("mmap", {}).get("calls", 0) + vm.get("brk", {}).get("calls", 0) > 0
    # 200 MB of arrays touched: at least that many fresh pages faulted in
    assert s["categories"]["vm"]["page_faults"] >= 200 * 256 * 0.5
    growth = [p["memory_growth"] for p in s["by_pid"].values() if "memory_growth" in p]
    assert growth and sum(b for _, b in growth[0]["vm_bytes"]) > 0


@pytest.mark.parametrize("name,content,msg", [
    ("missing.jar", None, "no such file"),
    ("plain.jar", "not a zip", "not a jar"),
])
def test_dacapo_jar_must_be_a_dacapo_jar(tmp_path, name, content, msg):
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    r = run_jvmos(["run", "memory", "--dacapo-jar", str(path), "--out", str(tmp_path / "out")])
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert r.stderr.startswith("jvmos: error: --dacapo-jar") and msg in r.stderr


def test_a_jar_that_is_not_dacapo(tmp_path):
    r = run_jvmos(["run", "memory", "--dacapo-jar", str(IO_JAR), "--out", str(tmp_path / "o")])
    assert r.returncode != 0 and "not DaCapo's" in r.stderr and "Traceback" not in r.stderr
