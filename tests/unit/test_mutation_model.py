"""heuristic/model.py: the equations' inputs and outputs at the edges the other tests left
open (docs/mutation.md). Every expected value is computed by hand."""
import pytest

from jvmos.heuristic import model
from jvmos.heuristic.model import Constants, Workload


def test_the_papers_constants():
    # Gousios & Spinellis, section 5.3
    assert model.PAPER_CONSTANTS_US == {"C_nt": 173.0, "C_link": 140.0, "C_io_chunk": 3.3}


def test_c_file_defaults_to_zero():
    k = Constants(C_nt=10.0, C_link=20.0, C_io_chunk=0.5)
    assert k.C_file == 0.0
    # 2 files of 4 chunks: 2 x (4 x 0.5 + 0)
    assert model.c_file(k, Workload(connections=0, chunks=4.0, files=2)) == pytest.approx(4.0)


def test_overhead_pct_and_speedup_by_hand():
    k = Constants(C_nt=10.0, C_link=20.0, C_io_chunk=0.5)
    # threads 2 x 10 = 20; net 2 x (4 x 0.5 + 20) = 44; C_os 64 µs of T = 1000 µs
    out = model.predict(k, Workload(connections=2, chunks=4.0, exec_time_us=1000.0))
    assert out["C_os_us"] == pytest.approx(64.0)
    assert out["overhead_pct"] == pytest.approx(6.4)
    assert out["speedup"] == pytest.approx(1000.0 / 936.0)


def test_from_platform_without_c_file():
    k = model.from_platform({"constants": {"C_nt": {"mean_us": 5.0}, "C_link": {"mean_us": 6.0},
                                           "C_io_chunk": {"mean_us": 7.0}}})
    assert (k.C_nt, k.C_link, k.C_io_chunk, k.C_file) == (5.0, 6.0, 7.0, 0.0)


def test_counts_of_a_summary_default_to_zero():
    s = {"categories": {"io_syscall": {"syscalls": {"write": {"calls": 2}}, "bytes": 100}},
         "totals": {}}
    c = model.counts_from_summary(s)
    assert c["io_writes"] == 2
    assert c["io_write_bytes"] == 0
    assert c["io_syscalls"] == 0
    assert c["io_bytes"] == 100
    assert c["threads_created"] == 0
    assert c["malloc_calls"] == 0
    assert c["page_faults"] == 0
    s["categories"]["vm"] = {"page_faults": None}
    assert model.counts_from_summary(s)["page_faults"] == 0


def test_mem_parts_of_a_summary():
    s = {"categories": {"malloc": {"time_ns": 100.0}, "free_estimated": {"time_ns": 50.0},
                        "vm": {"page_fault_time_ns": 7.0, "syscalls_time_ns": 9.0}}}
    assert model.mem_parts_from_summary(s) == {"malloc_ns": 150.0, "page_fault_ns": 7.0,
                                               "vm_syscall_ns": 9.0}


def test_workload_without_connections():
    # no connection: no chunk per connection; the 6 + 2 operations belong to the 4 files
    w = model.workload_from_counts({"io_writes": 6, "io_reads": 2, "files_opened": 4})
    assert w.connections == 0 and w.chunks == 0.0
    assert w.file_chunks == pytest.approx(2.0)


def test_counts_of_a_fuller_summary():
    s = {"categories": {"io_syscall": {"calls": 9, "bytes": 100}, "sync": {"calls": 5},
                        "vm": {"page_faults": 3}},
         "totals": {}}
    c = model.counts_from_summary(s)
    assert (c["io_syscalls"], c["io_bytes"], c["futex"], c["page_faults"]) == (9, 100, 5, 3)
    c = model.counts_from_summary({"categories": {}, "totals": {}})
    assert (c["io_syscalls"], c["io_bytes"], c["futex"], c["page_faults"]) == (0, 0, 0, 0)


def test_mem_parts_of_a_summary_without_memory():
    assert model.mem_parts_from_summary({"categories": {}}) == {
        "malloc_ns": 0.0, "page_fault_ns": 0.0, "vm_syscall_ns": 0.0}


def test_workload_of_nothing_counted():
    w = model.workload_from_counts({})
    assert (w.connections, w.chunks, w.threads, w.files, w.file_chunks) == (0, 0.0, 0, 0, 0)


def test_measured_with_an_unknown_term_is_the_known_terms():
    s = {"totals": {"guaranteed_overhead_ns": None,
                    "guaranteed_by_resource": {"io": 3000.0, "mem": 1000.0}}}
    m = model.measured_from_summary(s)
    assert (m["C_os_us"], m["mem_us"], m["without_mem_us"]) == pytest.approx((4.0, 1.0, 3.0))
    s = {"totals": {"guaranteed_overhead_ns": 10_000.0, "guaranteed_by_resource": {"io": 3000.0}}}
    m = model.measured_from_summary(s)
    assert (m["C_os_us"], m["mem_us"], m["without_mem_us"]) == pytest.approx((10.0, 0.0, 10.0))
