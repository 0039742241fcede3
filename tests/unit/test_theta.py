"""θ's arithmetic (heuristic/theta.py) and the held-out test's analysis, on synthetic windows
whose true per-use cost is known: the fit finds it, the interval widens with the model error,
the dose order is balanced, and a held-out load set that was among θ's inputs is caught."""
import math

import pytest
from scipy import stats as st

from jvmos.experiments import heldout
from jvmos.heuristic import theta as th

DOSES = {"every:1": 1000, "every:2": 500, "every:4": 250, "keep-alive": 1}


def _server(per_use, base=50e6, noise=()):
    ws = []
    for i, (dose, uses) in enumerate(DOSES.items()):
        e = noise[i] if i < len(noise) else 0.0
        ws.append({"dose": dose, "uses": uses, "cpu_ns": base + per_use * uses + e})
    return ws


def test_fit_recovers_a_linear_cost_and_its_interval():
    servers = [_server(40e3), _server(44e3), _server(42e3)]
    f = th.fit(servers, "keep-alive")
    assert f["ns_per_use"] == pytest.approx(42e3)
    sd = math.sqrt(((40e3 - 42e3) ** 2 + (44e3 - 42e3) ** 2) / 2)
    h = st.t.ppf(0.975, 2) * sd / math.sqrt(3)
    assert f["ci_ns"] == pytest.approx([42e3 - h, 42e3 + h])
    # exactly linear: leaving a dose out predicts it exactly, no model error
    assert f["model_error_relative"] == pytest.approx(0.0, abs=1e-9)
    assert f["ci_with_model_error_ns"] == pytest.approx(f["ci_ns"])
    # the doses 1, 250, 500, 1000 uses: the scaled design is well conditioned; doses that
    # nearly coincide are not
    near = th.slope([999, 1000, 1001, 1002], [1.0, 2.0, 3.0, 4.0])["condition_number"]
    assert f["condition_number_max"] < 5 < near


def test_a_curved_response_adds_model_error():
    # the every:2 dose costs 30% more than the line through the others says, in servers whose
    # slopes differ a little (so that the sampling noise is not 0)
    bent = lambda b: _server(b, noise=(0.0, 0.3 * 40e3 * 499, 0.0, 0.0))
    f = th.fit([bent(39e3), bent(41e3), bent(40e3)], "keep-alive")
    assert f["model_error_relative"] > 0.1
    lo, hi = f["ci_with_model_error_ns"]
    assert lo < f["ci_ns"][0] and hi > f["ci_ns"][1]
    e = {x["dose"]: x["relative_error"] for x in f["leave_one_dose_out"]}
    assert abs(e["every:2"]) > abs(e["every:4"])


def test_model_error_is_net_of_sampling_noise():
    # leave-one-dose-out errors no larger than their own sampling noise: no model error
    loo = [{"relative_error": 0.05, "sampling_se_relative": 0.06},
           {"relative_error": -0.04, "sampling_se_relative": 0.05}]
    assert th.model_error(loo) == 0.0
    loo = [{"relative_error": 0.30, "sampling_se_relative": 0.05}]
    assert th.model_error(loo) == pytest.approx(math.sqrt(0.09 - 0.0025))


def test_dose_order_balanced():
    o = th.dose_order(list(DOSES), 4, 3)
    assert len(o) == 16 and all(o.count(d) == 4 for d in DOSES)
    assert o[4:8] == o[:4][::-1]
    # over two rounds every dose's places sum alike (early in one, late in the other)
    places = {d: o[:8].index(d) + 8 - 1 - o[:8][::-1].index(d) for d in DOSES}
    assert len(set(places.values())) == 1


def test_predict_and_stale():
    f = th.fit([_server(40e3), _server(44e3)], "keep-alive")
    p = th.predict(100, f)
    assert p["predicted_ns"] == pytest.approx(100 * 42e3)
    assert p["predicted_ci_ns"] == pytest.approx([100 * x for x in f["ci_with_model_error_ns"]])
    assert th.stale(None, "/jdk").startswith("no θ")
    assert "not this recording's" in th.stale({"jdk": "/a"}, "/b")
    assert th.stale({"jdk": "/a"}, "/a") is None


def _shop(diff_ns, sha):
    loads = {"A": [{"cpu_ns": 100e6 + diff_ns, "pages": 40, "errors": 0}],
             "B": [{"cpu_ns": 100e6, "pages": 40, "errors": 0}]}
    return {"loads": loads, "sha256": sha}


def test_held_out_analysis_by_hand_and_the_no_leak_rule():
    f = th.fit([_server(40e3), _server(44e3), _server(42e3)], "keep-alive")
    theta = {"fit": f, "runs_sha256": ["s1", "s2", "s3"],
             "programs": [{"main": "Intervene", "jar": "jvmos-io.jar", "jar_sha256": "io-jar"}]}
    r = {"shops": [_shop(4.1e6, "h1"), _shop(4.3e6, "h2"), _shop(4.2e6, "h3")],
         "recorded": {"A": {"accepts": 104}, "B": {"accepts": 4}}, "keep": 4,
         "threads": 4, "pages": 10,
         "program_id": {"jar": "jvmos-shop.jar", "jar_sha256": "shop-jar"}}
    x = heldout.analyze(r, theta, {"mean_us": 7.0})
    assert x["removed"] == 100 and x["count_error_b"] == 0
    assert x["prediction"]["predicted_ns"] == pytest.approx(4.2e6)
    assert x["measured90"]["mean"] == pytest.approx(4.2e6)
    assert x["ratio"]["ratio"] == pytest.approx(1.0)
    assert x["c_os_predicted_ns"] == pytest.approx(0.7e6)
    assert x["equal_work"]
    assert x["theta_programs_disjoint"] and not heldout.leaked({"analysis": x})
    # θ fitted on the held-out program itself: the leak is seen, and no verdict given
    theta["programs"].append({"main": "shop", "jar": "x.jar", "jar_sha256": "shop-jar"})
    y = heldout.analyze(r, theta, {"mean_us": 7.0})
    assert not y["theta_programs_disjoint"] and heldout.leaked({"analysis": y})
    theta["programs"].pop()
    # a rebuilt copy of the shop's jar (another sha256, the same jar) is caught by its name
    theta["programs"].append({"main": "shop", "jar": "jvmos-shop.jar", "jar_sha256": "other"})
    assert heldout.leaked({"analysis": heldout.analyze(r, theta, {"mean_us": 7.0})})
    theta["programs"].pop()
    # a θ that names no program cannot be checked: counted as leaked
    bare = {k: v for k, v in theta.items() if k != "programs"}
    assert heldout.leaked({"analysis": heldout.analyze(r, bare, {"mean_us": 7.0})})
    # a result made before the rule existed is not called leaked (nor checked)
    assert not heldout.leaked({"analysis": {"verdict": {"verdict": "refuted"}}})
    # a load that served fewer pages is unequal work
    r["shops"][0]["loads"]["B"][0]["pages"] = 39
    assert heldout.analyze(r, theta, {"mean_us": 7.0})["verdict"]["verdict"] == "unequal work"


def test_render_of_a_run_before_the_program_rule(tmp_path):
    """A held-out result made before the no-leak rule by program re-renders, says so, and is
    not called leaked."""
    import json
    f = th.fit([_server(40e3), _server(44e3), _server(42e3)], "keep-alive")
    theta = {"fit": f, "runs_sha256": [], "programs": [{"jar": "jvmos-io.jar",
                                                          "jar_sha256": "io"}]}
    r = {"name": "shop-keep-alive", "program": "the shop", "change": "keep-alive",
         "shops": [_shop(4.1e6, "h1"), _shop(4.3e6, "h2")], "theta_sha256": "abc" * 4,
         "recorded": {"A": {"accepts": 104}, "B": {"accepts": 4}}, "keep": 4,
         "threads": 4, "pages": 10, "program_id": {"jar": "jvmos-shop.jar", "jar_sha256": "s"}}
    r["analysis"] = heldout.analyze(r, theta, {"mean_us": 7.0})
    del r["analysis"]["theta_programs_disjoint"]
    (tmp_path / "held-out.json").write_text(json.dumps(
        {"experiment": "held-out", "jdk_label": "j", "tests": [r]}))
    assert heldout.render(tmp_path) == 0
    md = (tmp_path / "held-out.md").read_text()
    assert "predates the no-leak rule" in md and "LEAKED" not in md


def test_thread_theta_is_the_slope_of_the_pairs_cpu_difference():
    """A thread per connection (P) costs θ_link + θ_thread per connection, a pool (Q) θ_link
    plus a hand-off: θ thread-pool, fitted on P - Q windows, recovers θ_thread whatever the
    connection's own cost and the servers' different baselines."""
    from jvmos import insitu
    import random
    rnd = random.Random(5)
    uses = {"every:1": 1000, "every:2": 500, "every:4": 250, "keep-alive": 1}

    def win(dose, i, cpu):
        return {"dose": dose, "uses": uses[dose], "index": i, "answer": 7 + i, "bytes": 1024,
                "cpu_ns": cpu, "cpu_with_jit_ns": cpu + 5e6, "stime_ns": cpu / 2,
                "utime_ns": cpu / 2, "minflt": 10, "syscr": 3, "syscw": 3,
                "jit_threads_exited": 0}

    groups = []
    for g in range(6):
        ws = []
        for i, d in enumerate(th.dose_order(list(uses), 4, g)):
            p = win(d, i, 300e6 + uses[d] * (58e3 + 120e3) + rnd.gauss(0, 2e6))
            q = win(d, i, 250e6 + uses[d] * (58e3 + 6e3) + rnd.gauss(0, 2e6))
            ws.append(insitu.difference_window(p, q))
        groups.append(ws)
    f = th.fit(groups, "keep-alive")
    assert f["ns_per_use"] == pytest.approx(114e3, rel=0.03)
    assert f["ci_ns"][0] < 114e3 < f["ci_ns"][1]
    w = groups[0][0]
    assert w["minflt"] == 0 and w["cpu_with_jit_ns"] == pytest.approx(w["cpu_ns"])
    # the two servers did different work for the same requests: refused
    p, q = win("every:1", 0, 1.0), win("every:1", 0, 1.0)
    q["answer"] += 1
    with pytest.raises(Exception, match="different work"):
        insitu.difference_window(p, q)


def test_pretouch_theta_prices_the_pairs_difference_in_page_faults():
    """A first touch costs 2 µs: a server touching its heap in the run (P) less the same
    server pretouched (Q), per heap size, gives windows whose uses are the difference of their
    minor faults (not equal within a pair); the fit recovers the cost, and the settings of a
    pair differ only in -XX:+AlwaysPreTouch."""
    from jvmos import insitu
    import random
    rnd = random.Random(9)
    faults = {"128": 18000, "256": 36000, "512": 73000, "1024": 147000}

    def win(dose, i, flt, cpu):
        return {"dose": dose, "uses": flt, "index": i, "answer": 11 + i, "bytes": 1024,
                "cpu_ns": cpu, "cpu_with_jit_ns": cpu, "stime_ns": cpu, "utime_ns": 0,
                "minflt": flt, "syscr": 1, "syscw": 1, "jit_threads_exited": 0}

    groups = []
    for g in range(8):
        ws = []
        for i, d in enumerate(th.dose_order(list(faults), 1, g)):
            f = faults[d] + rnd.randint(-500, 500)
            p = win(d, i, f + 900, 400e6 + 2e3 * (f + 900) + rnd.gauss(0, 3e6))
            q = win(d, i, 900, 400e6 + 2e3 * 900 + rnd.gauss(0, 3e6))
            ws.append(insitu.difference_window(p, q, uses=p["uses"] - q["uses"]))
        groups.append(ws)
    assert all(w["uses"] == w["minflt"] for ws in groups for w in ws)
    f = th.fit(groups, insitu.DESIGNS["pretouch"]["baseline"])
    assert f["ns_per_use"] == pytest.approx(2e3, rel=0.05)
    assert f["ci_ns"][0] < 2e3 < f["ci_ns"][1]
    a, b = insitu.pretouch_settings(256, False), insitu.pretouch_settings(256, True)
    assert {k for k in a if a[k] != b[k]} == {"pretouch"}
    assert a["garbage_after"] == insitu.SETTLE_REQUESTS and a["garbage_kb"] > 0


def test_chat_held_out_analysis_by_hand():
    f = th.fit([_server(40e3), _server(44e3), _server(42e3)], "keep-alive")
    theta = {"fit": f, "programs": [{"jar": "jvmos-io.jar", "jar_sha256": "io-jar"}]}

    def pair(diff_ns):
        ok = {"complete": True}
        return {"loads": {"A": [{"cpu_ns": 50e6 + diff_ns, **ok}, {"cpu_ns": 50e6 + diff_ns,
                                                                   **ok}],
                          "B": [{"cpu_ns": 50e6, **ok}, {"cpu_ns": 50e6, **ok}]}}

    r = {"pairs": [pair(16.0e6), pair(17.2e6), pair(17.2e6)], "keep": 0,
         "recorded": {"A": {"threads_created": 400}, "B": {"threads_created": 3}},
         "program_id": {"jar": "jvmos-chat.jar", "jar_sha256": "chat-jar"}}
    x = heldout.analyze_chat(r, theta, {"mean_us": 80.0})
    assert x["removed"] == 400 and x["count_error_b"] == 3
    assert x["prediction"]["predicted_ns"] == pytest.approx(400 * 42e3)
    assert x["measured90"]["mean"] == pytest.approx(16.8e6)
    assert x["ratio"]["ratio"] == pytest.approx(1.0)
    assert x["c_os_predicted_ns"] == pytest.approx(32e6)
    assert x["theta_programs_disjoint"] and x["equal_work"]
    # a load that lost a message is unequal work: no ratio verdict
    r["pairs"][1]["loads"]["B"][0]["complete"] = False
    assert heldout.analyze_chat(r, theta, {"mean_us": 80.0})["verdict"]["verdict"] == \
        "unequal work"


def test_ipc_kept_and_analysis_by_hand():
    # 200 answers of 50,000 bytes: each flushed from an 8 KiB buffer in 7 writes
    rec = {"writes": 10_000, "write_bytes": 200 * 50_000, "reads": 900}
    assert heldout.ipc_kept(rec, 200) == 200 * 7
    assert heldout.ipc_kept({"write_bytes": 200 * 100}, 200) == 200   # one write an answer
    f = th.fit([_server(4.95e3), _server(5.05e3), _server(5e3)], "keep-alive")
    theta = {"fit": f, "programs": [{"jar": "jvmos-io.jar", "jar_sha256": "io-jar"}]}

    def pair(diff_ns, size=50_000):
        ok = {"complete": True, "bytes_received": size}
        return {"loads": {"A": [{"cpu_ns": 9e8 + diff_ns, **ok}], "B": [{"cpu_ns": 9e8, **ok}]}}

    r = {"pairs": [pair(42.0e6), pair(44.0e6), pair(43.0e6)], "keep": 1400,
         "recorded": {"A": rec, "B": {"writes": 1405, "reads": 210}},
         "program_id": {"jar": "jvmos-ipc.jar", "jar_sha256": "ipc-jar"}}
    x = heldout.analyze_ipc(r, theta, {"mean_us": 2.0})
    assert x["removed"] == 8600 and x["count_error_b"] == 5
    assert x["prediction"]["predicted_ns"] == pytest.approx(8600 * 5e3)
    assert x["measured90"]["mean"] == pytest.approx(43e6)
    assert x["ratio"]["ratio"] == pytest.approx(1.0)
    assert x["reads_a"] == 900 and x["reads_b"] == 210
    assert x["units_needed_for_0.2"] >= 2
    r["pairs"][0]["loads"]["B"][0]["bytes_received"] = 49_000
    assert heldout.analyze_ipc(r, theta, {"mean_us": 2.0})["verdict"]["verdict"] == \
        "unequal work"


def test_pretouch_analysis_sums_the_first_loads_by_hand():
    """The shop pairs' A - B is summed over their loads (the first touches fall in the first
    ones), the count removed is the recording's heap faults (not every fault), and B's heap
    faults score the count."""
    f = th.fit([_server(1.95e3), _server(2.05e3), _server(2e3)], "keep-alive")
    theta = {"fit": f, "programs": [{"jar": "jvmos-io.jar", "jar_sha256": "io-jar"}]}

    def pair(first_ns, rest_ns, pages=1000):
        a = [{"cpu_ns": 5e8 + first_ns, "minflt": 120_000, "pages": pages, "errors": 0}] + \
            [{"cpu_ns": 5e8 + rest_ns, "minflt": 9_000, "pages": pages, "errors": 0}] * 3
        b = [{"cpu_ns": 5e8, "minflt": 2_000, "pages": pages, "errors": 0}] * 4
        return {"loads": {"A": a, "B": b}}

    r = {"pairs": [pair(190e6, 3e6), pair(200e6, 4e6), pair(195e6, 2e6)], "keep": 0,
         "threads": 4, "pages": 250,
         "recorded": {"A": {"heap_page_faults": 100_000, "page_faults": 140_000},
                      "B": {"heap_page_faults": 300, "page_faults": 30_000}},
         "program_id": {"jar": "shop.jar", "jar_sha256": "shop-jar"}}
    x = heldout.analyze_pretouch(r, theta, {"mean_us": 0.9})
    assert x["removed"] == 100_000 and x["count_error_b"] == 300
    assert x["measured90"]["mean"] == pytest.approx(204e6)      # 195 + 3 x 3 ms, summed
    assert x["ratio"]["ratio"] == pytest.approx(204e6 / 200e6)
    assert x["c_os_predicted_ns"] == pytest.approx(100_000 * 900)
    assert x["minflt_a_minus_b"] == pytest.approx(120_000 + 27_000 - 8_000)
    r["pairs"][1]["loads"]["A"][2] = {**r["pairs"][1]["loads"]["A"][2], "errors": 1}
    assert heldout.analyze_pretouch(r, theta, {"mean_us": 0.9})["verdict"]["verdict"] == \
        "unequal work"


def test_combined_prediction_sums_the_thetas_by_hand():
    """The combined arm: each kind's count removed (keep-alive keeps one connection per load
    thread per load) times its θ, summed, its standard error the root of the sum of squares;
    the OS's part each count x its constant, summed; a θ that prices nothing is left out."""
    fit = lambda per: th.fit([_server(per * 0.98), _server(per * 1.02), _server(per)],
                             "keep-alive")
    thetas = {"keep-alive": {"fit": fit(60e3), "programs": [{"jar": "io.jar",
                                                             "jar_sha256": "io"}]},
              "pretouch": {"fit": fit(2e3), "programs": [{"jar": "io.jar",
                                                          "jar_sha256": "io"}]}}
    u = lambda d: {"loads": {"A": [{"cpu_ns": 4e8 + d / 2, "minflt": 9, "pages": 1000,
                                    "errors": 0}] * 2,
                             "B": [{"cpu_ns": 4e8, "minflt": 1, "pages": 1000,
                                    "errors": 0}] * 2}}
    r = {"pairs": [u(740e6), u(760e6), u(750e6)], "threads": 4, "pages": 250, "loads": 2,
         "recorded": {"A": {"accepts": 2008, "heap_page_faults": 150_000,
                            "threads_created": 0},
                      "B": {"accepts": 9, "heap_page_faults": 40, "threads_created": 0}},
         "program_id": {"jar": "shop.jar", "jar_sha256": "shop"}}
    # Tomcat closes a keep-alive connection after 100 requests: 250 pages, 3 per load thread
    assert heldout.kept_connections(4, 250, 2) == 24 and heldout.kept_connections(4, 100) == 4
    assert heldout.combined_terms(r) == {"keep-alive": 2008 - 24, "pretouch": 150_000,
                                         "thread-pool": 0}
    r["recorded"]["A"]["accepts"] = 2024
    x = heldout.analyze_combined(r, thetas, {"keep-alive": 7.0, "pretouch": 1.5,
                                             "thread-pool": 80.0})
    want = 2000 * thetas["keep-alive"]["fit"]["ns_per_use"] + \
        150_000 * thetas["pretouch"]["fit"]["ns_per_use"]
    assert x["prediction"]["predicted_ns"] == pytest.approx(want)
    se = [th.predict(2000, thetas["keep-alive"]["fit"])["predicted_se_ns"],
          th.predict(150_000, thetas["pretouch"]["fit"])["predicted_se_ns"]]
    assert x["prediction"]["predicted_se_ns"] == pytest.approx(math.hypot(*se))
    assert set(x["predicted_by_kind_ns"]) == {"keep-alive", "pretouch"}
    assert x["measured90"]["mean"] == pytest.approx(750e6)
    assert x["c_os_predicted_ns"] == pytest.approx(2000 * 7e3 + 150_000 * 1.5e3)
    assert x["count_error_b_by_kind"] == {"keep-alive": 9 - 24, "pretouch": 40,
                                          "thread-pool": 0}
    assert x["count_error_b"] is None and x["removed"] is None     # no sum of unlike counts
    assert x["theta_programs_disjoint"]
    # threads started in A's loads are priced by θ thread-pool
    thetas["thread-pool"] = {"fit": fit(140e3), "programs": []}
    r["recorded"]["A"]["threads_created"] = 5
    y = heldout.analyze_combined(r, thetas, {"keep-alive": 7.0, "pretouch": 1.5,
                                             "thread-pool": 80.0})
    assert y["predicted_by_kind_ns"]["thread-pool"] == pytest.approx(
        5 * thetas["thread-pool"]["fit"]["ns_per_use"])
    assert y["prediction"]["predicted_ns"] == pytest.approx(
        want + 5 * thetas["thread-pool"]["fit"]["ns_per_use"])
    plat = {"theta": {w: {**t, "jdk": "/jdk"} for w, t in thetas.items()
                      if w != "thread-pool"}}
    assert set(heldout.combined_thetas(plat, "/jdk", 0)) == {"keep-alive", "pretouch"}
    with pytest.raises(Exception, match="θ thread-pool"):      # threads removed, no θ
        heldout.combined_thetas(plat, "/jdk", 5)


def test_only_a_full_size_test_stores_its_verdict():
    a = heldout.parse([])
    assert all(heldout.full_size(t, a) for t in heldout.TESTS)
    for argv, test in ((["--rooms", "2"], "chat-virtual"), (["--messages", "4"], "chat-virtual"),
                       (["--pages", "40"], "shop-keep-alive"),
                       (["--ipc-calls", "20"], "ipc-buffered"), (["--servers", "3"], "ipc-buffered"),
                       (["--windows", "2"], "shop-keep-alive")):
        assert not heldout.full_size(test, heldout.parse(argv)), argv


def test_a_test_without_its_theta_is_skipped_saying_why():
    a = heldout.parse([])
    assert "no θ thread-pool" in heldout.cannot_run("chat-virtual", a, {})
    assert "no θ bigger-chunks" in heldout.cannot_run("ipc-buffered", a, {"theta": {}})


def test_partial_results_are_kept_and_replaced(tmp_path):
    heldout.keep_partial(tmp_path, {"pairs": [1]})
    heldout.keep_partial(tmp_path, {"pairs": [1, 2]})
    import json
    assert json.loads((tmp_path / heldout.PARTIAL).read_text()) == {"pairs": [1, 2]}
    assert [p.name for p in tmp_path.iterdir()] == [heldout.PARTIAL]


def test_theta_is_kept_per_jdk_and_found_for_a_recordings_jdk(tmp_path):
    """Each JDK keeps its own θ beside the what-if's latest: fitting θ on JDK 25 (for the chat
    test) no longer leaves a JDK 17 recording without one."""
    platform = {}
    t17 = {"what_if": "thread-pool", "jdk": "/jdk17", "theta_sha256": "a"}
    t25 = {"what_if": "thread-pool", "jdk": "/jdk25", "theta_sha256": "b"}
    th.keep(platform, t17)
    th.keep(platform, t25)
    assert platform["theta"]["thread-pool"] is t25                  # the latest
    assert th.of(platform, "thread-pool", "/jdk17") is t17
    assert th.of(platform, "thread-pool", "/jdk25") is t25
    # a JDK with none of its own: the latest, which stale() then names as another JDK's
    other = th.of(platform, "thread-pool", "/jdk21")
    assert other is t25 and "not this recording's" in th.stale(other, "/jdk21")
    assert th.of(platform, "keep-alive", "/jdk17") is None
    # a file made before θ was kept per JDK: its one θ
    assert th.of({"theta": {"keep-alive": t17}}, "keep-alive", "/jdk25") is t17
    assert {t["theta_sha256"] for t in th.all_of(platform, "thread-pool")} == {"a", "b"}


def test_clock_split_by_hand():
    """The saving by clock: each clock's A - B summed over a unit's loads, per page fault only
    for the pretouch test (the combined arm removes other uses too)."""
    def unit(k):
        a = [{"cpu_ns": 3e8 + k, "stime_ns": 2e8, "utime_ns": 1e8, "cpu_with_jit_ns": 4e8,
              "minflt": 60_000}] * 2
        b = [{"cpu_ns": 2e8, "stime_ns": 1.5e8, "utime_ns": 1e8, "cpu_with_jit_ns": 3e8,
              "minflt": 10_000}] * 2
        return {"loads": {"A": a, "B": b}}
    res = {"tests": [{"name": "shop-pretouch", "pairs": [unit(0), unit(2e6)]},
                     {"name": "shop-combined", "pairs": [unit(0), unit(2e6)]},
                     {"name": "chat-virtual", "pairs": [{"loads": {"A": [{"cpu_ns": 1}],
                                                                  "B": [{"cpu_ns": 0}]}}]}]}
    rows = heldout.clock_split(res).rows
    assert len(rows) == 8                                   # chat's loads keep no minflt
    cpu = rows[0]
    assert cpu[2].startswith("202.00 [") and cpu[3] == "2.02"   # 202 ms / 100,000 faults
    assert rows[1][2].startswith("100.00 [") and rows[1][3] == "1.00"
    assert rows[4][3].startswith("— (faults are not")


def test_drift_is_found_in_a_trend_and_not_in_noise():
    up = {"analysis": {"diffs_ns": [float(i) for i in range(10)]}}
    flat = {"analysis": {"diffs_ns": [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0][::-1]}}
    assert heldout.drift(up)["rho"] == pytest.approx(1.0) and heldout.drift(up)["p"] < 0.01
    assert heldout.drift(flat)["p"] > 0.05
    assert heldout.drift({"analysis": {"diffs_ns": [1.0, 2.0, 3.0]}}) is None
    notes = heldout.notes_of({"tests": [{"name": "t", **up}]})
    assert any("may be too narrow" in n for n in notes)


def test_inflate_analysis_by_hand():
    """dacapo-inflate: a unit's difference is (A's 2n run - A's n run) - (B's 2n - B's n);
    the count removed is A's inflate streams of the n iterations more, less one kept per worker
    thread per iteration; the OS's part 3 x (malloc + free) per stream."""
    f = th.fit([_server(2.9e3), _server(3.1e3), _server(3e3)], "keep-alive")
    theta = {"fit": f, "programs": [{"jar": "jvmos-io.jar", "jar_sha256": "io-jar"}]}

    def unit(a_n, a_2n, b_n, b_2n):
        runs = {"A10": {"cpu_ns": a_n, "threads": 2}, "A20": {"cpu_ns": a_2n, "threads": 2},
                "B10": {"cpu_ns": b_n, "threads": 2}, "B20": {"cpu_ns": b_2n, "threads": 2}}
        return {"runs": runs, "loads": {arm: [{"cpu_ns": runs[f"{arm}20"]["cpu_ns"] -
                                               runs[f"{arm}10"]["cpu_ns"], "threads": 2}]
                                        for arm in "AB"}}
    r = {"units": [unit(5e9, 8.0e9, 4.9e9, 7.4e9), unit(5.1e9, 8.1e9, 5e9, 7.5e9)],
         "keep": 20, "program_id": {"jar": "jvmos-dacapo.jar", "jar_sha256": "d"},
         "recorded": {"A": {"zlib_inflaters": 200_020, "malloc_calls": 700_000},
                      "B": {"zlib_inflaters": 21, "malloc_calls": 90_000}}}
    x = heldout.analyze_inflate(r, theta, 100.0)
    assert x["removed"] == 200_000 and x["count_error_b"] == 1
    assert x["measured90"]["mean"] == pytest.approx(0.5e9)
    assert x["prediction"]["predicted_ns"] == pytest.approx(200_000 * f["ns_per_use"])
    assert x["c_os_predicted_ns"] == pytest.approx(200_000 * 3 * 100.0)
