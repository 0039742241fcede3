"""The generic server experiment's pieces that need no tracing: levels, the server's port and
JVM found from /proc, a level's resources, the table."""
import os
import socket
import subprocess
import sys

import pytest

from jvmos import JvmosError
from jvmos.experiments import server as srv


def test_level_tokens():
    assert srv.parse_level_tokens("5,10, 20") == ["5", "10", "20"]
    assert srv.parse_level_tokens("10x10,c1") == ["10x10", "c1"]
    for bad in ("", " ", "5,,10", "a b", "5;rm", "$(x)", "5,5"):
        with pytest.raises(JvmosError):
            srv.parse_level_tokens(bad)


def test_positive_levels():
    assert srv.parse_positive_levels("5,10,20,40", "rooms") == [5, 10, 20, 40]
    for bad in ("0", "-1", "1.5", "x", "5,x", "05"):
        with pytest.raises(JvmosError) as e:
            srv.parse_positive_levels(bad, "rooms")
        assert "rooms" in str(e.value)


def test_check_commands():
    assert srv.check_commands("java -jar 'a b.jar'", "load {level}") == ["java", "-jar", "a b.jar"]
    for s, l in (("", "x {level}"), ("java 'unclosed", "x {level}"), ("java", "x"),
                 ("java", "x '{level}")):
        with pytest.raises(JvmosError):
            srv.check_commands(s, l)


def test_listening_ports_and_descendants():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    port = s.getsockname()[1]
    try:
        assert port in srv.listening_ports(os.getpid())
    finally:
        s.close()
    assert port not in srv.listening_ports(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert child.pid in srv.descendants(os.getpid())
    finally:
        child.kill()
        child.wait()


def test_resource_times_zero_only_for_attached_layers():
    L = {"by_resource": {"io": 5.0, "links": 1.0}, "overhead_unknown": ["malloc"]}
    by = srv.resource_times(L, ["io", "threads", "links", "mem"])
    # threads attached, nothing created: 0; mem's time unknown: stays None
    assert by == {"io": 5.0, "links": 1.0, "threads": 0.0}
    by = srv.resource_times({"by_resource": {"io": 5.0}}, ["io"])
    assert by.get("threads") is None and by.get("mem") is None


def level(bare_cpu, rec_cpu, io, rate_b, rate_r, est):
    from jvmos.cputime import cpu_split
    L = {"bare": {"server_cpu_ns": bare_cpu, "rate": rate_b}, "recorded": {"rate": rate_r},
         "by_resource": {"io": io, "threads": 0.0, "links": 0.0, "mem": 0.0},
         "server_cpu_ns": rec_cpu, "bare_cpu_ns": bare_cpu,
         "probe_totals": {"probe_overhead_ns": est}}
    L.update(cpu_split(bare_cpu, rec_cpu, io))
    return L


def test_overhead_table_rows():
    levels = {"5": level(100e6, 150e6, 25e6, 1000.0, 800.0, 40e6),
              "10": level(200e6, 260e6, 40e6, 1500.0, None, 90e6)}
    t = srv.overhead_table("T", levels, "rooms", "rate", "messages/s")
    csv = t.csv().splitlines()
    assert csv[0].startswith("rooms,messages/s (bare),messages/s (recorded),I/O,memory")
    row = csv[1].split(",")
    assert row[0] == "5" and row[1] == "1000.0" and row[2] == "800.0"
    # overhead / bare CPU = 25 / 100; Java execution = 100 - 25
    assert float(row[7]) == 75e6 and float(row[8]) == 25.0
    # estimated 40 ms against observed 150 - 100 = 50 ms; 90 against 60
    assert levels["5"]["probe_effect"]["ratio"] == pytest.approx(0.8)
    assert levels["5"]["probe_effect"]["within_goal"] is True
    assert levels["10"]["probe_effect"]["ratio"] == pytest.approx(1.5)
    assert levels["10"]["probe_effect"]["within_goal"] is False
    assert "—" in t.markdown().splitlines()[-1]        # a missing rate is a dash, not 0


class FakeResult:
    def __init__(self, run_dir):
        self.status, self.run_dir = "complete", run_dir
        self.summary = {"totals": {"wall_ns": 1e9, "guaranteed_by_resource": {"io": 3e6,
                                                                               "links": 1e6},
                                   "probe_overhead_ns": 2e6},
                        "categories": {"sync": {"calls": 7, "time_ns": 5e6, "wait_calls": 4},
                                       "link": {"syscalls": {"accept": {"calls": 3}}}}}


class FakeServer:
    """A target whose CPU clock advances 10 ms per load, 14 ms when a recording is on."""

    def __init__(self):
        self.pid, self.cpu, self.recording, self.loads = 4242, 0, False, 0

    def cpu_ns(self):
        return self.cpu

    def load(self):
        self.loads += 1
        self.cpu += 14_000_000 if self.recording else 10_000_000
        return {"rate": 100.0 + self.loads}


def test_measure_level_against_a_stub_target(monkeypatch, tmp_path):
    """The level's figures from one recorded and one bare load (and a warm pair): the
    attach target is the server's pid, the CPU split is on the bare load."""
    srv_ = FakeServer()
    seen = []

    def fake_record(opts):
        seen.append(opts.pid)
        srv_.recording = True
        try:
            opts.workload()
        finally:
            srv_.recording = False
        opts.out.mkdir(parents=True, exist_ok=True)
        return FakeResult(opts.out)

    monkeypatch.setattr(srv.rec, "record", fake_record)
    L = srv.measure_level(srv_, srv_.load, tmp_path, "lv", "a level", pair=True)
    assert seen == [4242, 4242]                     # the level's recording and the warm one
    assert srv_.loads == 4                          # recorded, bare; warm: recorded, bare
    assert L["server_cpu_ns"] == 14e6 and L["bare_cpu_ns"] == 10e6
    assert L["guaranteed_ns"] == 4e6 and L["java_exec_ns"] == 6e6
    assert L["overhead_pct_of_bare_cpu"] == 40.0
    assert L["waits"]["futex_calls"] == 7 and L["waits"]["runq_waits"] is None
    assert L["recorded"]["rate"] == 101.0 and L["bare"]["rate"] == 102.0
    w = L["warm_pair"]
    assert w["bare_cpu_ns"] == [10e6, 10e6] and w["server_cpu_ns"] == 14e6
    pe = srv.level_probe_effect(L)
    assert pe["observed_ns"] == 4e6 and pe["estimated_ns"] == 2e6 and pe["ratio"] == 0.5


def test_shop_is_a_target():
    from jvmos.experiments.shop import Shop
    assert isinstance(Shop.pid, property)


def test_resource_headers_say_measured_or_estimated():
    """The headers come from the recordings' category methods: I/O here is all estimated
    (nio and kernel copies are bytes x calibrated costs), memory mixed, threads measured."""
    L = {"resource_methods": {"io": {"nio_copy": "estimated", "kernel_copy": "estimated"},
                              "mem": {"malloc": "measured", "free_estimated": "estimated",
                                      "vm": "measured+estimated"},
                              "threads": {"thread_create": "measured"}, "links": {}}}
    levels = {"1": L}
    assert srv.resource_header(levels, "io") == "I/O (estimated)"
    assert srv.resource_header(levels, "mem") == "memory (measured + estimated)"
    assert srv.resource_header(levels, "threads") == "threads (measured)"
    assert srv.resource_header(levels, "links") == "links"      # no category seen: no claim
    note = srv.methods_note(levels)[0]
    assert "I/O: kernel_copy estimated, nio_copy estimated" in note
    assert "memory: free_estimated estimated, malloc measured, vm measured+estimated" in note
    assert srv.methods_note({"1": {}}) == []


def rep(bare_cpu, rec_cpu, io, threads, est, rate_b, rate_r):
    """One repeat of a level as measure_level returns it (the fields combine_repeats reads)."""
    from jvmos.cputime import cpu_split
    g = io + threads
    L = {"bare": {"server_cpu_ns": bare_cpu, "rate": rate_b},
         "recorded": {"rate": rate_r, "server_cpu_ns": rec_cpu},
         "by_resource": {"io": io, "threads": threads}, "guaranteed_ns": g,
         "server_cpu_ns": rec_cpu, "bare_cpu_ns": bare_cpu, "probe_overhead_ns": est,
         "probe_totals": {"probe_overhead_ns": est}, "wall_ns": 1e9,
         "counts": {"threads_created": 7}, "run_dir": "runs/x-r1", "overhead_unknown": []}
    L.update(cpu_split(bare_cpu, rec_cpu, g))
    L.update(srv.same_load_split(rec_cpu, est, g))
    return L


def test_same_load_share_divides_by_the_recorded_load_less_the_probe_estimate():
    s = srv.same_load_split(150e6, 30e6, 24e6)
    assert s["same_load_cpu_ns"] == 120e6 and s["overhead_pct_of_same_load"] == 20.0
    assert s["java_exec_same_load_ns"] == 96e6
    assert srv.same_load_split(None, 30e6, 1.0)["overhead_pct_of_same_load"] is None
    # an estimate larger than the recorded CPU leaves no denominator, never a negative share
    assert srv.same_load_split(10e6, 30e6, 1.0)["overhead_pct_of_same_load"] is None


def test_repeats_are_combined_as_means_with_their_range():
    layers = ("io", "threads", "links")
    reps = [rep(100e6, 150e6, 20e6, 5e6, 30e6, 1000.0, 800.0),
            rep(110e6, 170e6, 30e6, 5e6, 40e6, 900.0, 700.0),
            rep(90e6, 130e6, 25e6, 5e6, 20e6, 1100.0, 900.0)]
    L = srv.combine_repeats(reps, layers, "rate")
    assert L["guaranteed_ns"] == pytest.approx(30e6) and L["bare_cpu_ns"] == pytest.approx(100e6)
    assert L["by_resource"]["io"] == pytest.approx(25e6)
    assert L["by_resource"]["links"] == 0.0          # attached, saw nothing: 0, not unknown
    assert L["overhead_pct_of_bare_cpu"] == pytest.approx(30.0)       # share of the means
    # same load: mean recorded 150 - mean estimate 30 = 120 ms; 30 / 120
    assert L["overhead_pct_of_same_load"] == pytest.approx(25.0)
    sp = L["spread"]
    assert sp["n"] == 3 and sp["overhead_pct_of_bare_cpu"] == pytest.approx([25.0, 100 * 30 / 90])
    assert sp["guaranteed_ns"] == [25e6, 35e6]
    assert L["bare"]["rate"] == pytest.approx(1000.0) and L["recorded"]["rate"] == pytest.approx(800.0)
    assert L["repeats"] is reps and "counts" in L["first_repeat_only"]
    assert srv.spread_text(L).endswith("(n = 3)") and srv.spread_text(reps[0]) == "— (1 run)"
    # one repeat is the level itself
    assert srv.combine_repeats(reps[:1], layers, "rate") is reps[0]


def test_figure_with_repeats_draws_error_bars(tmp_path, monkeypatch):
    from matplotlib.axes import Axes
    bars = []
    real = Axes.errorbar

    def spy(self, x, y, yerr=None, **kw):
        bars.append((x, y, yerr))
        return real(self, x, y, yerr=yerr, **kw)
    monkeypatch.setattr(Axes, "errorbar", spy)
    layers = ("io", "threads", "links", "mem")
    levels = {"5x20": srv.combine_repeats(
        [rep(100e6, 150e6, 20e6, 5e6, 30e6, 1.0, 1.0), rep(110e6, 170e6, 30e6, 5e6, 40e6, 1.0, 1.0),
         rep(90e6, 130e6, 25e6, 5e6, 20e6, 1.0, 1.0)], layers, "rate")}
    files = srv.stacked_figure(levels, tmp_path / "fig", "T", "load")
    svg = next(f for f in files if f.suffix == ".svg").read_text()
    assert "mean of 3 repeats" in svg and "25.0%" in svg and "recorded load" in svg
    # two error bars: the overhead's min-max (25..35 ms around its mean 30) and the bar's
    (x1, y1, e1), (x2, y2, e2) = bars
    assert y1 == pytest.approx(30.0) and e1 == [[pytest.approx(5.0)], [pytest.approx(5.0)]]
    # the bar: the same-load CPU, mean 120 ms, its repeats 110..130 (150-40 .. 150-20 etc.)
    assert y2 == pytest.approx(120.0)
