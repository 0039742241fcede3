"""User page faults in the Java heap (the mem layer's @fault_region, the heap's range read
with jcmd GC.heap_info after counting stops): `jvmos record --pid` of a live JVM that, once
counting has started, allocates a 64 MiB long[] in a fixed heap (-Xms = -Xmx) and writes to
every 4 KiB page of it. Without AlwaysPreTouch those pages are first touched then, 16,384
faults inside the heap; with -XX:+AlwaysPreTouch the JVM touched its whole heap at startup,
before the recording, and the heap faults while counting are a small fraction of that.
Before the array, the program also allocates a 1 MiB direct buffer (malloc'd outside the heap
and zeroed): 256 first touches that are page faults but not heap faults, so that a recording
whose mem layer counted nothing cannot pass for a heap that did not fault."""
import subprocess
from pathlib import Path

import pytest

from conftest import can_trace, record_between_markers
from jvmos.jdk import discover_jdks

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")]

ARRAY_PAGES = (64 << 20) // 4096            # 16,384: the pages of the 64 MiB array
DIRECT_PAGES = (1 << 20) // 4096            # 256: the pages of the direct buffer

TOUCH = """
import java.nio.file.*;

public class Touch {
    public static void main(String[] a) throws Exception {
        Path dir = Paths.get(a[0]);
        Files.write(dir.resolve("ready"), new byte[0]);
        while (!Files.exists(dir.resolve("go"))) Thread.sleep(20);
        java.nio.ByteBuffer direct = java.nio.ByteBuffer.allocateDirect(1 << 20);  // zeroed
        long[] x = new long[8 << 20];                         // 64 MiB
        for (int i = 0; i < x.length; i += 512) x[i] = i;     // a write to every 4 KiB page
        long sum = direct.get(4096);
        for (int i = 0; i < x.length; i += 512) sum += x[i];
        Files.write(dir.resolve("done"), Long.toString(sum).getBytes());
        Thread.sleep(600_000);
    }
}
"""


def record_touch(tmp_path: Path, *jvm_flags) -> tuple:
    """(summary, manifest) of a recording of the Touch program's allocation."""
    if "[always]" in Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text():
        pytest.skip("transparent huge pages are always on: a fault may give 2 MiB, not 4 KiB")
    java = discover_jdks()[0].home / "bin" / "java"
    src = tmp_path / "Touch.java"
    src.write_text(TOUCH)
    # a fixed heap: a growing one would commit (and could move) its range as it grows
    jvm = subprocess.Popen([str(java), "-Xms256m", "-Xmx256m", "-XX:+UseG1GC", *jvm_flags,
                            str(src), str(tmp_path)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    s, m = record_between_markers(tmp_path, jvm, ["--layers", "mem"])
    heap = m["java_heap"]
    assert heap["pid"] == jvm.pid and heap["collector"] == "G1", heap
    assert heap["end"] - heap["start"] == 256 << 20 and heap["source"] == "jcmd GC.heap_info"
    return s, m


def test_first_touches_of_the_heap_are_heap_faults(platform_file, tmp_path):
    s, m = record_touch(tmp_path)
    vm = s["categories"]["vm"]
    print(f"page_faults {vm['page_faults']:,}, page_faults_heap {vm['page_faults_heap']:,}")
    # every page of the array is first touched while counting ran (the JVM faulted in only
    # the few regions it used before)
    assert vm["page_faults_heap"] >= ARRAY_PAGES * 0.95
    assert vm["page_faults_heap"] <= vm["page_faults"]
    assert vm["page_faults"] - vm["page_faults_heap"] >= DIRECT_PAGES, vm
    assert "2 MiB" in vm["page_faults_heap_method"]
    assert not vm.get("page_faults_unregioned")
    jvm = s["by_pid"][str(m["attach_pid"])]["categories"]["vm"]
    assert jvm["page_faults_heap"] == vm["page_faults_heap"]


def test_a_pretouched_heap_has_few_heap_faults(platform_file, tmp_path):
    s, _ = record_touch(tmp_path, "-XX:+AlwaysPreTouch")
    vm = s["categories"]["vm"]
    print(f"page_faults {vm['page_faults']:,}, page_faults_heap {vm['page_faults_heap']:,}")
    # the heap was touched whole at startup: the array's pages fault no more
    assert vm["page_faults_heap"] is not None and vm["page_faults_heap"] < ARRAY_PAGES / 10
    assert vm["page_faults_heap"] <= vm["page_faults"]
    # faults outside the heap were counted: the direct buffer's 256 first touches at least
    # (with the JIT's, metaspace's and the collector's: this does not isolate the buffer, it
    # shows that the mem layer counted where a pretouched heap leaves it little to count)
    assert vm["page_faults"] - vm["page_faults_heap"] >= DIRECT_PAGES, vm
