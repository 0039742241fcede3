"""The JNI copy cost model (--mode count) measured with the compiled engine, and the order in
which a recording calibrates what it lacks, with the engine's runs replaced by made-up maps:
the arithmetic is checked by hand, no process is traced."""
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from jvmos import JvmosError, calibrate, enginecost
from jvmos.analyzers import bpftrace

LIBJVM = Path("/jdk/lib/server/libjvm.so")
JVM = SimpleNamespace(home=Path("/jdk"), libjvm=LIBJVM, libnio=None, version="17.0.99")
NAME = f"uprobe:{LIBJVM}:jni_GetByteArrayRegion"
WINDOW = {"mean_ns": 600.0, "ci95_ns": [500.0, 700.0]}
PROBES = {"jni_copy_time_window": WINDOW,
          "placement": {"probecal:jvmos_probe_target": {"class": "emulated"}}}
SITE = {"path": str(LIBJVM), "symbol": "jni_GetByteArrayRegion", "insn": "push %rbp",
        "class": "emulated"}


def _raw(calls: int, time_ns: int):
    # the sums as the analyzers read them: GetByteArrayRegion, and another JNI copy
    # function of the same libjvm that must not be counted
    other = f"uprobe:{LIBJVM}:jni_GetStringRegion"
    maps = {"@calls": {f"7,jni_copy,{NAME}": calls, f"7,jni_copy,{other}": 3},
            "@time": {f"7,jni_copy,{NAME}": time_ns, f"7,jni_copy,{other}": 999}}
    return bpftrace.parse_lines([json.dumps({"type": "map", "data": {k: v}})
                                 for k, v in maps.items()])


@pytest.fixture
def engine_runs(monkeypatch):
    """run_cmd answering from a table {(writes, size): (calls, ns)}; records each command."""
    table, seen = {}, []

    def run_cmd(cmd, **kw):
        writes, size = int(cmd[cmd.index("--iterations") + 1]), int(cmd[cmd.index("--size") + 1])
        seen.append((writes, size, kw))
        calls, ns = table[(writes, size)]
        return "", _raw(calls, ns), {"event": "ready", "sites": [dict(SITE)]}

    monkeypatch.setattr(enginecost, "run_cmd", run_cmd)
    monkeypatch.setattr(enginecost, "symbols", lambda p: {"jni_GetByteArrayRegion": 0x10})
    monkeypatch.setattr(enginecost.eng, "version", lambda: "jvmos-engine (test)")
    return SimpleNamespace(table=table, seen=seen)


def test_the_model_is_a_line_through_two_sizes_minus_the_engines_window(engine_runs):
    # the JVM's own copies: 7 calls, 14,000 ns; loops of 1,000 writes at 10 and 4,096 bytes
    # take 650 and 1,059.6 ns per call traced: 50 and 459.6 ns once the 600 ns window is off
    engine_runs.table.update({(0, 10): (7, 14_000), (1000, 10): (1007, 14_000 + 650_000),
                              (1000, 4096): (1007, 14_000 + 1_059_600)})
    m = enginecost.calibrate_jni_model(JVM, PROBES, sizes=(10, 4096), n=1000, trials=2,
                                       log=lambda s: None)
    assert m["points"] == [[10, pytest.approx(50.0)], [4096, pytest.approx(459.6)]]
    assert m["ns_per_byte"] == pytest.approx(409.6 / 4086)
    assert m["ns_per_call"] == pytest.approx(50.0 - 10 * 409.6 / 4086)
    # the window's interval moves the intercept only: 100 ns either way here
    lo, hi = m["ns_per_call_at_window_ci95_ends"]
    assert (lo, hi) == (pytest.approx(m["ns_per_call"] - 100), pytest.approx(m["ns_per_call"] + 100))
    assert m["loop_calls_by_size"] == {"10": [1000, 1000], "4096": [1000, 1000]}
    assert m["traced_ns_per_call_by_size"] == {"10": [650.0, 650.0], "4096": [1059.6, 1059.6]}
    assert m["calls_in_a_run_of_no_write"] == 7 and m["writes"] == 1000 and m["trials"] == 2
    assert m["window"] == {"key": "jni_copy_time_window", "mean_ns": 600.0,
                           "ci95_ns": [500.0, 700.0], "calibrated_on": "emulated",
                           "probe_placed_on": "emulated"}
    assert m["engine"] == "jvmos-engine (test)" and m["jdk_version"] == "17.0.99"
    assert "jvmos-engine (test)" in m["what"] and "jni_copy_time_window (600.0 ns" in m["what"]
    assert not m.get("ns_per_call_floored") and not m.get("ns_per_byte_floored")
    # the io layer in --mode time on this libjvm, a run of no write first, sizes interleaved
    assert [(w, s) for w, s, _ in engine_runs.seen] == [(0, 10), (1000, 10), (1000, 4096),
                                                        (1000, 10), (1000, 4096)]
    assert all(kw["layers"] == ["io"] and kw["run_mode"] == "time"
               and kw["libs"]["LIBJVM"] == [LIBJVM] for _, _, kw in engine_runs.seen)


def test_each_size_takes_the_median_of_its_trials(engine_runs, monkeypatch):
    # three trials at each size; one run of each slowed by a whole 300 ns per call
    runs = {10: iter([650_000, 950_000, 660_000]), 4096: iter([1_300_000, 1_000_000, 1_010_000])}

    def run_cmd(cmd, **kw):
        writes, size = int(cmd[cmd.index("--iterations") + 1]), int(cmd[cmd.index("--size") + 1])
        if writes == 0:
            return "", _raw(7, 0), {"event": "ready", "sites": [dict(SITE)]}
        return "", _raw(writes + 7, next(runs[size])), {"event": "ready", "sites": [dict(SITE)]}

    monkeypatch.setattr(enginecost, "run_cmd", run_cmd)
    m = enginecost.calibrate_jni_model(JVM, PROBES, n=1000, trials=3, log=lambda s: None)
    assert m["points"] == [[10, pytest.approx(60.0)], [4096, pytest.approx(410.0)]]
    assert m["traced_ns_per_call_by_size"]["10"] == [650.0, 950.0, 660.0]


def test_an_intercept_below_zero_within_the_windows_noise_is_floored(engine_runs):
    # 590 ns per call traced at 10 bytes: 10 ns under the window's mean, inside its interval
    engine_runs.table.update({(0, 10): (7, 0), (100, 10): (107, 59_000),
                              (100, 4096): (107, 100_000)})
    m = enginecost.calibrate_jni_model(JVM, PROBES, sizes=(10, 4096), n=100, log=lambda s: None)
    assert m["ns_per_call"] == 0.0 and m["ns_per_call_floored"] and m["ns_per_call_fit"] < 0
    assert m["ns_per_byte"] > 0


@pytest.mark.parametrize("table,message", [
    # a loop copy the probe missed: 999 of 1,000 counted beside the JVM's own 7
    ({(0, 10): (7, 0), (1000, 10): (1006, 700_000)}, "999 jni_GetByteArrayRegion calls counted for 1,000 writes"),
    # faster than the low end of the window's interval: the window or the run is wrong
    ({(0, 10): (7, 0), (1000, 10): (1007, 400_000), (1000, 4096): (1007, 900_000)},
     "below the low end of the window's 95% interval"),
])
def test_a_run_the_model_cannot_use_is_one_line(engine_runs, table, message):
    engine_runs.table.update(table)
    with pytest.raises(JvmosError, match=message) as e:
        enginecost.calibrate_jni_model(JVM, PROBES, sizes=(10, 4096), n=1000, log=lambda s: None)
    assert "\n" not in str(e.value)


def _traced(engine_runs, per_call_10, per_call_4096):
    """Three trials a size of 100 writes taking these ns per call traced (a run of no write
    first, none of its copies timed)."""
    runs = {10: iter(per_call_10), 4096: iter(per_call_4096)}
    engine_runs.table.clear()

    def run_cmd(cmd, **kw):
        writes, size = int(cmd[cmd.index("--iterations") + 1]), int(cmd[cmd.index("--size") + 1])
        if writes == 0:
            return "", _raw(7, 0), {"event": "ready", "sites": [dict(SITE)]}
        return "", _raw(writes + 7, round(next(runs[size]) * writes)), {
            "event": "ready", "sites": [dict(SITE)]}
    return run_cmd


def test_a_traced_median_below_a_narrow_window_is_compared_with_both_spreads(engine_runs,
                                                                            monkeypatch):
    # the window's three trials agree within 10 ns (a narrow interval, 690-710), the traced
    # trials spread by 150 ns: the median (650) is under the window's low end, but the
    # difference of the two means (-16.7), with both spreads, may well be 0: a model, not
    # "unresolved"
    window = {"mean_ns": 700.0, "ci95_ns": [687.6, 712.4], "samples_ns": [695.0, 700.0, 705.0]}
    probes = dict(PROBES, jni_copy_time_window=window)
    monkeypatch.setattr(enginecost, "run_cmd", _traced(engine_runs, [600, 650, 800],
                                                        [900, 1000, 1100]))
    m = enginecost.calibrate_jni_model(JVM, probes, sizes=(10, 4096), n=100,
                                       log=lambda s: None)
    d = m["traced_minus_window_by_size"]["10"]
    assert d["mean_ns"] == pytest.approx((600 + 650 + 800) / 3 - 700) and d["ci95_ns"][0] < 0 < d["ci95_ns"][1]
    assert d["method"] == "Welch t, 3 traced trials and 3 window trials"
    assert m["points"][0] == [10, pytest.approx(-50.0)] and m["ns_per_call_floored"]


def test_traced_copies_clearly_faster_than_the_window_are_unresolved(engine_runs, monkeypatch):
    window = {"mean_ns": 700.0, "ci95_ns": [687.6, 712.4], "samples_ns": [695.0, 700.0, 705.0]}
    probes = dict(PROBES, jni_copy_time_window=window)
    monkeypatch.setattr(enginecost, "run_cmd", _traced(engine_runs, [500, 505, 510],
                                                        [900, 1000, 1100]))
    with pytest.raises(enginecost.JniModelUnresolved, match="all below 0") as e:
        enginecost.calibrate_jni_model(JVM, probes, sizes=(10, 4096), n=100,
                                       log=lambda s: None)
    u = e.value.unresolved
    assert u["traced_minus_window_by_size"]["10"]["ci95_ns"][1] < 0
    assert "Welch t, 3 traced trials and 3 window trials" in u["unresolved"]


def test_a_window_calibrated_on_another_instruction_class_does_not_apply(engine_runs):
    engine_runs.table.update({(0, 10): (7, 0)})
    probes = dict(PROBES, placement={"probecal:jvmos_probe_target": {"class": "single-step"}})
    with pytest.raises(JvmosError, match="window was calibrated on single-step"):
        enginecost.calibrate_jni_model(JVM, probes, n=1000, log=lambda s: None)


def test_why_no_model_can_be_measured(monkeypatch):
    monkeypatch.setattr(enginecost, "symbols", lambda p: {"jni_GetByteArrayRegion": 0x10})
    assert enginecost.jni_model_unavailable(JVM, PROBES) is None
    assert "not calibrated" in enginecost.jni_model_unavailable(JVM, {})
    assert "not resolved" in enginecost.jni_model_unavailable(
        JVM, {"unresolved": {"jni_copy_time_window": dict(WINDOW, mean_ns=-3.0)}})
    monkeypatch.setattr(enginecost, "symbols", lambda p: {})
    assert "stripped" in enginecost.jni_model_unavailable(JVM, PROBES)
    with pytest.raises(JvmosError, match="stripped"):
        enginecost.calibrate_jni_model(JVM, PROBES, log=lambda s: None)
    monkeypatch.setattr(enginecost, "symbols", lambda p: {"jni_GetByteArrayRegion": 0x10})
    for sizes in [(10,), (10, 10), (0, 10), (10, 20, 30)]:
        with pytest.raises(JvmosError, match="two distinct positive sizes"):
            enginecost.calibrate_jni_model(JVM, PROBES, sizes=sizes, log=lambda s: None)
    with pytest.raises(JvmosError, match="of trials \\(not 0\\)"):
        enginecost.calibrate_jni_model(JVM, PROBES, trials=0, log=lambda s: None)


# ---------------------------------------------------------------- ensure_calibrated

def model(probes):
    """A JNI copy model as calibrate_jni_model makes it: the engine and the window it used."""
    return {"ns_per_call": 1.0, "ns_per_byte": 0.01, "engine": "jvmos-engine (test)",
            "window": {"key": "jni_copy_time_window",
                       "mean_ns": probes["jni_copy_time_window"]["mean_ns"]}}


@pytest.fixture
def steps(monkeypatch, tmp_path):
    """Every measurement ensure_calibrated can start, replaced by a note of it."""
    done = []
    monkeypatch.setattr(calibrate, "calibrate_copy", lambda jvms, log=print: (
        done.append("copy"), {"schema": calibrate.SCHEMA, "copy": {}})[1])
    monkeypatch.setattr(calibrate, "calibrate_nio", lambda j: (
        done.append(f"nio {j.version}"), {"ns_per_byte": 0.1})[1])
    monkeypatch.setattr(enginecost, "calibrate", lambda trials, log, layers: (
        done.append(f"engine {','.join(layers)}"),
        {**{k: {"mean_ns": 1.0, "ci95_ns": [0.5, 1.5]} for k in enginecost.all_keys(layers)},
         "objects_sha256": enginecost.objects_sha256(layers)})[1])
    monkeypatch.setattr(enginecost, "calibrate_jni_model", lambda j, probes, trials, log: (
        done.append(f"jni {j.version}"), model(probes))[1])
    monkeypatch.setattr(enginecost, "symbols", lambda p: {"jni_GetByteArrayRegion": 0x10})
    return SimpleNamespace(done=done, file=tmp_path / "platform.json")


def test_a_first_count_recording_measures_copy_then_engine_then_the_jni_model(steps):
    p = calibrate.ensure_calibrated(None, steps.file, [JVM], ["io"], "count", log=lambda s: None)
    assert steps.done == ["copy", "nio 17.0.99", "engine io", "jni 17.0.99"]
    assert "probes" not in p                        # bpftrace's costs: never measured
    assert p["copy"]["jni_region"] == {"/jdk": model(p["engine_probes"])}
    assert json.loads(steps.file.read_text()) == p  # saved
    # again: nothing is missing, nothing is measured
    steps.done.clear()
    assert calibrate.ensure_calibrated(p, steps.file, [JVM], ["io"], "count",
                                       log=lambda s: None) == p
    assert steps.done == []
    # a model made with another window (an older engine calibration), or with bpftrace's
    # (no engine named), no longer fits the engine's costs: measured again
    for stale in (dict(model(p["engine_probes"]), window={"mean_ns": 123.0}),
                  {"ns_per_call": 65.3, "ns_per_byte": 0.02}):
        p["copy"]["jni_region"]["/jdk"] = stale
        calibrate.ensure_calibrated(p, steps.file, [JVM], ["io"], "count", log=lambda s: None)
        assert steps.done == ["jni 17.0.99"] and p["copy"]["jni_region"]["/jdk"] == \
            model(p["engine_probes"])
        steps.done.clear()


def test_time_mode_and_layers_without_io_need_no_jni_model(steps):
    p = calibrate.ensure_calibrated(None, steps.file, [JVM], ["io"], "time", log=lambda s: None)
    p = calibrate.ensure_calibrated(p, steps.file, [JVM], ["threads"], "count",
                                    log=lambda s: None)
    assert steps.done == ["copy", "nio 17.0.99", "engine io", "engine threads"]
    assert "jni_region" not in p["copy"]


def test_a_jdk_that_cannot_have_a_model_is_said_and_skipped(steps, monkeypatch):
    monkeypatch.setattr(enginecost, "symbols", lambda p: {})
    said = []
    p = calibrate.ensure_calibrated(None, steps.file, [JVM], ["io"], "count", log=said.append)
    assert p["copy"]["jni_region"] == {} and "jni 17.0.99" not in steps.done
    assert any("no JNI copy cost model for JDK 17.0.99" in s and "stripped" in s for s in said)


def test_a_platform_without_bpftraces_probe_costs_is_valid():
    calibrate.validate_platform({"schema": calibrate.SCHEMA, "copy": {},
                                 "engine_probes": {"uprobe": {"mean_ns": 800.0}}})


def test_calibrate_has_no_engine_option():
    from jvmos.cli import build_parser
    with pytest.raises(JvmosError, match="unrecognized arguments: --engine bpf"):
        build_parser().parse_args(["calibrate", "--engine", "bpf"])
    args = build_parser().parse_args(["calibrate", "--probes", "--trials", "3"])
    assert args.probes and args.trials == 3 and not hasattr(args, "engine")


def test_the_count_estimate_says_what_the_model_could_not_resolve():
    from jvmos.analyzers.io import _model_resolution
    assert _model_resolution(None) == "" and _model_resolution({"ns_per_call": 5.0}) == ""
    said = _model_resolution({"ns_per_call": 63.8, "ns_per_call_at_window_ci95_ends": [-43.2, 170.8],
                              "ns_per_byte": 0.0, "ns_per_byte_floored": True,
                              "ns_per_byte_fit": -0.001})
    assert "ns_per_byte fitted -0.001, floored at 0" in said
    assert "ns_per_call is not resolved from the probe window's noise: -43 to 171 ns" in said
    # resolved: both ends on one side of 0
    assert _model_resolution({"ns_per_call_at_window_ci95_ends": [10.0, 90.0]}) == ""


def test_a_model_the_window_swallows_is_kept_unresolved_and_not_measured_again(steps, monkeypatch):
    """A traced copy below the window's low end makes no model: the platform file keeps why,
    a count-mode estimate says the copies' time is unknown, and the same window does not
    trigger a new measurement (a new window does)."""
    from jvmos.analyzers.io import _fit_cost, _model_resolution
    p = calibrate.ensure_calibrated(None, steps.file, [JVM], ["io"], "time", log=lambda s: None)
    win = p["engine_probes"]["jni_copy_time_window"]["mean_ns"]

    def swallowed(j, probes, trials, log):
        steps.done.append(f"jni {j.version}")
        raise enginecost.JniModelUnresolved("JNI copy calibration on /jdk: too noisy", {
            "unresolved": "10-byte copies took 683 ns per call traced ...", "engine": "e",
            "window": {"mean_ns": probes["jni_copy_time_window"]["mean_ns"]}})
    monkeypatch.setattr(enginecost, "calibrate_jni_model", swallowed)
    steps.done.clear()
    said = []
    p = calibrate.ensure_calibrated(p, steps.file, [JVM], ["io"], "count", log=said.append)
    m = p["copy"]["jni_region"]["/jdk"]
    assert steps.done == ["jni 17.0.99"] and m["unresolved"] and m["window"]["mean_ns"] == win
    assert any("note: no JNI copy cost model for JDK 17.0.99" in s for s in said)
    assert _fit_cost(m, 10, 100) is None
    assert _model_resolution(m).startswith("; the model is unresolved, the copies' time unknown")
    calibrate.validate_platform(p)
    steps.done.clear()
    calibrate.ensure_calibrated(p, steps.file, [JVM], ["io"], "count", log=lambda s: None)
    assert steps.done == []
    p["engine_probes"]["jni_copy_time_window"]["mean_ns"] = win + 1
    calibrate.ensure_calibrated(p, steps.file, [JVM], ["io"], "count", log=lambda s: None)
    assert steps.done == ["jni 17.0.99"]


def test_a_model_left_unresolved_by_the_old_rule_is_measured_again():
    from jvmos.calibrate import jni_model_stale
    win = {"mean_ns": 700.0, "ci95_ns": [687.6, 712.4], "samples_ns": [695.0, 700.0, 705.0]}
    old = {"unresolved": "10-byte copies took 650 ns ... less than the low end",
           "engine": "jvmos-engine (test)", "window": {"mean_ns": 700.0}}
    assert "before Welch" in jni_model_stale(old, {"jni_copy_time_window": win})
    # one the new rule left unresolved stands (measured again only when the window changes)
    new = dict(old, traced_minus_window_by_size={"10": {"mean_ns": -195.0}})
    assert jni_model_stale(new, {"jni_copy_time_window": win}) is None
    first = dict(old, copy_minus_window_by_size={"10": {"mean_ns": -195.0}})   # its first name
    assert jni_model_stale(first, {"jni_copy_time_window": win}) is None
    # nor is one measured again while the window has no samples to apply the rule with
    assert jni_model_stale(old, {"jni_copy_time_window": dict(win, samples_ns=None)}) is None
