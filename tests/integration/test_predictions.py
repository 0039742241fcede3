"""`jvmos run predictions` in its smallest form, on real JVMs: the ABBA order, the kernel's
counters per window, the JIT's threads apart, the counts removed, and every figure of the
analysis recomputed from the stored windows (no speed is asserted). The constants are the
tests' platform file: the output must say that this is then not a test."""
import json
import statistics
from pathlib import Path

import pytest

from conftest import can_trace, one_error_line, run_jvmos

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")]


def test_predictions_smallest(platform_file, tmp_path):
    out = tmp_path / "pr"
    r = run_jvmos(["run", "predictions", "--only", "keep-alive,pretouch,reuse-native-buffers",
                   "--servers", "2",
                   "--windows", "2", "--requests-scale", "0.1", "--constants", "platform",
                   "--out", str(out)], timeout=600)
    assert r.returncode == 0, r.stderr
    res = json.loads((out / "predictions.json").read_text())
    platform = json.loads(platform_file.read_text())
    assert res["constants"]["source"] == "platform"
    md = (out / "predictions.md").read_text()
    assert "NOT A TEST" in md
    assert [t["name"] for t in res["terms"]] == ["keep-alive", "pretouch",
                                                 "reuse-native-buffers"]
    for t in res["terms"]:
        assert t["status"] == "complete"
        assert all("-XX:-UseDynamicNumberOfCompilerThreads" in t["server"][x] for x in "AB")
        n, k = t["requests"], t["discard"] + t["windows"]
        assert (t["discard"], t["windows"]) == ((0, 1) if t["name"] == "pretouch" else (1, 2))
        assert len(t["servers"]) == 2
        diffs = []
        for sp in t["servers"]:
            # ABBA order of the tested windows: each arm first in one of the two pairs
            o = sp["order"][2 * t["discard"]:]
            assert sorted(o) == ["A"] * t["windows"] + ["B"] * t["windows"]
            if t["windows"] == 2:
                assert o in ("ABBA", "BAAB")
            A, B = sp["windows"]["A"], sp["windows"]["B"]
            assert len(A) == len(B) == k
            for win in A + B:
                # the JVM's compiler threads were found by name, and live through the run
                assert win["service"]["jit"]["threads"] >= 1 and not win["service_exited"]
                assert win["cpu_ns"] > 0 and win["syscw"] >= 1
                # the JIT threads' kernel time is part of the process's (a tick of rounding)
                assert win["service"]["jit"]["stime_ns"] <= win["stime_ns"] + 1e7
            assert sp["bytes"]["A"] == sp["bytes"]["B"] == \
                [n * (16 + t["settings"]["A"]["response"])] * k
            # the i-th window got the same answers from both servers
            assert sp["answers"]["A"] == sp["answers"]["B"]
            tested = list(zip(A[t["discard"]:], B[t["discard"]:]))
            diffs.append(statistics.mean(a[t["clock"]] - b[t["clock"]] for a, b in tested))
        x = t["analysis"]
        assert x["diffs_ns"] == pytest.approx(diffs)
        assert x["measured90"]["mean"] == pytest.approx(statistics.mean(diffs))
        assert x["measured90"]["n"] == 2
        assert x["equal_work"]["same_answers"]
        # the verdict is the rule applied to the stored interval
        v = x["verdict"]["verdict"]
        if x["ratio"] and v != "unequal work" and x["predicted_ns"] > 0.01 * abs(
                x["measured95"]["mean"]):
            lo, hi = x["ratio"]["ci"]
            want = ("confirmed" if 0.8 <= lo and hi <= 1.25 else
                    "refuted" if hi < 0.8 or lo > 1.25 else "inconclusive")
            # a clock that is mostly the probes' own correction decides nothing
            dominated = any(w.get("malloc_correction_dominates") for sp in t["servers"]
                            for w in sp["windows"]["A"][t["discard"]:])
            if dominated and want != "inconclusive":
                want = "inconclusive"
                assert "correction dominates" in x["verdict"]["why"]
            assert v == want
        if t["name"] == "keep-alive":
            # a connection per request in arm A, one for the window in arm B
            assert x["count"]["removed"] == n - 1
            c = platform["constants"]["C_link"]["mean_us"]
            assert x["predicted_ns"] == pytest.approx((n - 1) * c * 1e3)
        elif t["name"] == "reuse-native-buffers":
            # every window recorded: the probes' malloc calls and corrected malloc time
            for sp in t["servers"]:
                for arm in "AB":
                    for win in sp["windows"][arm]:
                        assert win["malloc_method"] == ("measured" if win["malloc_calls"]
                                                        else "no call seen")
                        assert (Path(win["recording"]) / "summary.json").exists()
                # a new Inflater per inflation allocates; a reused one does not
                assert min(w["malloc_calls"] for w in sp["windows"]["A"]) > \
                    max(w["malloc_calls"] for w in sp["windows"]["B"])
            per = [statistics.mean(a["malloc_calls"] - b["malloc_calls"] for a, b in zip(
                sp["windows"]["A"][1:], sp["windows"]["B"][1:])) for sp in t["servers"]]
            assert x["count"]["removed"] == pytest.approx(statistics.mean(per))
            m = platform["copy"]["malloc_call"]["ns_per_call"]
            assert x["predicted_ns"] == pytest.approx(statistics.mean(per) * m)
        else:
            # the kernel's minor-fault counter of the first window, A - B
            f = [sp["windows"]["A"][0]["minflt"] - sp["windows"]["B"][0]["minflt"]
                 for sp in t["servers"]]
            assert x["count"]["removed"] == pytest.approx(statistics.mean(f))
            assert x["count"]["removed"] > 0        # the pre-touched heap faults less
            pf = platform["copy"]["page_fault"]["ns_per_call"]
            assert x["predicted_ns"] == pytest.approx(statistics.mean(f) * pf)
        if x["ratio"]:
            assert x["ratio"]["ratio"] == pytest.approx(statistics.mean(diffs) /
                                                        x["predicted_ns"])
    # --render re-makes the same tables from the JSON
    before = (out / "predictions.md").read_text()
    r = run_jvmos(["run", "predictions", "--render", str(out)], timeout=60)
    assert r.returncode == 0, r.stderr
    assert (out / "predictions.md").read_text() == before


def test_predictions_bad_input(tmp_path):
    one_error_line(run_jvmos(["run", "predictions", "--render", str(tmp_path)], timeout=60))
