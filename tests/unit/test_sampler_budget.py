"""--sample within --max-overhead: the sampler's cost model (jvmos/samplercost.py), the interval
a profile window is run at (dutycycle.sampler_interval), the room the probes' windows leave it
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
MODEL = {"ns_per_sample": {"mean": 50_000.0, "ci95": [40_000.0, 60_000.0], "n": 3},
         "ns_per_window": {"mean": 5_000_000.0, "ci95": [3e6, 7e6], "n": 3}}


def share(limit_pct):
    return dc.SAMPLER_SHARE * dc.TARGET * limit_pct / 100.0


def test_the_default_interval_is_kept_when_it_fits_and_lengthened_when_not():
    # 2%: 50 µs per 10 ms is 0.5% while on, 5 ms per 5 s window 0.1%: fits the 0.8% share
    assert dc.sampler_interval(50e3, 5e6, CPU, 5.0, 2.0, BASE) == (BASE, "")
    # 0.5%: the share is 0.2% of the CPU, 0.1% left after the start and stop: a sample per
    # 50 µs / 0.1% = 50 ms
    got, why = dc.sampler_interval(50e3, 5e6, CPU, 5.0, 0.5, BASE)
    assert why == "" and got == pytest.approx(50_000_000, rel=1e-9)
    # 0.1%: the start and stop alone (0.1% of the CPU over 5 s) pass the share (0.04%)
    got, why = dc.sampler_interval(50e3, 5e6, CPU, 5.0, 0.1, BASE)
    assert got is None and "start and stop alone" in why and "--max-overhead 0.1%" in why
    # 0.5 ms per sample in a 0.04% share would need a sample per 1.25 s of CPU: skipped too
    got, why = dc.sampler_interval(500e3, 0.0, 0.01 * CPU, 5.0, 0.1, BASE)
    assert got is None and "a sample per" in why


def test_a_window_run_at_the_chosen_interval_stays_within_its_share():
    """Whatever the costs, the JVM's CPU and the limit: a window the plan lets run is
    estimated to cost at most the sampler's share of the budget while it runs."""
    rng = random.Random(11)
    ran = skipped = 0
    for _ in range(5000):
        c, f = rng.uniform(1e3, 200e3), rng.uniform(0, 50e6)
        cpu, window, limit = rng.uniform(0.01, 8) * CPU, rng.choice([1.0, 5.0, 30.0]), \
            rng.choice([0.1, 0.5, 1.0, 2.0, 5.0])
        interval, why = dc.sampler_interval(c, f, cpu, window, limit, BASE)
        if interval is None:
            skipped += 1
            assert why
            continue
        ran += 1
        assert interval >= BASE
        cost = dc.sampler_cost_per_s(c, f, cpu, window, interval)
        assert cost <= share(limit) * cpu * (1 + 1e-9), (c, f, cpu, window, limit)
    assert ran > 1000 and skipped > 100          # both branches exercised


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
    interval, _ = a.sampler_plan(7)
    assert interval == BASE
    p.jvms[7] = profiles.JvmProfiles(running=profiles.Window(
        start=0, end=1e12, jfr=tmp_path / "x.jfr", interval_ns=interval))
    beside = plan()
    sampler = dc.sampler_cost_per_s(50e3, 5e6, CPU, 5.0, interval)
    assert beside == pytest.approx((dc.TARGET * 0.02 * CPU - sampler) / r * P)
    assert r * beside / P + sampler <= 0.02 * CPU
    # a window due within the next period counts as running
    p.jvms[7] = profiles.JvmProfiles()
    p.next_at[7] = time.time() + 1.0
    assert plan() == pytest.approx(beside)


def test_a_window_over_the_budget_is_skipped_counted_and_said_once(tmp_path, monkeypatch):
    started, said = [], []
    monkeypatch.setattr(profiles, "start_window",
                        lambda pid, jfr, s, interval: started.append(interval))
    a, p, w = agent_with_profiles(tmp_path, limit=0.1)
    p.log = said.append
    w.last, w.last_cpu = {"interval_s": P}, CPU * P
    p.next_at[7] = 1005.0
    for t in (1005.0, 1065.0, 1125.0):
        p.step(7, t)
    assert not started
    st = p.exposed()[7]
    assert st["skipped"] == 3 and "start and stop alone" in st["last_skip"]
    assert len(said) == 1 and "window skipped" in said[0]
    # a limit it fits again: started, at the interval the plan chose
    a.cfg.max_overhead_pct = 0.5
    p.step(7, 1185.0)
    for _ in range(200):
        if not p.jvms[7].starting:
            break
        time.sleep(0.01)
    assert started == [pytest.approx(50_000_000, rel=1e-6)]
    assert p.exposed()[7]["interval_s"] == pytest.approx(0.05, rel=1e-6)


def test_a_window_waits_for_the_jvms_first_interval(tmp_path, monkeypatch):
    """Before the JVM's CPU was measured once, a window is not started at a guess: it waits
    (WAIT_S), without counting a skip, and starts sized once the interval is there."""
    started = []
    monkeypatch.setattr(profiles, "start_window",
                        lambda pid, jfr, s, interval: started.append(interval))
    a, p, w = agent_with_profiles(tmp_path, limit=0.5)
    assert a.sampler_plan(7) == (None, None)
    p.next_at[7] = 1005.0
    assert p.step(7, 1005.0) == 1005.0 + profiles.WAIT_S
    assert not started and p.exposed()[7]["skipped"] == 0
    w.last, w.last_cpu = {"interval_s": P}, CPU * P
    p.step(7, 1006.0)
    for _ in range(200):
        if not p.jvms[7].starting:
            break
        time.sleep(0.01)
    assert started == [pytest.approx(50_000_000, rel=1e-6)]


def test_an_idle_jvm_and_no_limit_get_the_default_interval(tmp_path):
    a, p, w = agent_with_profiles(tmp_path, limit=0.1)
    w.last, w.last_cpu = {"interval_s": P}, 1_000_000          # 1 ms of CPU in 5 s
    assert a.sampler_plan(7) == (BASE, "")
    a.cfg.max_overhead_pct = None
    w.last_cpu = CPU * P
    assert a.sampler_plan(7) == (BASE, "")


def test_a_finished_window_is_estimated_from_the_cpu_it_ran_over(tmp_path):
    run = profiles.Window(start=0, end=5, jfr=tmp_path / "x.jfr", interval_ns=20_000_000,
                          cpu_start=10**9, cpu_end=3 * 10**9)
    ns, ratio = profiles.window_cost(MODEL, run)
    # 2 s of CPU at a sample per 20 ms: 100 samples x 50 µs + 5 ms
    assert ns == pytest.approx(100 * 50e3 + 5e6)
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
    for _ in range(200):
        if not p.jvms[pid].starting:
            break
        time.sleep(0.01)
    run = p.jvms[pid].running
    assert run is not None, p.exposed()
    (root / run.in_jvm.lstrip("/")).write_bytes(b"JFR")
    p.step(pid, run.end)                               # its CPU at its end
    p.step(pid, run.end + profiles.FILE_AFTER_S)       # filed
    a.cfg.max_overhead_pct = 0.1
    p.next_at[pid] = 0.0
    p.step(pid, 2000.0)                                # skipped
    st = p.exposed()[pid]
    assert st["windows"] == 1 and st["skipped"] == 1
    want = 5e6 + 50e3 * 2e9 / 50e6                     # 40 samples at 50 ms, and the window
    assert st["estimated_cost_s"] == pytest.approx(want / 1e9)
    text = generate_latest(agentmetrics.registry_for(a)).decode()
    got = {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples
           if s.name.startswith("jvmos_profile_")}
    assert got["jvmos_profile_interval_seconds"] == pytest.approx(0.05, rel=1e-6)
    assert got["jvmos_profile_estimated_cost_seconds_total"] == pytest.approx(want / 1e9)
    assert got["jvmos_profile_skipped_total"] == 1
    assert got["jvmos_profile_windows_total"] == 1


def test_fit_recovers_known_constants_and_refuses_what_it_cannot_fit():
    class J:
        version, home = "17", "/jdk"
    rows = []
    for b, (f, c) in enumerate([(4e6, 50e3), (6e6, 60e3), (5e6, 40e3)]):
        for arm in samplercost.ORDER:
            cpu = {"idle": 1e6, "window": 1e6 + f, "bare": 900e6,
                   "sampled": 900e6 + f + c * 950}[arm]
            row = {"arm": arm, "cpu_ns": cpu, "block": b}
            if arm == "sampled":
                row["samples"] = 950
            rows.append(row)
    m = samplercost.fit(rows, J, 1_000_000, 64, 100)
    assert m["ns_per_window"]["mean"] == pytest.approx(5e6)
    assert m["ns_per_sample"]["mean"] == pytest.approx(50e3)
    lo, hi = m["ns_per_sample"]["ci95"]
    assert lo < 50e3 < hi and m["ns_per_sample"]["n"] == 3
    assert "Student's t 95% (n = 3)" in m["method"]
    assert samplercost.validate(m) is None
    assert "not calibrated" in samplercost.validate(None)
    for r in rows:
        if r["arm"] == "sampled":
            r["samples"] = 0
    with pytest.raises(JvmosError, match="no sample"):
        samplercost.fit(rows, J, 1_000_000, 64, 100)
    # a constant measured below 0 is noise around a small cost: 0 in an estimate
    neg = {"ns_per_sample": {"mean": -5.0}, "ns_per_window": {"mean": -1e6}}
    assert samplercost.cost_ns(neg, 100) == 0.0


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
    assert a.profiles.model is MODEL and a.profiles.plan == a.sampler_plan
