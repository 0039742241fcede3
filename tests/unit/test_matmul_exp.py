"""`jvmos run matmul` without running anything: its options and bad input, MCA's grid and
its divisibility check, the speedup, t-tests, tables and figures from a canned results dict."""
import json

import pytest

from jvmos import JvmosError, cli
from jvmos.analyzers import stats
from jvmos.experiments import matmul


def bad(argv) -> str:
    with pytest.raises(JvmosError) as e:
        matmul.parse(argv)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def test_defaults():
    a = matmul.parse([])
    assert a.mechanisms == list(matmul.MECHANISMS) and a.algorithms == ["spa", "mca"]
    assert a.sizes == [100, 200, 300, 400, 500] and a.k == 4 and a.trials == 5
    assert a.boundary_repeat == 10
    # spa at n = 100, for every mechanism
    assert sorted(a.boundary) == sorted((m, "spa", 100) for m in matmul.MECHANISMS)
    b = matmul.parse(["--boundary", "spa:100,socket:mca:100"]).boundary
    assert len(b) == 5 and ("socket", "mca", 100) in b and ("datagram", "mca", 100) not in b


def test_quick():
    a = matmul.parse(["--quick"])
    assert a.sizes == [60] and a.trials == 2
    assert a.boundary == [("socket", "spa", 60)]


def test_boundary_entries():
    a = matmul.parse(["--mechanisms", "socket,datagram", "--boundary",
                      "mca:40,rmi-serializable:spa:60"])
    assert a.boundary == [("socket", "mca", 40), ("datagram", "mca", 40),
                          ("rmi-serializable", "spa", 60)]
    assert matmul.parse(["--boundary", "none"]).boundary == []


@pytest.mark.parametrize("argv,needle", [
    (["--mechanisms", "socket,tcp"], "unknown mechanism(s) tcp (known: rmi-serializable"),
    (["--algorithms", "spa,cannon"], "unknown algorithm(s) cannon"),
    (["--algorithms", "sequential"], "unknown algorithm(s) sequential"),
    (["--k", "0"], "--k must be 1..64"),
    (["--k", "-3"], "--k must be 1..64"),
    (["--trials", "1"], "--trials must be at least 2"),
    (["--sizes", "100,abc"], "bad size 'abc'"),
    (["--sizes", "1001"], "bad size '1001'"),
    (["--sizes", "100,100"], "given twice"),
    (["--boundary", "spa"], "bad --boundary entry 'spa'"),
    (["--boundary", "udp:spa:100"], "unknown mechanism 'udp'"),
    (["--boundary", "sequential:100"], "unknown algorithm 'sequential'"),
    (["--boundary-repeat", "0"], "--boundary-repeat must be positive"),
    (["--mechanisms", "socket", "--drop-every", "5"], "--drop-every"),
    (["--drop-every", "1"], "--drop-every N needs N >= 2"),
    (["--algorithms", "spa", "--sizes", "3", "--boundary", "none"], "n must be at least k"),
])
def test_bad_input(argv, needle):
    assert needle in bad(argv)


def test_bad_input_is_one_line_through_the_cli(capsys):
    assert cli.main(["run", "matmul", "--mechanisms", "carrier-pigeon"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("jvmos: error: unknown mechanism(s) carrier-pigeon")


@pytest.mark.parametrize("k,grid", [(1, (1, 1)), (2, (1, 2)), (3, (1, 3)), (4, (2, 2)),
                                    (6, (2, 3)), (8, (2, 4)), (9, (3, 3)), (12, (3, 4))])
def test_mca_grid_is_the_workloads(k, grid):
    assert matmul.mca_grid(k) == grid


def test_mca_divisibility_names_the_grid_and_n():
    msg = bad(["--sizes", "100,101", "--boundary", "none"])
    assert "2x2 grid" in msg and "divisible by 2 and 2" in msg and "n=101" in msg
    msg = bad(["--k", "6", "--sizes", "100", "--boundary", "none"])
    assert "k=6" in msg and "2x3 grid" in msg and "n=100" in msg
    # SPA alone has no grid: 101 is fine
    assert matmul.parse(["--algorithms", "spa", "--sizes", "101", "--boundary",
                         "none"]).sizes == [101]
    # the boundary's n is checked too
    msg = bad(["--sizes", "100", "--boundary", "socket:mca:99"])
    assert "--boundary socket:mca:99" in msg and "n=99" in msg


def test_workload_command_passes_the_test_options(monkeypatch):
    # unit tests run without the Java build: the jar's path is all the command needs
    monkeypatch.setattr(matmul, "jar", lambda p: p)
    a = matmul.parse(["--mechanisms", "socket,datagram", "--drop-every", "4",
                      "--worker-start-delay-ms", "5000", "--worker-start-timeout", "2",
                      "--k", "2", "--boundary", "none"])
    d = matmul.workload_cmd("java", "datagram", "spa", 40, 7, 3, a)
    assert d[:2] == ["java", "-jar"]
    s = " ".join(d)
    for part in ("--algorithm spa", "--n 40", "--seed 7", "--repeat 3", "--mechanism datagram",
                 "--k 2", "--drop-every 4", "--worker-start-delay-ms 5000",
                 "--worker-start-timeout 2"):
        assert part in s
    # the drop applies to datagrams only; the sequential run has no workers at all
    assert "--drop-every" not in matmul.workload_cmd("java", "socket", "spa", 40, 7, 1, a)
    seq = " ".join(matmul.workload_cmd("java", None, "sequential", 40, 7, 1, a))
    assert "--mechanism" not in seq and "--k" not in seq and "--algorithm sequential" in seq


def test_a_run_that_did_not_validate_is_an_error_naming_it():
    with pytest.raises(JvmosError, match="socket spa n=40 trial 2: the product was not "
                                         "validated"):
        matmul.checked({"validated": False, "repeat": 1}, "socket spa n=40 trial 2")
    with pytest.raises(JvmosError, match="printed no result line"):
        matmul.checked({}, "x")
    assert matmul.checked({"validated": True, "repeat": 3}, "x", 3)["repeat"] == 3


# ---------------------------------------------------------------- a canned campaign

def trial(mech, total, comm, workers=(10.0, 20.0), retrans=0):
    return {"mechanism": mech, "algorithm": "spa", "n": 40, "k": 2, "grid": None,
            "total_ms": total, "manager_comm_ms": comm, "manager_send_ms": comm / 4,
            "manager_recv_ms": comm * 3 / 4, "workers_comm_ms": list(workers),
            "calls": 4, "bytes_sent": 1000, "workers_bytes_sent": [300, 300],
            "retransmissions": retrans, "validated": True, "repeat": 1}


def canned():
    seq = [{"total_ms": 30.0}, {"total_ms": 34.0}]
    r = {"jdk_label": "openjdk-17", "k": 2, "trials": 2, "alpha": 0.05,
         "sequential": {"40": {"n": 40, "trials": seq, "total_ms": [30.0, 34.0],
                               "total": stats.summary([30.0, 34.0], 0.95)}},
         "cells": {}, "boundary": {},
         "loc": {"tool": "pygount 3.2.0", "files": {},
                 "mechanisms": {m: {"files": [f"{m}.java"], "code": 10 * (i + 1),
                                    "comments": 1, "blank": 2}
                                for i, m in enumerate(matmul.MECHANISMS)},
                 "shared": {"files": ["Matmul.java"], "code": 500, "comments": 50,
                            "blank": 60},
                 "unassigned": {"files": [], "code": 0, "comments": 0, "blank": 0}}}
    for mech, totals, comms, rt in (("socket", (10.0, 14.0), (6.0, 8.0), 0),
                                    ("datagram", (20.0, 24.0), (16.0, 18.0), 3),
                                    ("rmi-serializable", (40.0, 48.0), (30.0, 34.0), 0)):
        trials = [trial(mech, t, c, retrans=rt) for t, c in zip(totals, comms)]
        r["cells"][f"{mech}:spa:40"] = matmul.cell_from_trials(mech, "spa", 40, 2, trials)
    return r


def test_cell_statistics():
    c = canned()["cells"]["socket:spa:40"]
    assert c["total"]["mean"] == 12.0 and c["total"]["sigma"] == pytest.approx(2.0)
    assert c["comm"]["mean"] == 7.0
    assert c["workers_comm_ms"] == [15.0, 15.0]            # the mean over the two workers
    assert c["app_bytes"] == 1600 and c["calls"] == 4


def test_speedup_is_a_ratio_of_means():
    r = canned()
    sp = matmul.speedups(r)
    assert sp["socket:spa:40"] == pytest.approx(32.0 / 12.0)
    assert sp["datagram:spa:40"] == pytest.approx(32.0 / 22.0)
    assert sp["rmi-serializable:spa:40"] == pytest.approx(32.0 / 44.0)


def test_ttests_compare_socket_with_every_other_mechanism():
    r = canned()
    tt = matmul.ttests(r)
    assert {(x["b"], x["measure"]) for x in tt} == {
        ("datagram", "total"), ("datagram", "communication"),
        ("rmi-serializable", "total"), ("rmi-serializable", "communication")}
    x = next(x for x in tt if x["b"] == "datagram" and x["measure"] == "total")
    w = stats.welch([10.0, 14.0], [20.0, 24.0], 0.05)
    assert x["p"] == pytest.approx(w["p"]) and x["alpha"] == 0.05 and x["a"] == "socket"
    assert x["mean_a"] == 12.0 and x["mean_b"] == 22.0


def test_ttests_compare_the_two_rmi_variants_with_each_other():
    r = canned()
    trials = [trial("rmi-externalizable", t, c) for t, c in zip((60.0, 64.0), (50.0, 52.0))]
    r["cells"]["rmi-externalizable:spa:40"] = matmul.cell_from_trials(
        "rmi-externalizable", "spa", 40, 2, trials)
    tt = matmul.ttests(r)
    rmi = [x for x in tt if x["a"] == "rmi-serializable"]
    assert {(x["b"], x["measure"]) for x in rmi} == {("rmi-externalizable", "total"),
                                                    ("rmi-externalizable", "communication")}
    x = next(x for x in rmi if x["measure"] == "total")
    w = stats.welch([40.0, 48.0], [60.0, 64.0], 0.05)
    assert x["p"] == pytest.approx(w["p"]) and x["t"] == pytest.approx(w["t"]) and x["t"] < 0
    assert x["mean_a"] == 44.0 and x["mean_b"] == 62.0
    # and the socket is still compared with both
    assert {x["b"] for x in tt if x["a"] == "socket"} >= {"rmi-serializable",
                                                          "rmi-externalizable"}


def test_render_writes_the_tables_again_and_refuses_what_is_not_a_run(tmp_path):
    import json
    from jvmos import JvmosError
    r = canned()
    trials = [trial("rmi-externalizable", t, c) for t, c in zip((60.0, 64.0), (50.0, 52.0))]
    r["cells"]["rmi-externalizable:spa:40"] = matmul.cell_from_trials(
        "rmi-externalizable", "spa", 40, 2, trials)
    r.update({"experiment": "matmul", "ttests": [], "mechanisms": list(matmul.MECHANISMS)})
    (tmp_path / "matmul.json").write_text(json.dumps(r))
    assert matmul.render(tmp_path) == 0
    md = (tmp_path / "matmul.md").read_text()
    assert "rmi-serializable vs rmi-externalizable" in md       # the t-tests made again
    # socket against the three others and the RMI pair, each on total and communication time
    assert len(json.loads((tmp_path / "matmul.json").read_text())["ttests"]) == 8
    with pytest.raises(JvmosError, match="does not exist"):
        matmul.render(tmp_path / "nothing")
    (tmp_path / "matmul.json").write_text('{"experiment": "ipc"}')
    with pytest.raises(JvmosError, match="not the result"):
        matmul.render(tmp_path)
    (tmp_path / "matmul.json").write_text("{")
    with pytest.raises(JvmosError, match="not JSON"):
        matmul.render(tmp_path)


def test_tables_from_canned_results(tmp_path):
    r = canned()
    r["speedup"] = matmul.speedups(r)
    r["ttests"] = matmul.ttests(r)
    tables = matmul.all_tables(r)
    titles = [t.title for t in tables]
    assert titles[0].startswith("Total time") and "Table 4.1" in titles[0]
    assert "Table 4.2" in titles[1] and "Table 4.3" in titles[2]
    assert titles[3].startswith("Welch") and titles[4].startswith("Programming effort")
    total = tables[0]
    # ordered by n, algorithm, then the mechanisms' order
    assert [row[2] for row in total.raw_rows] == ["rmi-serializable", "socket", "datagram"]
    dg = next(row for row in total.raw_rows if row[2] == "datagram")
    assert dg[3] == 22.0 and dg[-1] == 6                    # retransmissions of both trials
    sp = tables[2]
    row = next(row for row in sp.raw_rows if row[5] == "socket")
    assert row[1] == 32.0 and row[-1] == pytest.approx(32.0 / 12.0)
    loc = tables[-1]
    assert [row[0] for row in loc.raw_rows] == list(matmul.MECHANISMS) + ["shared by all"]
    assert loc.raw_rows[-1][2] == 500
    # everything serialises and draws
    figs = matmul.figures(r, tmp_path)
    assert {f.name for f in figs} == {f"matmul-{s}.{e}" for s in ("total", "comm", "speedup")
                                      for e in ("png", "svg")}
    json.dumps(r)
    assert any("ratio of means" in n for n in matmul.notes_for(r))


def test_boundary_table_from_two_canned_recordings():
    keys = ["io_syscalls", "stream_syscalls", "datagram_syscalls", "io_bytes",
            "jni_copy_calls", "jni_copy_bytes", "nio_copy_calls", "nio_copy_bytes",
            "threads_created", "malloc_calls", "page_faults", "futex", "context_switches",
            "kernel_copy_ns", "guaranteed_ns"]
    lo = {k: 100.0 for k in keys}
    hi = {k: 300.0 for k in keys}
    lo["guaranteed_unknown"] = hi["guaranteed_unknown"] = 0
    per = {k: None if lo[k] is None else (hi[k] - lo[k]) / 4 for k in lo}
    # the JVMs' GC lines of the two runs: 1 and 1 + 4 multiplications, manager + 2 workers
    def run_json(alloc, young):
        return {"manager_allocated_bytes": alloc, "workers_allocated_bytes": [alloc, alloc],
                "manager_gc_young_count": young, "workers_gc_young_count": [young, 0],
                "workers_calls": [2, 2],
                **{f"{side}_{k}": (0 if side == "manager" else [0, 0])
                   for side in ("manager", "workers")
                   for k in ("gc_young_ms", "gc_full_count", "gc_full_ms",
                             "gc_concurrent_count", "gc_concurrent_ms")}}
    gc = matmul.gc_per_extra(matmul.gc_of_run(run_json(1000, 1)),
                             matmul.gc_of_run(run_json(5000, 3)), 4)
    assert gc["allocated_bytes"] == 3 * 4000 / 4 and gc["gc_young_count"] == 2 * 2 / 4
    b = {"mechanism": "socket", "algorithm": "spa", "n": 40, "k": 2, "extra": 4,
         "per_mult": {"all": per, "manager": per, "workers": per},
         "app_bytes_per_mult": 1600.0, "calls_per_mult": 4.0, "gc_per_mult": gc}
    r = {"boundary": {"socket:spa:40": b}}
    t = matmul.boundary_table(r)
    assert [row[3] for row in t.raw_rows] == ["all", "manager", "workers"]
    row = t.raw_rows[0]
    assert row[6] == 50.0                                   # I/O syscalls per multiplication
    assert row[-3] == pytest.approx(50.0 / 1600.0)          # guaranteed ns per app byte
    assert row[-2:] == [3000.0, 1.0]                        # allocated bytes, young GCs
    assert t.raw_rows[1][-2:] == [None, None]               # the GC lines are the whole tree's
    # a run whose JVM could not count its allocation has no GC figures
    bad = run_json(1000, 1)
    bad["workers_allocated_bytes"] = [1000, -1]
    assert matmul.gc_of_run(bad) is None and matmul.gc_of_run({"total_ms": 1}) is None
    assert matmul.difference({"a": 3, "b": None}, {"a": 1, "b": 2}) == {"a": 2, "b": None}


def test_lines_of_code_counts_every_assigned_file():
    loc = matmul.lines_of_code()
    assert loc["tool"].startswith("pygount")
    for m, files in matmul.MECHANISM_FILES.items():
        g = loc["mechanisms"][m]
        assert g["files"] == list(files) and g["code"] > 0
        assert g["code"] == sum(loc["files"][f]["code"] for f in files)
    assert loc["shared"]["code"] > loc["mechanisms"]["socket"]["code"]
    assert loc["unassigned"]["files"] == []


def test_per_extra_is_the_difference_per_unit():
    from jvmos.experiments import common
    lo = {"io_syscalls": 10, "io_ns": None, "guaranteed_unknown": 0}
    hi = {"io_syscalls": 40, "io_ns": 5, "guaranteed_unknown": 2}
    assert common.per_extra(lo, hi, 3) == {"io_syscalls": 10.0, "io_ns": None,
                                           "guaranteed_unknown": 2}


def test_gc_table_means_the_trials_that_reported():
    def trial(alloc, young):
        return {"total_ms": 10.0, "manager_comm_ms": 5.0, "workers_comm_ms": [1.0, 1.0],
                "manager_send_ms": 2.0, "manager_recv_ms": 3.0, "calls": 4, "bytes_sent": 800,
                "workers_bytes_sent": [400, 400], "workers_calls": [2, 2],
                "manager_allocated_bytes": alloc, "workers_allocated_bytes": [alloc, alloc],
                "manager_gc_young_count": young, "workers_gc_young_count": [0, 0],
                **{f"{side}_{k}": (1 if side == "manager" else [0, 0])
                   for side in ("manager", "workers")
                   for k in ("gc_young_ms", "gc_full_count", "gc_full_ms",
                             "gc_concurrent_count", "gc_concurrent_ms")}}
    old = {k: v for k, v in trial(0, 0).items() if "gc" not in k and "allocated" not in k}
    c = matmul.cell_from_trials("socket", "spa", 40, 2, [trial(2e6, 1), trial(4e6, 3), old])
    t = matmul.gc_table({"cells": {"socket:spa:40": c}, "sizes": [40],
                         "mechanisms": ["socket"], "algorithms": ["spa"]})
    row = t.raw_rows[0]
    assert row[3] == 3 and row[4] == 2.0                    # 3 JVMs; young GCs (1 + 3) / 2
    assert row[7] == 3.0                                     # 3 collectors' ms of 1 each
    assert row[8] == 3 * 3e6 and row[9] == 3 * 3e6 / 1600   # bytes, per application byte
    assert row[10] == 2 and t.rows[0][-1] == "2 of 3"


def test_lines_of_code_are_counted_on_a_machine_without_git(tmp_path):
    """pygount's GitPython refuses to load where no git is installed (a fresh container: seen
    in make demo there); the count of local files does not need git."""
    import subprocess
    import sys
    code = ("import os; os.environ['PATH'] = '/nonexistent'\n"
            "from pathlib import Path\n"
            "from jvmos.experiments import matmul\n"
            "root = Path(matmul.__file__).resolve().parents[2]\n"
            "loc = matmul.lines_of_code(root)\n"
            "print(sum(v['code'] for v in loc['files'].values()) > 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={"PATH": "/nonexistent", "HOME": str(tmp_path)})
    assert r.returncode == 0 and r.stdout.strip() == "True", r.stderr[-1500:]
