"""`jvmos run predictions` in its smallest form, on real JVMs: the ABBA order, the kernel's
counters per window, the JIT's threads apart, the counts removed, and every figure of the
analysis recomputed from the stored windows (no speed is asserted). The constants are the
tests' platform file: the output must say that this is then not a test."""
import json
import statistics

import pytest

from conftest import can_trace, one_error_line, run_jvmos

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")]


def test_predictions_smallest(platform_file, tmp_path):
    out = tmp_path / "pr"
    r = run_jvmos(["run", "predictions", "--only", "keep-alive,pretouch", "--pairs", "2",
                   "--requests-scale", "0.1", "--constants", "platform", "--out", str(out)],
                  timeout=600)
    assert r.returncode == 0, r.stderr
    res = json.loads((out / "predictions.json").read_text())
    platform = json.loads(platform_file.read_text())
    assert res["constants"]["source"] == "platform"
    md = (out / "predictions.md").read_text()
    assert "NOT A TEST" in md
    assert [t["name"] for t in res["terms"]] == ["keep-alive", "pretouch"]
    for t in res["terms"]:
        assert t["status"] == "complete"
        assert t["blocks"][0] in ("ABBA", "BAAB") and len(t["blocks"]) == 1
        assert all("-XX:-UseDynamicNumberOfCompilerThreads" in t["server"][x] for x in "AB")
        A, B = t["runs"]["A"], t["runs"]["B"]
        assert len(A) == len(B) == 2
        n = t["requests"]
        w = t["window"] - 1
        for run in A + B:
            assert len(run["windows"]) == 2
            for win in run["windows"]:
                # the JVM's compiler threads were found by name, and live through the run
                assert win["service"]["jit"]["threads"] >= 1 and not win["service_exited"]
                assert win["cpu_ns"] > 0 and win["syscw"] >= 1
                # stime less the JIT's is what its name says
                assert win["stime_nojit_ns"] == pytest.approx(
                    win["stime_ns"] - win["service"]["jit"]["stime_ns"])
            assert run["bytes"] == [n * (16 + t["settings"]["A"]["response"])] * 2
        x = t["analysis"]
        diffs = [a["windows"][w][t["clock"]] - b["windows"][w][t["clock"]]
                 for a, b in zip(A, B)]
        assert x["diffs_ns"] == pytest.approx(diffs)
        assert x["measured90"]["mean"] == pytest.approx(statistics.mean(diffs))
        lo, hi = x["measured90"]["ci"]
        assert lo <= statistics.mean(diffs) <= hi
        assert x["equal_work"]["same_answers"]
        assert x["verdict"]["verdict"] in ("confirmed", "refuted", "inconclusive",
                                           "missing term", "unequal work")
        if t["name"] == "keep-alive":
            # a connection per request in arm A, one for the window in arm B
            assert x["count"]["removed"] == n - 1
            c = platform["constants"]["C_link"]["mean_us"]
            assert x["predicted_ns"] == pytest.approx((n - 1) * c * 1e3)
        else:
            # the kernel's minor-fault counter of window 1, A - B, averaged over the pairs
            f = [a["windows"][0]["minflt"] - b["windows"][0]["minflt"] for a, b in zip(A, B)]
            assert x["count"]["removed"] == pytest.approx(statistics.mean(f))
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
