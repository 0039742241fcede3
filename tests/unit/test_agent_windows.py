"""jvmos run agent-windows: its ABBA order and its paired analysis, on made-up loads."""
import pytest

from jvmos.experiments import agent_windows as aw


def test_the_arms_alternate_abba():
    assert aw.order(3) == ["windowed", "full", "full", "windowed", "windowed", "full"]


def load(pair, arm, rec, est, key=aw.PER_COUNTED):
    # a run with counted seconds has the scrape span's figure too, 10% off (a ratio taken
    # from the wrong one shows); a run made before has none
    agree = {"categories": {c: dict({"recorded_per_s": rec, key: est},
                                    **({aw.PER_SPAN: None if est is None else est * 1.1}
                                       if key == aw.PER_COUNTED else {}))
                            for c in aw.CATEGORIES}, "agent_coverage": 0.1}
    return {"pair": pair, "arm": arm, "agreement": agree, "load": 0}


def test_differences_are_full_minus_windowed_within_each_pair():
    loads = [load(1, "windowed", 1000, 950), load(1, "full", 1000, 1000),
             load(2, "full", 2000, 1990), load(2, "windowed", 2000, 1880),
             load(3, "windowed", 1000, 960), load(3, "full", 1000, 1010)]
    st = aw.analyse(loads)["io_syscall"]
    assert st["differences"] == pytest.approx([0.05, 0.055, 0.05])
    assert st["mean_difference"] == pytest.approx(0.155 / 3)
    assert st["n"] == 3 and st["ci95"][0] > 0 and "3 complete pairs (2 df)" in st["method"]
    assert aw.analyse(loads)["basis"] == aw.PER_COUNTED
    assert st["arm_mean_ratio"]["full"] == pytest.approx((1.0 + 0.995 + 1.01) / 3)
    assert aw.verdict(st).startswith("the windows lower the rate")
    assert len(aw.tables({"max_overhead": "2%", "jdk_label": "JDK 17", "rate": 7.5,
                          "agree_seconds": 10, "loads": loads,
                          "analysis": aw.analyse(loads)})) == 2


def test_a_load_without_a_figure_leaves_its_pair_out_of_both_arms():
    loads = [load(1, "windowed", 1000, 950), load(1, "full", 1000, None),
             load(2, "windowed", 1000, 940), load(2, "full", 1000, 1000)]
    st = aw.analyse(loads)["io_syscall"]
    assert st["n"] == 1 and st["ci95"] is None and st["incomplete_pairs"] == 1
    assert st["arm_mean_ratio"]["windowed"] == pytest.approx(0.94)
    assert aw.verdict(st).startswith("no interval")


def test_a_run_made_before_counted_seconds_uses_the_scrape_span():
    loads = [load(p, arm, 1000, 900 + 10 * p, key=aw.PER_SPAN)
             for p in (1, 2) for arm in aw.ARMS]
    got = aw.analyse(loads)
    assert got["basis"] == aw.PER_SPAN
    assert got["io_syscall"]["arm_mean_ratio"]["full"] == pytest.approx(0.915)


def test_the_full_arm_has_no_limit_and_odd_pairs_are_refused():
    a = aw.parse([])
    assert aw.arm_settings(a, "full").max_overhead == "none"
    assert aw.arm_settings(a, "windowed").max_overhead == "2%" and a.max_overhead == "2%"
    with pytest.raises(SystemExit):
        aw.parse(["--pairs", "3"])


def test_a_failed_recording_neither_changes_the_basis_nor_counts():
    loads = [load(p, arm, 1000, 950 if arm == "windowed" else 1000)
             for p in (1, 2, 3) for arm in aw.ARMS]
    loads[0]["agreement"] = {"error": "record failed"}       # pair 1's windowed recording
    got = aw.analyse(loads)
    assert got["basis"] == aw.PER_COUNTED
    assert got["io_syscall"]["n"] == 2 and got["io_syscall"]["incomplete_pairs"] == 1
