"""`jvmos run predictions`' arithmetic: paired intervals, the ratio's delta-method interval, the
equivalence verdict, the power estimate, ABBA order, the /proc reader, and one term analysed
from synthetic windows (every number checked against a hand computation)."""
import math
import subprocess
import sys
import time

import pytest
from scipy import stats as st

from jvmos import proctimes
from jvmos.analyzers import stats
from jvmos.experiments import predictions as pr

PLATFORM = {
    "constants": {"C_nt": {"mean_us": 80.0, "ci95_us": [70.0, 90.0]},
                  "C_link": {"mean_us": 10.0, "ci95_us": [9.0, 11.0]},
                  "C_file": {"mean_us": 2.5, "ci95_us": [2.0, 3.0]},
                  "C_io_chunk": {"mean_us": 0.9, "ci95_us": [0.8, 1.0]}},
    "copy": {"page_fault": {"ns_per_call": 1500.0, "ns_per_call_ci95": [1300.0, 1700.0]},
             "nio_heap_to_direct": {"/jdk": {"ns_per_byte": 0.02,
                                             "ns_per_byte_ci95": [0.01, 0.03],
                                             "ns_per_call": 5.0,
                                             "ns_per_call_ci95": [2.0, 8.0]}}},
}


def test_paired_interval_is_student_t():
    d = [10.0, 12.0, 9.0, 13.0]
    r = stats.paired_diff_ci(d, 0.90)
    m, sd = 11.0, math.sqrt(sum((x - 11.0) ** 2 for x in d) / 3)
    h = st.t.ppf(0.95, 3) * sd / 2
    assert r["mean"] == pytest.approx(m) and r["ci"] == pytest.approx([m - h, m + h])
    with pytest.raises(ValueError):
        stats.paired_diff_ci([1.0])


def test_ratio_delta_method():
    d = [10.0, 12.0, 9.0, 13.0]
    r = stats.ratio_ci(d, 10.0, 0.5, 0.90)
    se_d = stats.paired_diff_ci(d)["se"]
    a, b = se_d ** 2 / 100, 11.0 ** 2 * 0.25 / 10 ** 4
    se = math.sqrt(a + b)
    # a prediction's se known exactly (infinite df): Satterthwaite gives (a + b)^2 / (a^2 / 3)
    df = (a + b) ** 2 / (a * a / 3)
    assert r["ratio"] == pytest.approx(1.1) and r["df"] == pytest.approx(df)
    assert r["ci"] == pytest.approx([1.1 - st.t.ppf(0.95, df) * se, 1.1 + st.t.ppf(0.95, df) * se])
    assert stats.ratio_ci(d, 0.0, 0.1) is None


@pytest.mark.parametrize("ci,kind", [([0.85, 1.2], "confirmed"), ([0.5, 0.7], "refuted"),
                                     ([1.3, 2.0], "refuted"), ([0.7, 1.1], "inconclusive"),
                                     ([0.9, 1.4], "inconclusive")])
def test_equivalence_rule(ci, kind):
    v = stats.equivalence_verdict({"ratio": sum(ci) / 2, "ci": ci, "level": 0.9},
                                  {"mean": 5.0, "ci": [4.0, 6.0]}, 5.0)
    assert v["verdict"] == kind


def test_missing_term_needs_a_saving():
    shown = {"mean": 5.0, "ci": [4.0, 6.0]}
    assert stats.equivalence_verdict(None, shown, 0.0)["verdict"] == "missing term"
    # a prediction below 1% of what was saved is about 0 too
    assert stats.equivalence_verdict({"ratio": 200, "ci": [150, 250], "level": 0.9}, shown,
                                     0.02)["verdict"] == "missing term"
    assert stats.equivalence_verdict(None, {"mean": 0.1, "ci": [-1.0, 1.2]},
                                     0.0)["verdict"] == "inconclusive"


def test_pairs_needed():
    # no spread: only the prediction's own error counts
    assert stats.pairs_needed(0.0, 10.0, 0.01) == 2
    n = stats.pairs_needed(3.0, 10.0, 0.0)
    assert st.t.ppf(0.95, n - 1) * 3.0 / math.sqrt(n) / 10 <= 0.2
    assert st.t.ppf(0.95, n - 2) * 3.0 / math.sqrt(n - 1) / 10 > 0.2
    assert stats.pairs_needed(1.0, 10.0, 0.5) is None     # the constant alone is too wide


def test_blocks_alternate_and_balance():
    orders = [pr.block_order(b, 7) for b in range(4)]
    assert set(orders[0::2]) == {orders[0]} and set(orders[1::2]) == {orders[1]}
    assert {orders[0], orders[1]} == {"ABBA", "BAAB"}
    # over two blocks, each arm runs first, second, third and fourth once
    for arm in "AB":
        assert sorted(o.index(arm) for o in orders[:2]) + sorted(
            o.rindex(arm) for o in orders[:2]) == [0, 1, 2, 3]


def test_proc_snapshot_sees_kernel_time_and_faults():
    """A child that touches 64 MiB of fresh memory and makes many syscalls: its window shows
    the faults and the kernel time the kernel charged it."""
    code = ("import mmap,os,sys,time\n"
            "sys.stdin.readline()\n"
            "m=mmap.mmap(-1,64<<20)\n"
            "for i in range(0,64<<20,4096): m[i]=1\n"
            "fd=os.open('/dev/null',os.O_WRONLY)\n"
            "for i in range(200000): os.write(fd,b'x')\n"
            "print('done',flush=True)\nsys.stdin.readline()\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.3)
        a = proctimes.snapshot(p.pid)
        p.stdin.write("go\n")
        p.stdin.flush()
        assert p.stdout.readline().strip() == "done"
        b = proctimes.snapshot(p.pid)
    finally:
        p.stdin.write("end\n")
        p.stdin.flush()
        p.wait(timeout=30)
    w = proctimes.window(a, b)
    assert w["minflt"] >= 16384 * 0.9              # one fault per 4 KiB page, at least
    assert w["syscw"] >= 200000 and w["wchar"] >= 200000
    assert w["stime_ns"] > 0 and w["cpu_ns"] > 0
    assert abs(w["utime_ns"] + w["stime_ns"] - w["cpu_ns"]) <= 0.05 * w["cpu_ns"] + 3e7
    assert w["service"]["jit"]["threads"] == 0      # not a JVM


def test_service_classes():
    assert proctimes.service_class("C2 CompilerThre") == "jit"
    assert proctimes.service_class("C1 CompilerThre") == "jit"
    assert proctimes.service_class("GC Thread#0") == "gc"
    assert proctimes.service_class("G1 Conc#0") == "gc"
    assert proctimes.service_class("VM Thread") == "gc"
    assert proctimes.service_class("main") == ""
    assert proctimes.service_class("pool-1-thread-1") == ""


def _window(stime, utime=0.0, minflt=0, wchar=1000, jit=(0.0, 0.0), gc=(0.0, 0.0)):
    return {"stime_ns": stime, "utime_ns": utime, "cpu_ns": stime + utime, "minflt": minflt,
            "wchar": wchar, "service": {"jit": {"utime_ns": jit[0], "stime_ns": jit[1]},
                                        "gc": {"utime_ns": gc[0], "stime_ns": gc[1]}},
            "service_exited": {}, "stime_nojit_ns": stime - jit[1],
            "utime_nojit_ns": utime - jit[0]}


def _pair(a_windows, b_windows):
    # the i-th window's answers alike in both arms (the same requests), different per window
    k = len(a_windows)
    return {"windows": {"A": a_windows, "B": b_windows},
            "answers": {"A": list(range(k)), "B": list(range(k))}, "order": "ABBA"[:2 * k]}


def _a_first(order: str) -> int:
    """In how many pairs (A's i-th window with B's i-th) A ran first."""
    a = [i for i, x in enumerate(order) if x == "A"]
    b = [i for i, x in enumerate(order) if x == "B"]
    return sum(x < y for x, y in zip(a, b))


def test_window_order_is_balanced():
    for w in (1, 2, 3, 6, 7):
        o = pr.window_order(w, 5)
        assert len(o) == 2 * w and o.count("A") == o.count("B") == w
    assert pr.window_order(4, 5) in ("ABBABAAB", "BAABABBA")
    # over an even count each arm goes first in half the pairs
    for w in (2, 4, 6):
        assert _a_first(pr.window_order(w, 5)) == w // 2
    # one window per server pair (page faults): successive server pairs alternate
    assert {pr.window_order(1, 5, 0), pr.window_order(1, 5, 1)} == {"AB", "BA"}


def test_server_pair_order_balances_the_tested_windows():
    """A settling window before the tested ones must not unbalance them (an order drawn over
    discard + windows and then cut would give AABBAA)."""
    firsts = []
    for k in range(4):
        order = pr.pair_order(1, 6, 7, k)
        assert len(order) == 14 and _a_first(order[2:]) == 3
        firsts.append(order[:2])
    # the settling windows alternate too
    assert firsts.count("AB") == firsts.count("BA") == 2


def test_stop_all_stops_every_server():
    from jvmos import JvmosError

    class S:
        def __init__(self, fail):
            self.fail, self.stopped = fail, False

        def stop(self, quiet):
            self.stopped = True
            if self.fail:
                raise JvmosError("exited 1")
    a, b = S(True), S(False)
    with pytest.raises(JvmosError):
        pr.stop_all([a, b], quiet=False)
    assert a.stopped and b.stopped


def test_proc_window_arithmetic():
    def snap(cpu, u, k, jit_u, jit_k, tids):
        return {"cpu_ns": cpu, "utime_ns": u, "stime_ns": k, "minflt": 10, "majflt": 0,
                "syscr": 1, "syscw": 2, "rchar": 3, "wchar": 4, "t": 1.0,
                "service": {"jit": {"utime_ns": jit_u, "stime_ns": jit_k, "threads": 2},
                            "gc": {"utime_ns": 0.0, "stime_ns": 0.0, "threads": 1}},
                "service_tids": tids}
    a = snap(100, 50, 40, 10, 2, {"7": "jit", "8": "jit", "9": "gc"})
    b = snap(300, 150, 120, 40, 12, {"7": "jit", "9": "gc"})
    w = proctimes.window(a, b)
    assert (w["cpu_ns"], w["utime_ns"], w["stime_ns"]) == (200, 100, 80)
    assert w["stime_nojit_ns"] == 80 - 10 and w["utime_nojit_ns"] == 100 - 30
    assert w["service_exited"] == {"8": "jit"}


def test_analyze_keep_alive_by_hand():
    t = next(x for x in pr.TERMS if x.name == "keep-alive")
    n = 1001
    st_ = pr.settings(t)
    # per server pair: a settling window (not tested), then two tested windows whose A - B
    # kernel-time differences are (10, 11), (9, 10), (11, 11), (10, 10) ms: per-pair means
    # 10.5, 9.5, 11, 10; 1000 connections removed x 10 µs = 10 ms predicted
    # arm A's JIT threads spent 3 ms more kernel time per window: not in the clock
    diffs = [(10e6, 11e6), (9e6, 10e6), (11e6, 11e6), (10e6, 10e6)]
    servers = [_pair([_window(99e6)] + [_window(23e6 + d, jit=(0, 8e6)) for d in ds],
                     [_window(1e6)] + [_window(20e6, jit=(0, 5e6)) for _ in ds])
               for ds in diffs]
    r = {"requests": n, "settings": st_, "discard": 1, "servers": servers}
    x = pr.analyze_term(t, r, PLATFORM, "/jdk")
    assert x["count"]["removed"] == n - 1
    assert x["predicted_ns"] == pytest.approx(10e6)
    assert x["diffs_ns"] == pytest.approx([10.5e6, 9.5e6, 11e6, 10e6])
    assert x["window_diffs_ns"][0] == pytest.approx([10e6, 11e6])
    assert x["measured90"]["mean"] == pytest.approx(10.25e6)
    assert x["measured90"]["n"] == 4                 # the unit is the server pair
    assert x["window_level90"]["n"] == 8
    assert x["ratio"]["ratio"] == pytest.approx(1.025)
    # the constant's 95% interval [9, 11] µs, no trials stored: se = half-width / 1.96
    assert x["predicted_se_ns"] == pytest.approx(1000 * 1e3 / 1.96)
    assert x["verdict"]["verdict"] == "confirmed"
    assert x["equal_work"]["equal"]
    # the whole stime moved 3 ms more than the clock did
    assert x["other_clocks"]["stime_ns"]["mean"] == pytest.approx(13.25e6)


def test_c_nt_is_priced_by_its_kernel_part():
    t = next(x for x in pr.TERMS if x.name == "thread-pool")
    k = {"constants": {"C_nt": {"mean_us": 80.0, "ci95_us": [70.0, 90.0]},
                       "C_nt_kernel": {"mean_us": 50.0, "ci95_us": [45.0, 55.0]}}, "copy": {}}
    consts, by = pr.priced(t, k)
    assert consts["constants"]["C_nt"]["mean_us"] == 50.0 and "kernel part" in by
    consts, by = pr.priced(t, {"constants": {"C_nt": k["constants"]["C_nt"]}, "copy": {}})
    assert consts["constants"]["C_nt"]["mean_us"] == 80.0 and "low by that part" in by


def test_ratio_estimator_for_a_measured_count():
    # the saving moves with the count exactly: the ratio estimator has no measured spread left
    counts = [900.0, 1000.0, 1100.0]
    diffs = [1.5 * c for c in counts]          # 1.5 per use, where 1.0 per use is predicted
    r = stats.ratio_ci(diffs, 1000.0, 0.0, 0.90, counts=counts)
    assert r["ratio"] == pytest.approx(1.5) and r["ci"][1] - r["ci"][0] == pytest.approx(0.0)
    # the same differences with the count taken as exact keep their spread
    r2 = stats.ratio_ci(diffs, 1000.0, 0.0, 0.90)
    assert r2["ci"][1] - r2["ci"][0] > 0.1


def test_analyze_refuses_unequal_work_and_uses_faults():
    t = next(x for x in pr.TERMS if x.name == "pretouch")
    servers = [_pair([_window(5e6, minflt=1000)], [_window(3e6, minflt=0, wchar=2000)])
               for _ in range(2)]
    r = {"requests": 100, "settings": pr.settings(t), "discard": 0, "servers": servers}
    x = pr.analyze_term(t, r, PLATFORM, "/jdk")
    # the first window: 1000 faults removed x 1.5 µs = 1.5 ms predicted; 2 ms measured
    assert x["count"]["removed"] == 1000
    assert x["predicted_ns"] == pytest.approx(1.5e6)
    assert x["measured90"]["mean"] == pytest.approx(2e6)
    assert x["verdict"]["verdict"] == "unequal work"
    assert not pr.equal_work(t, r)["equal"] and pr.equal_work(t, r)["same_answers"]
    servers[1]["answers"]["B"] = [7]
    assert not pr.equal_work(t, r)["same_answers"]


def test_parse_rules():
    with pytest.raises(SystemExit):
        pr.parse(["--servers", "1"])
    with pytest.raises(SystemExit):
        pr.parse(["--windows", "0"])
    with pytest.raises(SystemExit):
        pr.parse(["--only", "nope"])
    a = pr.parse(["--quick"])
    assert (a.servers, a.windows) == (2, 2) and a.constants == "platform"
    assert a.requests_scale == 0.25
    a = pr.parse([])
    assert (a.servers, a.windows) == (6, 6) and a.constants == "same-run"


def test_prediction_se_from_the_calibration_trials():
    t = next(x for x in pr.TERMS if x.name == "thread-pool")
    consts = {"constants": {"C_nt": {"mean_us": 70.0, "ci95_us": [40.0, 100.0],
                                     "samples_us": [60.0, 70.0, 80.0]}}, "copy": {}}
    p = {"predicted_ci95_us": [0.0, 1.0]}
    se, df = pr.prediction_se(t, consts, p, 1000)
    # 1000 threads x sd 10 µs / sqrt(3), in ns; 2 df
    assert se == pytest.approx(1000 * 10.0 / math.sqrt(3) * 1e3) and df == 2
    f = next(x for x in pr.TERMS if x.name == "pretouch")
    consts = {"constants": {}, "copy": {"page_fault": {"trials": 5}}}
    se, df = pr.prediction_se(f, consts, {"predicted_ci95_us": [10.0, 30.0]}, 100)
    assert se == pytest.approx(10e3 / st.t.ppf(0.975, 4)) and df == 4


def test_ratio_df_is_welch_satterthwaite():
    d = [10.0, 12.0, 9.0, 13.0, 11.0, 10.5]
    r = stats.ratio_ci(d, 10.0, 2.0, 0.90, predicted_df=2)
    dd = stats.paired_diff_ci(d)
    a = dd["se"] ** 2 / 100
    b = dd["mean"] ** 2 * 4.0 / 10 ** 4
    df = (a + b) ** 2 / (a * a / 5 + b * b / 2)
    assert r["df"] == pytest.approx(df) and 2 <= r["df"] <= 7
    h = st.t.ppf(0.95, df) * math.sqrt(a + b)
    assert r["ci"] == pytest.approx([r["ratio"] - h, r["ratio"] + h])
