"""Duty cycling (jvmos/dutycycle.py and the agent's use of it): windows sized within the limit,
extrapolated rates with honest intervals, and no layer off for longer than a period."""
import random
import types

import pytest

from jvmos import agent, agentconfig, dutycycle as dc

CPU = 1e9        # the JVM's CPU: one core busy (ns per second)
P = 5.0


def test_a_hot_loop_stays_under_the_limit_in_every_period():
    """A layer whose probes cost 15% of the JVM's CPU while on (the chat server's io is
    6-14%), a 2% limit: every period's estimate stays under it, from the first window (its
    cost unknown) on, and the windows settle at TARGET x 2% / 15% of the period."""
    r = 0.15 * CPU                      # probe ns per second of on-time
    # the agent's first interval is 1 s long (FIRST_INTERVAL_S): the first window, its cost
    # unknown, must fit the limit there too
    assert r * dc.FIRST_WINDOW_S <= 0.02 * CPU * agent.FIRST_INTERVAL_S
    prev = {}
    for k in range(20):
        cost = {"io": None if k == 0 else r}
        got = dc.size_windows(cost, CPU, 0.0, 2.0, P, prev)
        w = got["io"]
        assert w is not None
        assert r * w <= 0.02 * CPU * P, (k, w)       # this period's probe effect
        prev = got
    assert w == pytest.approx(dc.TARGET * 0.02 / 0.15 * P)


def test_a_cheap_layer_stays_on_and_an_expensive_one_shares_what_is_left():
    got = dc.size_windows({"io": 0.001 * CPU, "jni": 0.05 * CPU}, CPU, 0.002 * CPU, 2.0, P,
                          {"io": P, "jni": 1.0})
    assert got["io"] == P                                   # 0.1% while on: always on
    left = dc.TARGET * 0.02 * CPU - 0.002 * CPU - 0.001 * CPU
    assert got["jni"] == pytest.approx(left / (0.05 * CPU) * P)
    # growth is bounded: a layer idle before (0 hits) grows GROWTH times a period
    assert dc.size_windows({"io": 0.0}, CPU, 0.0, 2.0, P, {"io": 0.25})["io"] == 1.0


def test_the_shortest_window_is_kept_while_it_fits_the_limit_and_shed_only_when_not():
    # 90% while on: TARGET x 2% / 90% x 5 s = 0.089 s < MIN_WINDOW_S, but 0.1 s costs 1.8%
    # of the period: kept at the shortest window
    assert dc.size_windows({"io": 0.9 * CPU}, CPU, 0.0, 2.0, P, {})["io"] == dc.MIN_WINDOW_S
    # 110% while on: even 0.1 s costs 2.2%: shed
    assert dc.size_windows({"io": 1.1 * CPU}, CPU, 0.0, 2.0, P, {})["io"] is None


def test_a_window_never_starts_more_than_a_period_after_the_last_one_ended():
    rng = random.Random(7)
    now, last_off, worst = 0.0, None, 0.0
    for _ in range(2000):
        size = rng.choice([0.25, 0.5, 1.0, 2.5])
        t = dc.window_start(now, P, size, last_off, rng)
        assert now <= t and t + size <= now + P - dc.END_MARGIN_S + 1e-9
        if last_off is not None:
            worst = max(worst, t - last_off)
        last_off = t + size
        now += P
    assert worst <= P + 1e-9
    assert worst > 0.8 * P                 # and the windows do move about in the period


def test_rate_interval_covers_a_steady_rate():
    """Windows of a Poisson process at 2,000/s, 12 windows of 0.3-0.7 s: the t interval holds
    the true rate in about 95% of 400 tries (at least 90%); below 3 windows there is an
    estimate and no interval. The t quantiles the agent keeps are scipy's."""
    from scipy import stats
    import numpy as np
    for df, q in dc.T975.items():
        assert q == pytest.approx(float(stats.t.ppf(0.975, df)), abs=1e-6)
    assert set(dc.T975) == set(range(2, dc.HISTORY))
    rng = random.Random(11)
    npr = np.random.default_rng(11)
    held = 0
    for _ in range(400):
        ws = []
        for _ in range(12):
            t = rng.uniform(0.3, 0.7)
            ws.append((float(npr.poisson(2000 * t)), t))
        got = dc.rate_interval(ws)
        assert got["n"] == 12 and got["method"] == "t over 12 windows"
        held += got["lower95"] <= 2000 <= got["upper95"]
    assert held / 400 >= 0.90, held
    two = dc.rate_interval([(10.0, 0.5), (0.0, 0.5)])
    assert two["rate"] == 10.0 and two["lower95"] is None and two["upper95"] is None
    assert dc.rate_interval([(5.0, 0.0)]) is None


class FakeEngine:
    """Stands in for jvmos.engine.Engine's window command: keeps when each layer went on and
    off (the agent's fake clock)."""

    def __init__(self, clock):
        self.clock, self.log = clock, []

    def window(self, verb, pid, objects):
        self.log.append((self.clock[0], verb, objects[0]))
        return {"event": verb}


def test_the_agent_never_leaves_a_layer_off_longer_than_a_period(tmp_path, monkeypatch):
    """The agent's own loop (plan_period, run_windows) over 60 periods of a load whose probe
    cost changes every period: the io layer has a window in every period, and from the end of
    one window to the start of the next never more than a period passes."""
    clock = [1000.0]
    monkeypatch.setattr(agent.time, "monotonic", lambda: clock[0])
    a = agent.Agent(agentconfig.Config(max_overhead_pct=2.0, interval_s=P, layers=("io",)),
                    {"engine_probes": {}}, tmp_path / "p.json", tmp_path, log=lambda m: None)
    w = agent.Watch(types.SimpleNamespace(pid=7, key=(7, 1), describe=lambda: "pid 7"),
                    ("io",))
    w.eng = FakeEngine(clock)
    w.layers = ("io",)
    w.on = {"io": True}
    a.first_windows(w, clock[0])
    rng = random.Random(3)
    end = clock[0] + 60 * P
    next_tick = clock[0] + 1.0
    while clock[0] < end:
        a.run_windows(w)
        if clock[0] >= next_tick:
            on_share = rng.choice([0.02, 0.1, 0.3, 0.9])      # probe cost while on
            span = 1.0 if next_tick == 1001.0 else P
            w.last = {"interval_s": span}
            w.last_cpu = CPU * span
            w.last_on_s = {"io": w.window.get("io") or dc.FIRST_WINDOW_S}
            w.last_by_layer = {"io": on_share * CPU * w.last_on_s["io"]}
            a.plan_period(w)
            next_tick = clock[0] + P
        clock[0] = min([next_tick] + [e[0] for e in w.events])
    log = w.eng.log
    assert not w.shed
    ons = [t for t, verb, _ in log if verb == "on"]
    offs = [t for t, verb, _ in log if verb == "off"]
    # a window opened in every period after the first (the first window is the attach's)
    starts = [1001.0 + P * k for k in range(59)]
    assert all(any(s <= t < s + P for t in ons) for s in starts), ons
    gaps = [on - off for off, on in zip(offs, ons)]
    assert all(g <= P + 1e-6 for g in gaps), max(gaps)
    # on and off strictly alternate (no command is sent twice)
    verbs = [v for _, v, _ in log]
    assert all(a != b for a, b in zip(verbs, verbs[1:]))


def test_windows_end_when_the_limit_is_lifted(tmp_path, monkeypatch):
    """A SIGHUP to --max-overhead none: a layer that windows had left off is turned on at the
    next interval, and stays on."""
    clock = [50.0]
    monkeypatch.setattr(agent.time, "monotonic", lambda: clock[0])
    a = agent.Agent(agentconfig.Config(max_overhead_pct=None, interval_s=P, layers=("io",)),
                    {"engine_probes": {}}, tmp_path / "p.json", tmp_path, log=lambda m: None)
    w = agent.Watch(types.SimpleNamespace(pid=7, key=(7, 1), describe=lambda: "pid 7"),
                    ("io",))
    w.eng = FakeEngine(clock)
    w.layers, w.on = ("io",), {"io": False}
    a.plan_period(w)
    a.run_windows(w)
    assert w.eng.log == [(50.0, "on", "io")] and w.on["io"] and not w.events


def test_a_windowed_layer_back_from_its_back_off_gets_a_window_at_once(tmp_path, monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(agent.time, "monotonic", lambda: clock[0])
    a = agent.Agent(agentconfig.Config(max_overhead_pct=2.0, interval_s=P, layers=("io",),
                                       shed_backoff_s=60.0),
                    {"engine_probes": {}}, tmp_path / "p.json", tmp_path, log=lambda m: None)
    w = agent.Watch(types.SimpleNamespace(pid=7, key=(7, 1), describe=lambda: "pid 7"),
                    ("io",))
    w.eng = FakeEngine(clock)
    w.layers, w.on, w.next_tick = ("io",), {"io": False}, 103.0
    w.shed["io"] = agent.Shed(since=40.0, until=100.0, backoff_s=60.0, reason="test")
    a.restore_due(w)
    a.run_windows(w)
    assert not w.shed and w.eng.log == [(100.0, "on", "io")]
    clock[0] = 100.0 + dc.FIRST_WINDOW_S
    a.run_windows(w)
    assert w.eng.log[-1] == (clock[0], "off", "io") and not w.on["io"]
