"""The cost heuristic (paper equations 1-6) against hand-computed cases, and `jvmos predict`."""
import json
import subprocess
import sys

import pytest

from jvmos.heuristic import model
from jvmos.heuristic.model import Constants, Workload

PAPER = Constants(C_nt=173.0, C_link=140.0, C_io_chunk=3.3)


def test_paper_constants_equation_6():
    # 100 x (173 + 140 + 133 x 3.3) = 75,190 us; the paper's Table 7 prints 72.5 ms
    w = Workload(connections=100, chunks=133)
    assert model.c_os_server(PAPER, w) == pytest.approx(75_190.0)
    assert model.c_os(PAPER, w) == pytest.approx(75_190.0)     # eq 1 = eq 6 for a server
    w = Workload(connections=1000, chunks=133)
    assert model.c_os_server(PAPER, w) == pytest.approx(751_900.0)  # paper: 725.0 ms


def test_each_equation_by_hand():
    k = Constants(C_nt=10.0, C_link=2.0, C_io_chunk=0.5, C_file=3.0)
    w = Workload(connections=4, chunks=6, threads=7, files=5, file_chunks=2, mem_us=100.0)
    assert model.c_thr(k, w) == 70.0                          # (2) 7 x 10
    assert model.c_net(k, w) == 4 * (6 * 0.5 + 2.0)           # (4) 20
    assert model.c_file(k, w) == 5 * (2 * 0.5 + 3.0)          # (5) 20
    assert model.c_io(k, w) == 40.0                           # (3)
    assert model.c_os(k, w) == pytest.approx(70 + 40 + 100)   # (1): no synchronization term
    assert not hasattr(model, "c_sync") and "C_sync" not in model.CONSTANTS
    assert model.c_os_server(k, w) == pytest.approx(7 * (10 + 2 + 6 * 0.5) + 100)   # (6)


def test_speedup_and_its_interval():
    k = Constants(C_nt=10.0, C_link=2.0, C_io_chunk=1.0,
                  ci95={"C_nt": (8.0, 12.0), "C_link": (1.0, 3.0), "C_io_chunk": (1.0, 1.0)})
    w = Workload(connections=10, chunks=10, exec_time_us=1000.0)
    r = model.predict(k, w)
    assert r["C_os_us"] == pytest.approx(220.0)
    assert r["speedup"] == pytest.approx(1000 / 780)
    assert r["C_os_ci95_us"] == pytest.approx([190.0, 250.0])
    assert r["speedup_ci95"] == pytest.approx([1000 / 810, 1000 / 750])
    assert model.speedup(100.0, 100.0) is None


def run(*args):
    return subprocess.run([sys.executable, "-m", "jvmos.cli", "predict"] + list(args),
                          capture_output=True, text=True)


def test_cli_with_the_papers_constants():
    r = run("--c-nt", "173", "--c-link", "140", "--c-io-chunk", "3.3", "--connections", "100",
            "--chunks", "133", "--json")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["terms"]["eq6_C_os_us"] == pytest.approx(75_190.0)
    r = run("--c-nt", "173", "--c-link", "140", "--c-io-chunk", "3.3", "--connections", "100",
            "--chunks", "133", "--exec-time-ms", "1000")
    assert "75.190 ms" in r.stdout and "1.081x" in r.stdout


@pytest.mark.parametrize("args,msg", [
    (["--c-nt", "1", "--c-link", "1", "--c-io-chunk", "1", "--connections", "-3", "--chunks", "1"],
     "--connections must not be negative"),
    (["--c-nt", "-1", "--c-link", "1", "--c-io-chunk", "1", "--connections", "3", "--chunks", "1"],
     "--c-nt must be"),
])
def test_cli_bad_input(args, msg):
    r = run(*args)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert r.stderr.startswith("jvmos: error:") and msg in r.stderr


def test_cli_without_constants(tmp_path):
    r = run("--platform", str(tmp_path / "none.json"), "--connections", "3", "--chunks", "1")
    assert r.returncode != 0 and "jvmos calibrate" in r.stderr and "Traceback" not in r.stderr


RECORDING = {"categories": {
        "io_syscall": {"calls": 1500, "bytes": 10,
                       "syscalls": {"write": {"calls": 1000}, "read": {"calls": 500}}},
        "link": {"syscalls": {"accept": {"calls": 100}, "connect": {"calls": 7}}},
        "file": {"syscalls": {"openat": {"calls": 20}, "close": {"calls": 130}}},
        "thread_create": {"calls": 12}, "sync": {"calls": 999}},
    "totals": {"wall_ns": 2_000_000_000, "guaranteed_overhead_ns": 9_500_000,
               "guaranteed_by_resource": {"io": 1_500_000, "links": 2_000_000,
                                          "threads": 1_000_000, "mem": 5_000_000}}}


def test_workload_from_a_recording_takes_its_counts_not_its_memory_cost():
    w = model.workload_from_summary(RECORDING)
    assert (w.connections, w.chunks, w.threads, w.files) == (100, 15.0, 12, 20)   # 1500 / 100
    assert w.exec_time_us == 2_000_000.0
    # the recording's 5 ms of memory is what a prediction is compared with, not an input
    assert w.mem_us == 0.0 and "not given" in w.mem_source
    w = model.workload_from_summary(RECORDING, 1234.0, "given: --mem-ms")
    assert w.mem_us == 1234.0 and w.mem_source == "given: --mem-ms"
    m = model.measured_from_summary(RECORDING)
    # 1.5 + 2 + 1 + 5 = 9.5 ms; without memory 4.5 ms
    assert m == {"C_os_us": 9500.0, "mem_us": 5000.0, "without_mem_us": 4500.0,
                 "by_resource_us": {"io": 1500.0, "links": 2000.0, "threads": 1000.0,
                                    "mem": 5000.0}}


def write_run(d):
    d.mkdir()
    (d / "manifest.json").write_text(json.dumps({"status": "complete"}))
    (d / "summary.json").write_text(json.dumps(RECORDING))
    return str(d)


def test_cli_from_a_run_never_feeds_the_runs_memory_to_its_prediction(tmp_path):
    run_dir = write_run(tmp_path / "run")
    r = run("--c-nt", "10", "--c-link", "2", "--c-io-chunk", "0.5", "--c-file", "3",
            "--from-run", run_dir, "--json")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    # 12 x 10 = 120; 100 x (15 x 0.5 + 2) = 950; files: 20 x (0 x 0.5 + 3) = 60 -> 1130 µs,
    # C_mem 0 (not given), although the run measured 5000 µs of memory
    assert res["workload"]["mem_us"] == 0.0
    assert res["C_os_us"] == pytest.approx(1130.0)
    m = res["measured"]
    assert m["C_os_us"] == 9500.0 and m["mem_us"] == 5000.0
    assert m["diff_pct"] == pytest.approx(100 * (9500 - 1130) / 9500)          # +88.1%
    # the memory-free comparison: measured 4500 vs predicted 1130
    assert m["without_mem_diff_pct"] == pytest.approx(100 * (4500 - 1130) / 4500)   # +74.9%
    # C_mem given: used, and named as given
    r = run("--c-nt", "10", "--c-link", "2", "--c-io-chunk", "0.5", "--c-file", "3",
            "--from-run", run_dir, "--mem-ms", "2")
    assert r.returncode == 0, r.stderr
    assert "C_mem 2 ms (given: --mem-ms)" in r.stdout
    assert "3.130 ms" in r.stdout                                  # 1130 + 2000 µs
    assert "not an input of the prediction" in r.stdout


def test_cli_has_no_synchronization_constant():
    r = run("--c-nt", "1", "--c-link", "1", "--c-io-chunk", "1", "--connections", "1",
            "--chunks", "1", "--c-sync", "2")
    assert r.returncode != 0 and "Traceback" not in r.stderr and "--c-sync" in r.stderr
