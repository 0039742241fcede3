"""analyzers/overhead.py: the probe effect's cost sources and its interval, at the edges the
other tests left open (docs/mutation.md). Expected values by hand."""
import pytest

from jvmos.analyzers import overhead

NEWTASK = "common:task_newtask"


def test_a_calibration_that_names_its_program_is_its_own_source():
    c, why = overhead.cost_of("k", {"k": {"mean_ns": 5.0, "measured_with": "prog"}})
    assert why == "" and c["source"] == "measured: prog" and c["ns"] == 5.0
    c, _ = overhead.cost_of("k", {"k": {"mean_ns": 5.0, "measured_with": "prog",
                                        "borrowed": True}})
    assert c["source"] == "borrowed: prog"


def test_a_cost_below_one_ns_is_usable():
    c, why = overhead.cost_of("k", {"k": {"mean_ns": 0.5}})
    assert c is not None and c["ns"] == 0.5 and why == ""
    c, why = overhead.cost_of("k", {"k": {"mean_ns": 0.0}})
    assert c is None


def test_an_unresolved_cost_says_its_interval():
    c, why = overhead.cost_of("k", {"k": {"mean_ns": -2.0, "ci95_ns": [-30.0, 40.0]}})
    assert c is None
    assert "k mean -2 ns, 95% interval [-30, 40] ns" in why


def test_a_kind_of_the_calibrations_own_is_not_borrowed():
    probes = {"kind_keys": {"io:syscall_upair": "mine"},
              "mine": {"mean_ns": 10.0, "measured_with": "the engine's pair"},
              "own_kinds": ["io:syscall_upair"]}
    o = overhead.estimate({"io:syscall_upair": 3}, probes, "time")
    assert o["probe_cost_per_hit_ns"]["io:syscall_upair"]["source"] == \
        "measured: the engine's pair"
    assert o["probe_overhead_ns"] == pytest.approx(30.0)
    # not among its own kinds: the usual borrowed source
    probes["own_kinds"] = ["other"]
    o = overhead.estimate({"io:syscall_upair": 3}, probes, "time")
    assert o["probe_cost_per_hit_ns"]["io:syscall_upair"]["source"] == \
        overhead.BORROWED_KIND["io:syscall_upair"]


def test_a_kind_not_among_the_calibrations_own_is_borrowed():
    probes = {"thread_common_hit": {"mean_ns": 10.0, "measured_with": "a minimal probe"},
              "own_kinds": ["something else"]}
    o = overhead.estimate({NEWTASK: 2}, probes, "time")
    c = o["probe_cost_per_hit_ns"][NEWTASK]
    assert c["source"] == "borrowed: a minimal probe"
    assert c["what"] == "a task created by a traced process (thread or process)"
    assert c["total_ns"] == pytest.approx(20.0)
    probes["thread_common_hit"]["borrowed"] = True
    o = overhead.estimate({NEWTASK: 2}, probes, "time")
    assert o["probe_cost_per_hit_ns"][NEWTASK]["source"] == "borrowed: a minimal probe"


def test_a_cost_without_an_interval_leaves_the_total_without_one():
    o = overhead.estimate({NEWTASK: 2}, {"thread_common_hit": {"mean_ns": 10.0}}, "time")
    assert o["probe_overhead_ns"] == pytest.approx(20.0)
    assert o["probe_overhead_ci95_ns"] is None
    o = overhead.estimate({NEWTASK: 2}, {"thread_common_hit": {"mean_ns": 10.0,
                                                              "ci95_ns": [8.0, 13.0]}}, "time")
    assert o["probe_overhead_ci95_ns"] == pytest.approx([16.0, 26.0])


def test_uretprobe_is_the_pair_less_the_bare_uprobe():
    p = {"uprobe_pair": {"mean_ns": 50.0, "ci95_ns": [45.0, 55.0]},
         "uprobe": {"mean_ns": 20.0, "ci95_ns": [18.0, 22.0]}}
    c, why = overhead.cost_of("uretprobe", p)
    # 50 - 20; interval [45 - 22, 55 - 18]
    assert c["ns"] == pytest.approx(30.0) and c["ci95_ns"] == pytest.approx([23.0, 37.0])
    del p["uprobe"]["ci95_ns"]
    assert overhead.cost_of("uretprobe", p)[0]["ci95_ns"] is None
    for missing in ("uprobe", "uprobe_pair"):
        q = {k: v for k, v in p.items() if k != missing}
        c, why = overhead.cost_of("uretprobe", q)
        assert c is None and why.startswith("not calibrated")


def test_an_unresolved_cost_without_an_interval_says_none():
    c, why = overhead.cost_of("k", {"k": {"mean_ns": -2.0}})
    assert c is None
    assert why == ("calibration did not resolve it: k mean -2 ns (recalibrate on a quieter "
                   "machine, or with more --trials)")


def test_kinds_of_names_each_hit():
    assert overhead.kinds_of([NEWTASK, "no:such"]) == {
        NEWTASK: "a task created by a traced process (thread or process)",
        "no:such": "unknown kind"}
