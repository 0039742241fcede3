"""--sample within --max-overhead: the sampler's cost model (jvmos/samplercost.py), the interval
a profile window is run at (dutycycle.sampler_window), the room the probes' windows leave it
(Agent.sampler_reserve), and what a finished window is estimated to have cost."""
import random
import time
import types

import pytest

from jvmos import JvmosError, agent, agentconfig, agentmetrics, dutycycle as dc, profiles
from jvmos import samplercost

CPU = 1e9            # one core busy: ns of CPU per second
P = 5.0
BASE = profiles.INTERVAL_MS * 1_000_000
# the order of magnitude measured here (jvmos calibrate --sampler, JDK 17, 2-core VM)
# the agent prices with the upper ends of the intervals (samplercost.constants): 50 us a
# sample, 5 ms a window, 0 a second open (an interval all below 0 counts as 0)
MODEL = {"ns_per_sample": {"mean": 45_000.0, "ci95": [40_000.0, 50_000.0], "n": 3},
         "ns_per_window": {"mean": 4_000_000.0, "ci95": [3e6, 5e6], "n": 3},
         "ns_per_window_s": {"mean": -0.5e6, "ci95": [-1e6, 0.0], "n": 3}, "event": "itimer"}


def share(limit_pct):
    return dc.SAMPLER_SHARE * dc.TARGET * limit_pct / 100.0


def test_the_default_window_is_kept_when_it_fits_and_lengthened_or_coarsened_when_not():
    # 2% of a core: a 0.8% share, 8e6 ns/s; 50 µs per 10 ms is 5e6 of it, 5 ms per 5 s 1e6
    assert dc.sampler_window(50e3, 5e6, 0.0, CPU, 5, 30, 2.0, BASE) == (BASE, 5, "")
    # the price measured here (a sample's cost 0, 26.4 ms a window, 3.5 ms a second open) at
    # 0.8 of a core: 6.4e6 ns/s, 2.9e6 left for the start and stop, which a 5 s window would
    # spread at 5.28e6: the shortest window they fit is ceil(26.4 / 2.9) = 10 s
    assert dc.sampler_window(0.0, 26.4e6, 3.5e6, 0.8 * CPU, 5, 30, 2.0, BASE) == (BASE, 10, "")
    # 0.5%: 2e6 ns/s; the samples alone at 10 ms would take 5e6: the 5 s window is kept
    # (its start and stop 1e6) and its samples get the other 1e6: a sample per 50 ms
    got, length, why = dc.sampler_window(50e3, 5e6, 0.0, CPU, 5, 30, 0.5, BASE)
    assert why == "" and length == 5 and got == pytest.approx(50_000_000, rel=1e-9)
    # 0.1%: 4e5 ns/s, less than a 5 s window's start and stop (1e6): the longest window
    # (30 s, 1.67e5), its samples at 50e3 x 1e9 / 2.33e5 = 214 ms
    got, length, why = dc.sampler_window(50e3, 5e6, 0.0, CPU, 5, 30, 0.1, BASE)
    assert why == "" and length == 30
    assert got == pytest.approx(50e3 * CPU / (4e5 - 5e6 / 30), rel=1e-6)
    # ... unless the longest allowed (8 s here) is too short even for them: skipped
    got, length, why = dc.sampler_window(50e3, 5e6, 0.0, CPU, 5, 8, 0.1, BASE)
    assert got is None and "without a sample" in why and "--max-overhead 0.1%" in why
    # 0.5 ms per sample in a 0.04% share would need a sample per 1.25 s of CPU: skipped too
    got, length, why = dc.sampler_window(500e3, 0.0, 0.0, 0.01 * CPU, 5, 30, 0.1, BASE)
    assert got is None and "a sample per" in why
    # a cost per second open above the whole share: nothing a length can do
    got, length, why = dc.sampler_window(50e3, 0.0, 5e5, CPU, 5, 30, 0.1, BASE)
    assert got is None and "0.5 ms a second open" in why
    # a JVM that used no CPU: nothing to sample
    got, length, why = dc.sampler_window(50e3, 5e6, 0.0, 0.0, 5, 30, 2.0, BASE)
    assert got is None and "no CPU" in why


def test_a_window_run_as_planned_stays_within_its_share():
    """Whatever the costs, the JVM's CPU and the limit: a window the plan lets run is
    estimated to cost at most the sampler's share of the budget while it runs, and its
    length stays between --sample-window and the longest allowed."""
    rng = random.Random(11)
    ran = skipped = longer = 0
    for _ in range(5000):
        c, f, g = rng.uniform(1e3, 200e3), rng.uniform(0, 50e6), rng.choice([0, 1e5, 1e7])
        cpu, window, limit = rng.uniform(0.001, 8) * CPU, rng.choice([1, 5, 30]), \
            rng.choice([0.1, 0.5, 1.0, 2.0, 5.0])
        interval, length, why = dc.sampler_window(c, f, g, cpu, window, 60, limit, BASE)
        if interval is None:
            skipped += 1
            assert why
            continue
        ran += 1
        longer += length > window
        assert interval >= BASE and window <= length <= max(window, 60)
        cost = c * cpu / interval + f / length + g       # the model, written out here
        assert cost <= share(limit) * cpu * (1 + 1e-9), (c, f, g, cpu, window, limit)
        assert dc.sampler_cost_per_s(c, f, g, cpu, length, interval) == pytest.approx(cost)
    assert ran > 1000 and skipped > 100 and longer > 100     # every branch exercised


def started_by_thread(p, pid) -> None:
    """Wait (2 s at most) for the window's jattach thread to have run."""
    for _ in range(200):
        if not p.jvms[pid].starting:
            return
        time.sleep(0.01)


def agent_with_profiles(tmp_path, limit=2.0, model=MODEL):
    a = agent.Agent(agentconfig.Config(max_overhead_pct=limit, interval_s=P, layers=("io",),
                                       sample_window_s=5.0, sample_every_s=60.0),
                    {"engine_probes": {}}, tmp_path / "p.json", tmp_path, log=lambda m: None)
    a.cfg.sample = True
    p = profiles.Profiles(tmp_path, window_s=5.0, every_s=60.0, log=lambda m: None)
    p.model, p.plan = model, a.sampler_plan
    a.profiles = p
    w = agent.Watch(types.SimpleNamespace(pid=7, key=(7, 1), describe=lambda: "pid 7"),
                    ("io",))
    w.layers, w.on = ("io",), {"io": True}
    w.eng = types.SimpleNamespace(window=lambda *a, **k: {})
    a.watches[w.proc.key] = w
    return a, p, w


def test_the_probes_windows_leave_room_for_a_running_profile_window(tmp_path, monkeypatch):
    """A hot loop (io probes cost 15% of the JVM's CPU while on) under a 2% limit: in a
    period with a profile window running, the probes' window shrinks by the sampler's
    estimate, and probes plus sampler stay within the limit; without one it is as before."""
    monkeypatch.setattr(agent.time, "monotonic", lambda: 1000.0)
    a, p, w = agent_with_profiles(tmp_path)
    r = 0.15 * CPU

    def plan():
        w.last, w.last_cpu = {"interval_s": P}, CPU * P
        w.last_on_s, w.last_by_layer = {"io": 0.5}, {"io": r * 0.5}
        w.window = {"io": 0.5}
        w.next_tick = 1000.0 + P
        a.plan_period(w)
        return w.window["io"]
    p.next_at[7] = time.time() + 3600                     # no window due
    alone = plan()
    assert alone == pytest.approx(dc.TARGET * 0.02 * CPU / r * P)
    interval, seconds, _ = a.sampler_plan(7)
    assert (interval, seconds) == (BASE, 5)
    p.jvms[7] = profiles.JvmProfiles(running=profiles.Window(
        start=1000.0, end=1005.0, jfr=tmp_path / "x.jfr", interval_ns=interval))
    beside = plan()
    sampler = 50e3 * CPU / interval + 5e6 / 5.0         # samples + start and stop, per s
    assert beside == pytest.approx((dc.TARGET * 0.02 * CPU - sampler) / r * P)
    assert r * beside / P + sampler <= 0.02 * CPU
    # the JVM's CPU fell to 0.1 of a core since the window was planned: at 10 ms it would be
    # estimated at 5e5 + 1e6 ns a second, over the sampler's share (8e5): the probes are
    # sized with the share, not shed for it (the window's own estimate keeps the rest)
    assert a.sampler_reserve(w, 0.1 * CPU, P) == pytest.approx(share(2.0) * 0.1 * CPU)
    # a window due within the next period counts as running
    p.jvms[7] = profiles.JvmProfiles()
    p.next_at[7] = time.time() + 1.0
    assert plan() == pytest.approx(beside)
    # ... unless its plan would skip it (a limit its start and stop cannot fit): no room kept
    a.cfg.max_overhead_pct = 0.001
    assert a.sampler_plan(7)[0] is None
    assert a.sampler_reserve(w, CPU, P) == 0.0


def test_a_window_over_the_budget_is_skipped_counted_and_said_once(tmp_path, monkeypatch):
    started, said = [], []
    monkeypatch.setattr(profiles, "start_window",
                        lambda pid, jfr, s, interval: started.append(interval))
    a, p, w = agent_with_profiles(tmp_path, limit=0.01)
    p.log = said.append
    w.last, w.last_cpu = {"interval_s": P}, CPU * P
    p.next_at[7] = 1005.0
    for t in (1005.0, 1065.0, 1125.0):
        p.step(7, t)
    assert not started
    st = p.exposed()[7]
    assert st["skipped"] == 3 and "without a sample" in st["last_skip"]
    assert len(said) == 1 and "window skipped" in said[0]
    # a limit it fits again: started, at the interval the plan chose
    a.cfg.max_overhead_pct = 0.5
    p.step(7, 1185.0)
    started_by_thread(p, 7)
    assert started == [pytest.approx(50_000_000, rel=1e-6)]
    assert p.exposed()[7]["interval_s"] == pytest.approx(0.05, rel=1e-6)


def test_a_window_waits_for_the_jvms_first_interval(tmp_path, monkeypatch):
    """Before the JVM's CPU was measured once, a window is not started at a guess: it waits
    (WAIT_S), without counting a skip, and starts sized once the interval is there."""
    started = []
    monkeypatch.setattr(profiles, "start_window",
                        lambda pid, jfr, s, interval: started.append(interval))
    a, p, w = agent_with_profiles(tmp_path, limit=0.5)
    assert a.sampler_plan(7) == (None, 5, None)
    p.next_at[7] = 1005.0
    assert p.step(7, 1005.0) == 1005.0 + profiles.WAIT_S
    assert not started and p.exposed()[7]["skipped"] == 0
    w.last, w.last_cpu = {"interval_s": P}, CPU * P
    p.step(7, 1006.0)
    started_by_thread(p, 7)
    assert started == [pytest.approx(50_000_000, rel=1e-6)]


def test_a_jvm_using_little_cpu_gets_a_longer_window_and_an_idle_one_none(tmp_path):
    """At 2%, 0.1 of a core has a share of 8e5 ns a second; its samples at 10 ms take 5e5, and
    a 5 s window's start and stop (5 ms) would take 1e6 of the 3e5 left: the window is
    lengthened to the shortest that fits, ceil(5e6 / 3e5) = 17 s, at 10 ms; a JVM that used
    no CPU gets no window; without a limit, the defaults."""
    a, p, w = agent_with_profiles(tmp_path, limit=2.0)
    w.last, w.last_cpu = {"interval_s": P}, 0.1 * CPU * P
    assert a.sampler_plan(7) == (BASE, 17, "")
    w.last_cpu = 0
    interval, _, why = a.sampler_plan(7)
    assert interval is None and "no CPU" in why
    a.cfg.max_overhead_pct = None
    assert a.sampler_plan(7) == (BASE, 5, "")


def test_a_finished_window_is_estimated_from_the_cpu_it_ran_over(tmp_path):
    run = profiles.Window(start=0, end=5, jfr=tmp_path / "x.jfr", interval_ns=20_000_000,
                          cpu_start=10**9, cpu_end=3 * 10**9)
    ns, ratio = profiles.window_cost(MODEL, run)
    # 2 s of CPU at a sample per 20 ms: 100 samples x 50 µs + 5 ms (+ 0 a second)
    assert ns == pytest.approx(100 * 50e3 + 5e6)
    dear = dict(MODEL, ns_per_window_s={"mean": 1.5e6, "ci95": [1e6, 2e6], "n": 3})
    assert profiles.window_cost(dear, run)[0] == pytest.approx(100 * 50e3 + 5e6 + 5 * 2e6)
    assert ratio == pytest.approx(ns / 2e9)
    assert profiles.window_cost(None, run) is None
    run.cpu_end = None
    assert profiles.window_cost(MODEL, run) is None


def test_the_metrics_say_the_interval_the_cost_and_the_skips(tmp_path, monkeypatch):
    """A window run at 50 ms (a 0.5% limit) over 2 s of the JVM's CPU, then one skipped (a
    0.1% limit): /metrics has the interval, the estimated cost and the skip."""
    from prometheus_client.exposition import generate_latest
    from prometheus_client.parser import text_string_to_metric_families
    from test_agent import exposed_agent
    monkeypatch.setattr(profiles, "start_window", lambda *a: None)
    a = exposed_agent(tmp_path)
    w = next(iter(a.watches.values()))
    a.cfg.max_overhead_pct, a.cfg.sample_window_s = 0.5, 5.0
    w.last_cpu = int(CPU * w.last["interval_s"])
    p = profiles.Profiles(tmp_path, window_s=5.0, every_s=60.0, log=lambda m: None)
    p.model, p.plan, a.profiles = MODEL, a.sampler_plan, p
    cpu = iter([10**9, 3 * 10**9])
    p.cpu_of = lambda pid: next(cpu)
    root = tmp_path / "root"
    (root / "tmp").mkdir(parents=True)
    p.root_of, p.clock = (lambda pid: root), (lambda: 1005.0)
    pid = w.proc.pid
    p.next_at[pid] = 1005.0
    p.step(pid, 1005.0)
    started_by_thread(p, pid)
    run = p.jvms[pid].running
    assert run is not None, p.exposed()
    (root / run.in_jvm.lstrip("/")).write_bytes(b"JFR")
    p.step(pid, run.end)                               # its CPU at its end
    p.step(pid, run.end + profiles.FILE_AFTER_S)       # filed
    a.cfg.max_overhead_pct = 0.01
    p.next_at[pid] = 0.0
    p.step(pid, 2000.0)                                # skipped
    st = p.exposed()[pid]
    assert st["windows"] == 1 and st["skipped"] == 1 and st["window_s"] == 5
    want = 5e6 + 50e3 * 2e9 / 50e6                     # 40 samples at 50 ms, and the window
    assert st["estimated_cost_s"] == pytest.approx(want / 1e9)
    text = generate_latest(agentmetrics.registry_for(a)).decode()
    got = {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples
           if s.name.startswith("jvmos_profile_")}
    assert got["jvmos_profile_interval_seconds"] == pytest.approx(0.05, rel=1e-6)
    assert got["jvmos_profile_window_seconds"] == 5
    assert got["jvmos_profile_estimated_cost_seconds_total"] == pytest.approx(want / 1e9)
    assert got["jvmos_profile_skipped_total"] == 1
    assert got["jvmos_profile_windows_total"] == 1


def test_fit_recovers_known_constants_and_refuses_what_it_cannot_fit():
    class J:
        version, home = "17", "/jdk"
    T, L = 3, samplercost.LONG_S
    rows = []
    for b, (f, g, c) in enumerate([(4e6, 10e6, 50e3), (6e6, 14e6, 60e3), (5e6, 12e6, 40e3)]):
        for arm in samplercost.ORDER:
            # the loaded loop pays the window and its noise too (here +-20 ms a block, more
            # than its 950 samples cost): only the sampled minus loaded difference prices them
            noise = 20e6 * (-1) ** b
            cpu = {"idle": 1e6 * L, "window": 1e6 * L + f + g * L, "short_idle": 1e6,
                   "short_window": 1e6 + f + g, "loaded": 900e6 + f + g * T + noise,
                   "sampled": 900e6 + f + g * T + noise + c * 950}[arm]
            row = {"arm": arm, "cpu_ns": cpu, "block": b, "thread_cpu_ns": None}
            if arm == "sampled":
                row["samples"] = 950
            rows.append(row)
    # a linear drift over each block's segments (the machine warming): ORDER puts every arm's
    # mean position at the block's middle, so it cancels
    for k, r in enumerate(rows):
        r["cpu_ns"] += 3e6 * (k % len(samplercost.ORDER))
    m = samplercost.fit(rows, J, 1_000_000, 64, 100, T)
    assert m["ns_per_window"]["mean"] == pytest.approx(5e6)
    assert m["ns_per_window_s"]["mean"] == pytest.approx(12e6)
    assert m["ns_per_sample"]["mean"] == pytest.approx(50e3)
    lo, hi = m["ns_per_sample"]["ci95"]
    assert lo < 50e3 < hi and m["ns_per_sample"]["n"] == 3
    assert "Student's t 95% (n = 3)" in m["method"] and f"({L} - 1)" in m["method"]
    assert "cpu event" in samplercost.validate(m)      # fit alone does not say its event
    m["event"] = samplercost.EVENT
    assert samplercost.validate(m) is None
    assert "not calibrated" in samplercost.validate(None)
    old = {k: v for k, v in m.items() if k != "ns_per_window_s"}
    assert "measures it again" in samplercost.validate(old)
    for r in rows:
        if r["arm"] == "sampled":
            r["samples"] = 0
    with pytest.raises(JvmosError, match="no sample"):
        samplercost.fit(rows, J, 1_000_000, 64, 100, T)
    # a price whose whole interval is at or below 0 is refused (not a cost); one whose mean
    # is below 0 but whose interval reaches above it is priced at the interval's upper end
    m["ns_per_sample"] = {"mean": 0.0, "ci95": [0.0, 0.0], "n": 3}
    assert "not a cost" in samplercost.validate(m)
    m["ns_per_sample"] = {"mean": -17.6e3, "ci95": [-40e3, -1e3], "n": 3}
    assert "ns_per_sample came out at -17.6 µs" in samplercost.validate(m)
    m["ns_per_sample"] = {"mean": -8.3e3, "ci95": [-40e3, 23e3], "n": 2}
    assert samplercost.validate(m) is None
    assert samplercost.constants(m)[0] == 23e3
    m["ns_per_sample"] = {"mean": 50e3, "ci95": [40e3, 60e3], "n": 3}
    m["ns_per_window"] = {"mean": -1e6, "ci95": [-2e6, 0.0], "n": 3}
    assert "ns_per_window came out" in samplercost.validate(m)
    m["ns_per_window"] = {"mean": 5e6, "ci95": [4e6, 6e6], "n": 3}
    assert samplercost.validate(m) is None
    m["ns_per_window"] = {"mean": 5e6, "n": 3}
    assert "without its interval" in samplercost.validate(m)
    m["ns_per_window"] = {"mean": 5e6, "ci95": [4e6, 6e6], "n": 3}
    m["segments"] = [{"arm": "bare", "cpu_ns": 1.0}]
    assert "design" in samplercost.validate(m)
    # a constant measured below 0 is noise around a small cost: 0 in an estimate
    neg = {"ns_per_sample": {"mean": -5.0, "ci95": [-9.0, -1.0]},
           "ns_per_window": {"mean": -1e6, "ci95": [-2e6, -0.5e6]},
           "ns_per_window_s": {"mean": -1.0, "ci95": [-2.0, -0.5]}}
    assert samplercost.cost_ns(neg, 100, 5.0) == 0.0


def test_sample_within_a_limit_without_a_model_is_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(profiles, "jattach", lambda: "/usr/bin/jattach")
    cfg = agentconfig.Config(max_overhead_pct=2.0, layers=("io",))
    a = agent.Agent(cfg, {"engine_probes": {}}, tmp_path / "p.json", tmp_path,
                    log=lambda m: None)
    a.cfg.sample = True
    with pytest.raises(JvmosError, match="jvmos calibrate --sampler") as e:
        a.set_sampling()
    assert "\n" not in str(e.value)
    a.cfg.max_overhead_pct = None                      # no limit: no model needed
    a.set_sampling()
    assert a.profiles is not None and a.profiles.model is None
    a.platform = {"engine_probes": {}, "sampler": MODEL}
    a.cfg.max_overhead_pct = 2.0
    a.set_sampling()
    assert a.profiles.model is MODEL and a.profiles.plan == a.planned_window


def test_a_window_is_started_with_the_calibrated_engine_and_the_planned_interval(monkeypatch):
    """The agent's window asks async-profiler for the engine its price was measured with
    (samplercost.EVENT), the planned interval and a timeout of the planned length."""
    import subprocess
    from jvmos import sampling
    seen = []
    monkeypatch.setattr(profiles, "jattach", lambda: "/usr/bin/jattach")
    monkeypatch.setattr(sampling, "lib", lambda: "/x/libasyncProfiler.so")
    monkeypatch.setattr(subprocess, "run", lambda argv, **kw: seen.append(argv) or
                        types.SimpleNamespace(returncode=0, stdout="return code: 0", stderr=""))
    profiles.start_window(42, "/tmp/w.jfr", 7, 25_000_000)
    opts = seen[0][-1]
    assert seen[0][:3] == ["/usr/bin/jattach", "42", "load"]
    assert opts == "start,event=itimer,interval=25000000,jfr,file=/tmp/w.jfr,timeout=7"
    assert samplercost.EVENT == "itimer"
