"""`jvmos run probe-effect`'s reading of its pairs: the observed effect, the ratio's interval
and the verdict against ±25%, on pairs whose answer is known by construction."""
import json

import pytest

from jvmos.experiments import probe_effect as pe


def _prog(est, bare, rec):
    return {"program": "p", "pairs": [
        {"bare": {"cpu_ns": b}, "recorded": {"cpu_ns": r, "probe_overhead_ns": e,
                                             "probe_overhead_by_kind_ns": {"io:write": 0.75 * e,
                                                                           "mem:malloc": 0.25 * e}}}
        for e, b, r in zip(est, bare, rec)]}


BARE = [1000e6, 1040e6, 990e6, 1010e6, 1005e6, 995e6, 1020e6, 1000e6]
# observed per pair: 200 ms give or take 4 ms
OBS = [200e6, 204e6, 196e6, 201e6, 199e6, 203e6, 197e6, 200e6]


def test_an_estimate_equal_to_the_observed_is_within():
    s = pe.summarize(_prog([200e6] * 8, BARE, [b + o for b, o in zip(BARE, OBS)]))
    assert s["observed"]["mean"] == pytest.approx(200e6)
    lo, hi = s["ratio_ci90"]
    assert 0.97 < lo <= 1.0 <= hi < 1.03
    assert s["verdict"] == "within ±25%"
    # the interval is the estimate over the observed mean's 90% t interval (7 df)
    from scipy import stats
    import statistics
    h = stats.t.ppf(0.95, 7) * statistics.stdev(OBS) / 8 ** 0.5
    assert lo == pytest.approx(200e6 / (200e6 + h)) and hi == pytest.approx(200e6 / (200e6 - h))
    assert list(s["estimate_by_kind_ns"]) == ["io:write", "mem:malloc"]


def test_an_estimate_twice_the_observed_is_outside():
    s = pe.summarize(_prog([400e6] * 8, BARE, [b + o for b, o in zip(BARE, OBS)]))
    assert s["ratio"] == pytest.approx(2.0, rel=1e-3)
    assert s["verdict"] == "outside ±25% (estimate too high)"


def test_an_estimate_half_the_observed_is_outside_too_low():
    s = pe.summarize(_prog([100e6] * 8, BARE, [b + o for b, o in zip(BARE, OBS)]))
    assert s["verdict"] == "outside ±25% (estimate too low)"


def test_an_effect_that_may_be_zero_still_refutes_a_far_too_high_estimate():
    # observed mean 20 ms, its interval reaching below 0; estimated 2 s: est / hi > 1.25
    obs = [60e6, -40e6, 50e6, -20e6, 45e6, -10e6, 55e6, 20e6]
    s = pe.summarize(_prog([2000e6] * 8, BARE, [b + o for b, o in zip(BARE, obs)]))
    assert s["ratio_ci90"][1] is None and s["ratio_ci90"][0] > 1.25
    assert s["verdict"] == "outside ±25% (estimate too high)"


def test_a_noisy_observation_is_unresolved_not_a_pass():
    noisy = [350e6, 20e6, 300e6, 80e6, 260e6, 120e6, 240e6, 230e6]   # mean 200 ms, wide
    s = pe.summarize(_prog([200e6] * 8, BARE, [b + o for b, o in zip(BARE, noisy)]))
    assert s["ratio"] == pytest.approx(1.0, rel=1e-3)
    lo, hi = s["ratio_ci90"]
    assert lo < 0.75 or hi > 1.25
    assert s["verdict"] == "unresolved"


def test_no_positive_effect_observed_with_one_estimated_is_a_miss():
    s = pe.summarize(_prog([200e6] * 3, BARE[:3], [b - d for b, d in zip(BARE[:3],
                                                                         (1e6, 2e6, 1.5e6))]))
    assert s["ratio"] is None and s["ratio_ci90"] is None
    assert s["verdict"].startswith("outside ±25% (no positive effect observed")


def test_a_pair_with_incomplete_cpu_time_is_left_out_and_counted():
    prog = _prog([200e6] * 8, BARE, [b + o for b, o in zip(BARE, OBS)])
    prog["pairs"][0]["recorded"]["cpu_complete"] = False
    prog["pairs"][0]["recorded"]["cpu_ns"] = 1.0           # a lower bound: would wreck the mean
    s = pe.summarize(prog)
    assert s["n"] == 7 and s["left_out_incomplete_cpu"] == 1 and s["verdict"] == "within ±25%"


def test_a_missing_estimate_is_unknown_not_zero():
    prog = _prog([200e6] * 3, BARE[:3], [b + 200e6 for b in BARE[:3]])
    prog["pairs"][1]["recorded"]["probe_overhead_ns"] = None
    s = pe.summarize(prog)
    assert s["estimated_mean_ns"] is None and s["verdict"].startswith("unknown")


def test_the_table_prints_each_miss(capsys):
    results = {"jdk": "openjdk-17", "layers": ["io"], "mode": "time", "programs": {
        "good": _prog([200e6] * 8, BARE, [b + o for b, o in zip(BARE, OBS)]),
        "bad": _prog([400e6] * 8, BARE, [b + o for b, o in zip(BARE, OBS)])}}
    (t,), misses = pe.tables(results)
    assert len(misses) == 1 and misses[0].startswith("bad:") and "outside" in misses[0]
    assert "io:write 75%" in misses[0]
    md = t.markdown()
    assert "within ±25%" in md and "outside ±25%" in md


def test_render_rewrites_a_finished_run(tmp_path, capsys):
    results = {"experiment": "probe-effect", "jdk": "openjdk-17", "layers": ["io"],
               "mode": "time", "programs": {
                   "bad": _prog([400e6] * 8, BARE, [b + o for b, o in zip(BARE, OBS)])}}
    (tmp_path / "probe-effect.json").write_text(json.dumps(results))
    assert pe.main(["--render", str(tmp_path)]) == 0
    md = (tmp_path / "probe-effect.md").read_text()
    assert "outside ±25%" in md and "MISS bad:" in md


@pytest.mark.parametrize("argv,err", [(["--pairs", "1"], "2 or more"),
                                      (["--programs", "shop,nope"], "nope"),
                                      (["--layers", "io,xx"], "xx")])
def test_bad_options_are_one_line_errors(argv, err, capsys):
    with pytest.raises(SystemExit) as e:
        pe.parse(argv)
    assert e.value.code == 2 and err in capsys.readouterr().err


def test_system_cpu_is_read_apart_when_the_pairs_have_it():
    prog = _prog([200e6] * 8, BARE, [b + o + (5e8 if k % 2 else -5e8) for k, (b, o) in
                                     enumerate(zip(BARE, OBS))])   # user-mode noise, ±0.5 s
    for p, o in zip(prog["pairs"], OBS):
        p["bare"]["sys_ns"] = 500e6
        p["recorded"]["sys_ns"] = 500e6 + o          # the probes' cost, in the kernel
    s = pe.summarize(prog)
    assert s["verdict"] == "unresolved"                # the total drowns in the noise
    assert s["observed_sys"]["mean"] == pytest.approx(200e6)
    assert s["verdict_sys"] == "within ±25%"
    assert pe.summarize(_prog([200e6] * 3, BARE[:3], BARE[:3]))["verdict_sys"] == "—"
