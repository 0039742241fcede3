"""The Java heap's range (jvmos/javaheap.py, parsing real `jcmd PID GC.heap_info` output) and
the page faults counted in it (analyzers/mem.heap_faults, the summary, the what-if counts and
the report's line)."""
import os
import stat
from pathlib import Path

import pytest

from jvmos import engine as eng
from jvmos import javaheap
from jvmos.analyzers import mem
from jvmos.analyzers.bpftrace import parse_lines
from jvmos.analyzers import summary as summ
from jvmos.catalogue import MEM_ALLOCATOR
from jvmos.enginelayers import mem as mem_layer
from jvmos.heuristic import whatif
from jvmos.report import page_fault_line

from _unit_helpers import map_lines

# Real outputs, of `java -Xms256m -Xmx256m [GC flag]` on this project's test host (the pid
# line is jcmd's own): OpenJDK 17.0.15 (Debian) and Temurin 25.
G1_17 = """7238:
 garbage-first heap   total 262144K, used 67999K [0x00000000f0000000, 0x0000000100000000)
  region size 1024K, 1 young (1024K), 0 survivors (0K)
 Metaspace       used 77K, committed 320K, reserved 1114112K
  class space    used 3K, committed 128K, reserved 1048576K
"""
PARALLEL_17 = """7295:
 PSYoungGen      total 76288K, used 5243K [0x00000000fab00000, 0x0000000100000000, 0x0000000100000000)
  eden space 65536K, 8% used [0x00000000fab00000,0x00000000fb01ec98,0x00000000feb00000)
  from space 10752K, 0% used [0x00000000ff580000,0x00000000ff580000,0x0000000100000000)
  to   space 10752K, 0% used [0x00000000feb00000,0x00000000feb00000,0x00000000ff580000)
 ParOldGen       total 175104K, used 65536K [0x00000000f0000000, 0x00000000fab00000, 0x00000000fab00000)
  object space 175104K, 37% used [0x00000000f0000000,0x00000000f4000010,0x00000000fab00000)
 Metaspace       used 128K, committed 320K, reserved 1114112K
  class space    used 3K, committed 128K, reserved 1048576K
"""
SERIAL_17 = """7335:
 def new generation   total 78656K, used 69733K [0x00000000f0000000, 0x00000000f5550000, 0x00000000f5550000)
  eden space 69952K,  99% used [0x00000000f0000000, 0x00000000f44194d8, 0x00000000f4450000)
  from space 8704K,   0% used [0x00000000f4450000, 0x00000000f4450000, 0x00000000f4cd0000)
  to   space 8704K,   0% used [0x00000000f4cd0000, 0x00000000f4cd0000, 0x00000000f5550000)
 tenured generation   total 174784K, used 0K [0x00000000f5550000, 0x0000000100000000, 0x0000000100000000)
   the space 174784K,   0% used [0x00000000f5550000, 0x00000000f5550000, 0x00000000f5550200, 0x0000000100000000)
 Metaspace       used 132K, committed 320K, reserved 1114112K
  class space    used 3K, committed 128K, reserved 1048576K
"""
ZGC_17 = """7430:
 ZHeap           used 70M, capacity 256M, max capacity 256M
 Metaspace       used 130K, committed 320K, reserved 1114112K
  class space    used 4K, committed 128K, reserved 1048576K
"""
SHENANDOAH_17 = """7510:
Shenandoah Heap
 256M max, 256M soft max, 256M committed, 66268K used
 1024 x 256K regions
Status: not cancelled
Reserved region:
 - [0x00000000f0000000, 0x0000000100000000) 
Collection set:
 - map (vanilla): 0x0000000000013c00
 - map (biased):  0x0000000000010000

 Metaspace       used 126K, committed 320K, reserved 1114112K
  class space    used 3K, committed 128K, reserved 1048576K
"""
G1_25 = """7605:
garbage-first heap   total reserved 262144K, committed 262144K, used 68750K [0x00000000f0000000, 0x0000000100000000)
 region size 1024K, 1 young (1024K), 0 survivors (0K)
"""
# -Xms1g -Xmx4g: the range is the reserved heap, not the committed part
G1_25_RESERVED = """13357:
garbage-first heap   total reserved 4194304K, committed 1050624K, used 72846K [0x0000000700000000, 0x0000000800000000)
 region size 2048K, 2 young (4096K), 0 survivors (0K)
"""
PARALLEL_25 = """7731:
PSYoungGen      total 76288K, used 5242K [0x00000000fab00000, 0x0000000100000000, 0x0000000100000000)
 eden space 65536K, 8% used [0x00000000fab00000,0x00000000fb01ebd0,0x00000000feb00000)
 from space 10752K, 0% used [0x00000000ff580000,0x00000000ff580000,0x0000000100000000)
 to   space 10752K, 0% used [0x00000000feb00000,0x00000000feb00000,0x00000000ff580000)
ParOldGen       total 175104K, used 66702K [0x00000000f0000000, 0x00000000fab00000, 0x00000000fab00000)
 object space 175104K, 38% used [0x00000000f0000000,0x00000000f4123ac8,0x00000000fab00000)
"""
SERIAL_25 = """7799:
DefNew     total 78656K, used 69952K [0x00000000f0000000, 0x00000000f5550000, 0x00000000f5550000)
 eden space 69952K, 100% used [0x00000000f0000000, 0x00000000f4450000, 0x00000000f4450000)
 from space 8704K,   0% used [0x00000000f4450000, 0x00000000f4450000, 0x00000000f4cd0000)
 to   space 8704K,   0% used [0x00000000f4cd0000, 0x00000000f4cd0000, 0x00000000f5550000)
Tenured    total 174784K, used 1166K [0x00000000f5550000, 0x0000000100000000, 0x0000000100000000)
 the  space 174784K,   0% used [0x00000000f5550000, 0x00000000f5673ab8, 0x0000000100000000)
"""
ZGC_25 = """7912:
ZHeap            used 72M, capacity 256M, max capacity 256M
 Cache           184M (1)
  size classes   128M (1)
"""
EPSILON_25 = """9954:
Epsilon Heap
 Allocation space:
  space 262144K,  25% used [0x00000000f0000000, 0x00000000f4145350, 0x0000000100000000)"""

HEAP_256M = (0xf0000000, 0x100000000)


@pytest.mark.parametrize("text,collector", [
    (G1_17, "G1"), (PARALLEL_17, "Parallel"), (SERIAL_17, "Serial"),
    (SHENANDOAH_17, "Shenandoah"), (G1_25, "G1"), (PARALLEL_25, "Parallel"),
    (SERIAL_25, "Serial"), (EPSILON_25, "Epsilon")])
def test_the_heap_range_is_the_lowest_start_and_highest_end(text, collector):
    # Parallel's and Serial's young generation lies above the old one: the range spans both
    assert javaheap.parse_heap_info(text) == (HEAP_256M, collector)


def test_g1_gives_its_reserved_range_not_the_committed_part():
    rng, coll = javaheap.parse_heap_info(G1_25_RESERVED)
    assert rng == (0x700000000, 0x800000000) and coll == "G1"       # 4 GiB reserved


@pytest.mark.parametrize("text", [ZGC_17, ZGC_25, "", "12:\n", "garbage-first heap [0x10, 0x10)"])
def test_no_address_range_is_unknown(text):
    rng, coll = javaheap.parse_heap_info(text)
    assert rng is None
    assert coll == ("Z" if "ZHeap" in text else "G1" if "garbage" in text else None)


def test_addresses_after_the_metaspace_lines_are_not_the_heap():
    text = G1_17 + " Metaspace   [0x0000000800000000, 0x0000000840000000)\n"
    assert javaheap.parse_heap_info(text)[0] == HEAP_256M


def fake_jvm(monkeypatch, tmp_path, script: str):
    jcmd = tmp_path / "jcmd"
    jcmd.write_text("#!/bin/sh\n" + script)
    jcmd.chmod(jcmd.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(javaheap, "maps_of", lambda pid: ["/jdk/lib/server/libjvm.so"])
    monkeypatch.setattr(javaheap, "_catches_sigquit", lambda pid: True)
    monkeypatch.setattr(javaheap, "jcmd_of", lambda pid: jcmd)


def test_read_java_heap_runs_jcmd_and_says_why_not(monkeypatch, tmp_path):
    out = tmp_path / "g1.txt"
    out.write_text(G1_17)
    fake_jvm(monkeypatch, tmp_path, f'[ "$2" = GC.heap_info ] && cat {out}\n')
    assert javaheap.read_java_heap(7238) == {
        "pid": 7238, "start": HEAP_256M[0], "end": HEAP_256M[1],
        "source": "jcmd GC.heap_info", "collector": "G1"}
    out.write_text(ZGC_17)
    h = javaheap.read_java_heap(7430)
    assert h["collector"] == "Z" and "no address range" in h["unknown"] and "start" not in h
    fake_jvm(monkeypatch, tmp_path, "echo 'AttachNotSupportedException: no' >&2; exit 1\n")
    assert "exited with status 1: AttachNotSupportedException" in \
        javaheap.read_java_heap(7)["unknown"]
    fake_jvm(monkeypatch, tmp_path, "exec sleep 30\n")
    assert "did not finish within 0.5 s" in javaheap.read_java_heap(7, timeout=0.5)["unknown"]


def test_no_jcmd_is_run_on_a_process_that_is_not_a_jvm_or_ignores_sigquit(monkeypatch):
    # this test's own process maps no libjvm.so: refused before any signal could be sent
    assert "not a JVM" in javaheap.read_java_heap(os.getpid())["unknown"]
    monkeypatch.setattr(javaheap, "maps_of", lambda pid: ["/jdk/lib/server/libjvm.so"])
    monkeypatch.setattr(javaheap, "_catches_sigquit", lambda pid: False)
    assert "-Xrs" in javaheap.read_java_heap(os.getpid())["unknown"]


# ---------------------------------------------------------------- faults in the heap

HEAP = {"pid": 7, "start": 0xf0000000, "end": 0x100000000, "source": "jcmd GC.heap_info",
        "collector": "G1"}
FIRST, LAST = 0xf0000000 >> 21, (0x100000000 >> 21) - 1             # regions 1920 and 2047


def test_faults_of_the_regions_that_overlap_the_heap():
    regions = {("7", str(FIRST)): 10, ("7", str(LAST)): 5, ("7", str(LAST + 1)): 100,
               ("7", str(FIRST - 1)): 7, ("8", str(FIRST)): 1000}
    vm = {"page_faults": 122}
    mem.heap_faults(vm, regions, "7", HEAP)
    assert vm["page_faults_heap"] == 15 and "2 MiB" in vm["page_faults_heap_method"]
    assert "page_faults_unregioned" not in vm
    # a range whose ends are not 2 MiB aligned: the regions it touches count whole
    vm = {"page_faults": 122}
    mem.heap_faults(vm, regions, "7", dict(HEAP, start=0xf0000000 - 4096,
                                           end=0x100000000 + 4096))
    assert vm["page_faults_heap"] == 122
    # faults counted but not by region (a full counts map): the figure is a lower bound
    vm = {"page_faults": 200}
    mem.heap_faults(vm, regions, "7", HEAP)
    assert vm["page_faults_heap"] == 15 and vm["page_faults_unregioned"] == 78


def test_heap_faults_unknown_say_why_and_other_processes_get_none():
    regions = {("7", str(FIRST)): 10}
    vm = {"page_faults": 10}
    mem.heap_faults(vm, regions, "7", {"pid": 7, "unknown": "pid 7 had exited"})
    assert vm == {"page_faults": 10, "page_faults_heap": None,
                  "page_faults_heap_unknown": "pid 7 had exited"}
    vm = {"page_faults": 10}
    mem.heap_faults(vm, regions, "7", None)
    assert vm["page_faults_heap"] is None and "did not read" in vm["page_faults_heap_unknown"]
    vm = {"page_faults": 10}
    mem.heap_faults(vm, {}, "7", HEAP)
    assert vm["page_faults_heap"] is None and "@fault_region" in vm["page_faults_heap_unknown"]
    vm = {"page_faults": 10}
    mem.heap_faults(vm, regions, "8", HEAP)          # not the JVM whose heap was read
    assert vm == {"page_faults": 10}


MEM = {"@calls": {"7,vm,tracepoint:syscalls:sys_enter_mmap": 3,
                  "8,vm,tracepoint:syscalls:sys_enter_mmap": 1},
       "@ncalls": {"7,vm,page_fault_user": 20_000, "8,vm,page_fault_user": 50},
       "@fault_region": {f"7,{FIRST}": 16_384, f"7,{FIRST + 40}": 500, "7,10": 3_116,
                         "8,10": 50}}


def build(java_heap):
    raw = parse_lines(map_lines(MEM))
    return summ.build(raw, wall_ns=10_000_000, status="complete", addresses={},
                      costs={"page_fault": {"ns_per_call": 1000.0}}, jvms_by_pid={},
                      probes=None, java_heap=java_heap)


def test_summary_counts_the_heap_faults_of_the_jvm_in_its_process_and_the_total():
    s = build(HEAP)
    jvm, child = s["by_pid"]["7"]["categories"]["vm"], s["by_pid"]["8"]["categories"]["vm"]
    assert jvm["page_faults"] == 20_000 and jvm["page_faults_heap"] == 16_884
    assert "page_faults_heap" not in child
    total = s["categories"]["vm"]
    assert total["page_faults"] == 20_050 and total["page_faults_heap"] == 16_884
    assert total["page_faults_heap_method"] == mem.HEAP_FAULTS_METHOD
    assert whatif.counts(s)["heap_page_faults"] == 16_884
    line = page_fault_line(total)
    assert "20,050" in line and "of which in the Java heap: 16,884" in line


def test_summary_without_a_heap_range_says_why():
    s = build({"pid": 7, "unknown": "GC.heap_info printed no address range of the heap"})
    total = s["categories"]["vm"]
    assert total["page_faults"] == 20_050 and total["page_faults_heap"] is None
    assert "no address range" in total["page_faults_heap_unknown"]
    assert whatif.counts(s)["heap_page_faults"] is None
    assert "in the Java heap: unknown (GC.heap_info" in page_fault_line(total)
    assert whatif.counts({"categories": {}, "totals": {}})["heap_page_faults"] is None


def test_the_engines_fault_regions_become_the_analyzers_map():
    libc = {s: 0x500 + i for i, s in enumerate(MEM_ALLOCATOR)}
    plan = eng.build_plan(["mem"], {"LIBC": [Path("/lib/libc.so.6")]}, lambda p: libc,
                          mode="time", scope="host", root=7, counting=True)
    what = next(k for k, (name, _) in mem_layer.WHATS.items() if name == "fault_region")
    maps = {"event": "maps", "final": True, "stats": [],
            "counts": [[7, what, 0, 16_384, FIRST], [7, what, 0, 3, 10]],
            "procs": [], "control": {"counting": 0, "start_ns": 5, "stop_ns": 9}}
    raw = eng.decode(maps, plan)
    assert not raw.errors
    assert raw.keyed("fault_region") == {("7", str(FIRST)): 16_384, ("7", "10"): 3}
