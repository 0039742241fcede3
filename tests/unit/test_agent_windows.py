"""jvmos run agent-windows: its ABBA order and its paired analysis, on made-up loads."""
import pytest

from jvmos.experiments import agent_windows as aw


def test_the_arms_alternate_abba():
    assert aw.order(3) == ["windowed", "full", "full", "windowed", "windowed", "full"]


def load(pair, arm, rec, est):
    agree = {"categories": {c: {"recorded_per_s": rec, "agent_estimated_per_s": est}
                            for c in aw.CATEGORIES}, "agent_coverage": 0.1}
    return {"pair": pair, "arm": arm, "ratios": aw.ratios_of(agree), "agreement": agree,
            "load": 0}


def test_differences_are_full_minus_windowed_within_each_pair():
    loads = [load(1, "windowed", 1000, 950), load(1, "full", 1000, 1000),
             load(2, "full", 2000, 1990), load(2, "windowed", 2000, 1880),
             load(3, "windowed", 1000, 960), load(3, "full", 1000, 1010)]
    st = aw.analyse(loads)["io_syscall"]
    assert st["differences"] == pytest.approx([0.05, 0.055, 0.05])
    assert st["mean_difference"] == pytest.approx(0.155 / 3)
    assert st["n"] == 3 and st["ci95"][0] > 0 and "3 pairs" in st["method"]
    assert st["arm_mean_ratio"]["full"] == pytest.approx((1.0 + 0.995 + 1.01) / 3)
    assert aw.verdict(st).startswith("the windows lower the rate")
    assert len(aw.tables({"max_overhead": "2%", "jdk_label": "JDK 17", "rate": 7.5,
                          "agree_seconds": 10, "loads": loads,
                          "analysis": aw.analyse(loads)})) == 2


def test_a_load_without_a_figure_leaves_its_pair_out():
    loads = [load(1, "windowed", 1000, 950), load(1, "full", 0, None),
             load(2, "windowed", 1000, 940), load(2, "full", 1000, 1000)]
    st = aw.analyse(loads)["io_syscall"]
    assert st["n"] == 1 and st["ci95"] is None
    assert aw.verdict(st).startswith("no interval")
