"""Seed 001's distributed matrix multiplication as `jvmos run matmul`: every mechanism x
algorithm multiplies correctly and is recorded at the OS boundary; the datagram mechanism
survives lost packets; a worker that never starts is one line, soon; bad input is one line."""
import csv
import io
import json
import time

import pytest

from conftest import can_trace, one_error_line, run_jvmos

pytestmark = pytest.mark.integration
traced = pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")

MECHANISMS = ("rmi-serializable", "rmi-externalizable", "socket", "datagram")


@traced
def test_matmul_every_mechanism_and_its_boundary(platform_file, tmp_path):
    """n = 40, k = 2, two trials of every mechanism x {spa, mca}, every product validated;
    each mechanism's SPA recorded with 1 and 1 + 3 multiplications, every recording with I/O
    syscalls in the manager and in its workers."""
    out = tmp_path / "mm"
    r = run_jvmos(["run", "matmul", "--sizes", "40", "--k", "2", "--trials", "2",
                   "--boundary", "spa:40", "--boundary-repeat", "3", "--out", str(out)],
                  timeout=3000)      # 1,890 s in a clean CI clone (8 recordings' detaches)
    assert r.returncode == 0, r.stderr
    res = json.loads((out / "matmul.json").read_text())
    assert set(res["cells"]) == {f"{m}:{a}:40" for m in MECHANISMS for a in ("spa", "mca")}
    for key, c in res["cells"].items():
        assert len(c["trials"]) == 2, key
        assert all(t["validated"] is True for t in c["trials"]), key
        assert c["total"]["n"] == 2 and c["total"]["mean"] > 0, key
        # MCA on k = 2's 1 x 2 grid: 2k + k(n - 1) messages; SPA: 2k
        assert c["calls"] == (4 if c["algorithm"] == "spa" else 4 + 2 * 39), key
        assert res["speedup"][key] > 0, key
    assert all(t["validated"] is True for t in res["sequential"]["40"]["trials"])
    assert set(res["boundary"]) == {f"{m}:spa:40" for m in MECHANISMS}
    for key, b in res["boundary"].items():
        assert set(b["runs"]) == {"1", "4"}, key
        for repeat, run in b["runs"].items():
            assert run["manager_json"]["validated"] is True, key
            assert run["manager_json"]["repeat"] == int(repeat), key
            # sh, the manager and its two workers
            assert run["processes"] >= 3, (key, repeat)
            for side in ("all", "manager", "workers"):
                assert run[side]["io_syscalls"] > 0, (key, repeat, side)
        # the same workers did 3 more multiplications of 2k messages each
        assert b["calls_per_mult"] == 4, key
        assert b["app_bytes_per_mult"] > 2 * 40 * 40 * 4, key      # B twice, at least
    md = (out / "matmul.md").read_text()
    assert "The OS boundary per multiplication" in md and "Programming effort" in md
    assert "Welch" in md
    for stem in ("matmul-total", "matmul-comm", "matmul-speedup"):
        assert (out / f"{stem}.png").stat().st_size > 5000


def test_matmul_datagram_with_lost_packets(tmp_path):
    """Every 5th data packet a node sends is dropped (the workload's test option, through
    jvmos's --drop-every): both algorithms still validate, and Table 4.1 reports the
    retransmissions. n = 6, the smallest n that MCA's 1 x 2 grid divides with at least 5
    packets a worker: each worker sends 5 shifts and its block of C, one packet each, so its
    5th is lost for sure (each loss waits out a 40 ms retransmission timer)."""
    out = tmp_path / "dg"
    r = run_jvmos(["run", "matmul", "--mechanisms", "datagram", "--sizes", "6", "--k", "2",
                   "--trials", "2", "--boundary", "none", "--drop-every", "5", "--out",
                   str(out)], timeout=600)
    assert r.returncode == 0, r.stderr
    res = json.loads((out / "matmul.json").read_text())
    for key, c in res["cells"].items():
        assert all(t["validated"] is True for t in c["trials"]), key
    assert sum(res["cells"]["datagram:mca:6"]["retransmissions"]) > 0
    rows = list(csv.DictReader(io.StringIO((out / "matmul.csv").read_text())))
    mca = next(row for row in rows if row["algorithm"] == "mca")
    assert int(mca["retransmissions (all trials)"]) > 0
    assert "--drop-every" in (out / "matmul.md").read_text()


def test_matmul_worker_that_never_starts(tmp_path):
    """Workers that sleep ten minutes before opening their endpoint, a manager that waits 2 s
    for them: one line naming the run, long before the workers would have come up (the bound
    leaves room for JVM starts on a loaded host; it is not a speed figure)."""
    t0 = time.monotonic()
    r = run_jvmos(["run", "matmul", "--mechanisms", "socket", "--algorithms", "spa", "--sizes",
                   "40", "--k", "2", "--trials", "2", "--boundary", "none",
                   "--worker-start-delay-ms", "600000", "--worker-start-timeout", "2",
                   "--out", str(tmp_path / "late")], timeout=500)
    assert time.monotonic() - t0 < 300
    line = one_error_line(r)
    assert "socket spa n=40 trial 1" in line
    assert "did not announce its port within 2 s" in line
    # the sequential runs before it are kept
    part = json.loads((tmp_path / "late" / "matmul.partial.json").read_text())
    assert set(part["sequential"]) == {"40"}


@pytest.mark.parametrize("argv,needle", [
    (["--mechanisms", "socket,corba"], "unknown mechanism(s) corba"),
    (["--sizes", "100,150,201"], "divisible by 2 and 2 (n=201)"),
    (["--k", "0"], "--k must be 1..64"),
    (["--trials", "1"], "--trials must be at least 2"),
    (["--boundary", "mca"], "bad --boundary entry 'mca'"),
])
def test_matmul_bad_input(tmp_path, argv, needle):
    line = one_error_line(run_jvmos(["run", "matmul"] + argv + ["--out", str(tmp_path / "x")]))
    assert needle in line
    assert not (tmp_path / "x").exists()
