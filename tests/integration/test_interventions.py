"""`jvmos run interventions` in its smallest form: the structure and the arithmetic of the
table (no speed is asserted), the probes' counts of what an intervention removed, and
`jvmos predict --what-if` on one of its recordings."""
import json
import statistics

import pytest

from conftest import can_trace, run_jvmos
from jvmos.jdk import discover_jdks

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")]


def test_interventions_smallest(platform_file, tmp_path):
    out = tmp_path / "iv"
    before = platform_file.read_bytes()
    r = run_jvmos(["run", "interventions", "--only", "keep-alive,reuse-native-buffers,combined",
                   "--trials", "2", "--requests-scale", "0.05", "--out", str(out)],
                  timeout=900)
    assert r.returncode == 0, r.stderr
    # fewer than 10 trials per arm: the verdicts are not stored in the platform file
    assert platform_file.read_bytes() == before
    platform = json.loads(before)
    res = json.loads((out / "interventions.json").read_text())
    assert [x["name"] for x in res["interventions"]] == ["keep-alive", "reuse-native-buffers",
                                                         "combined"]
    assert res["commit"] and res["skipped"] == []
    for iv in res["interventions"]:
        assert iv["status"] == "complete"
        assert iv["verdict"]["kind"] in ("inside", "overlap", "miss", "inconclusive")
        assert isinstance(iv["os_removed_measured_ns"], float)
        assert isinstance(iv["count_changes"], dict)
        n = iv["requests"]
        a, b = iv["arms"]["A"], iv["arms"]["B"]
        assert len(a["cpu_ns"]) == len(b["cpu_ns"]) == 2 and len(iv["order"]) == 2
        assert all(sorted(o) == ["A", "B"] for o in iv["order"])
        # every trial of both arms read the same bytes (the client's checksum)
        assert iv["bytes_per_trial"] == n * (16 + a["settings"]["response"])
        # the measured saving is mean(A) - mean(B), inside its own interval
        for key, m in (("cpu_ns", iv["measured_cpu"]), ("wall_ns", iv["measured_wall"])):
            d = statistics.mean(a[key]) - statistics.mean(b[key])
            assert m["diff"] == pytest.approx(d) and m["ci"][0] <= d <= m["ci"][1]
            assert m["n"] == [2, 2] and m["method"].startswith("Welch")
        # the prediction is the sum of its terms; a term is the count removed x the constant
        p = iv["prediction"]
        assert p["predicted_us"] == pytest.approx(sum(t["predicted_us"]
                                                      for t in p["terms"].values()))
        for name, t in p["terms"].items():
            assert t["predicted_ci95_us"][0] <= t["predicted_us"] <= t["predicted_ci95_us"][1]
            if name != "direct-buffers":
                assert t["removed"] == t["count_a"] - t["count_b"]
            if name == "keep-alive":
                k = platform["constants"]["C_link"]
                assert t["predicted_us"] == pytest.approx(t["removed"] * k["mean_us"])
        v = iv["verdict"]
        lo, hi = p["predicted_ci95_us"]
        c = iv["measured_cpu"]
        significant = not (c["ci"][0] <= 0 <= c["ci"][1])
        assert v["significant"] == significant
        # inside only when the saving is significant and its mean lies in the prediction
        assert v["inside"] == (significant and lo <= c["diff"] / 1e3 <= hi)
    ka = res["interventions"][0]["prediction"]["terms"]["keep-alive"]
    n = res["interventions"][0]["requests"]
    # the probes saw every timed request's connection in arm A, one kept-alive one in arm B
    assert (ka["count_a"], ka["count_b"]) == (n, 1)
    comb = res["interventions"][2]["prediction"]["terms"]
    nc = res["interventions"][2]["requests"]
    # a thread per connection and a file opened per request, in arm A
    assert comb["thread-pool"]["count_a"] >= nc and comb["file-handles"]["count_a"] >= nc
    assert comb["bigger-chunks"]["removed"] > 0
    md = (out / "interventions.md").read_text()
    assert md.count("\n| ") == 1 + 3 and "Welch" in md
    assert (out / "interventions.png").stat().st_size > 5000

    # what-if on arm A's recording of keep-alive: every connection but the one kept
    run = res["interventions"][0]["arms"]["A"]["recording"]
    r = run_jvmos(["predict", "--from-run", run, "--what-if", "keep-alive", "--keep", "1",
                   "--json"])
    assert r.returncode == 0, r.stderr
    w = json.loads(r.stdout)["what_if"][0]
    assert w["counted"] == n and w["removed"] == n - 1
    assert w["predicted_us"] == pytest.approx((n - 1) * platform["constants"]["C_link"]["mean_us"])
    assert w["validation"]["status"].startswith("not validated on this machine")


def test_interventions_refuse_what_cannot_run(platform_file, tmp_path):
    """Nothing to run is one line and a non-zero exit, before any server starts."""
    r = run_jvmos(["run", "interventions", "--only", ",", "--out", str(tmp_path / "a")])
    assert r.returncode != 0 and "--only needs at least one intervention" in r.stderr
    old = [j for j in discover_jdks() if j.version.split(".")[0].isdigit()
           and int(j.version.split(".")[0]) < 21]
    if old:
        r = run_jvmos(["run", "interventions", "--only", "virtual-threads", "--jdk",
                       str(old[0].home), "--out", str(tmp_path / "b")])
        assert r.returncode != 0 and "nothing to run: virtual-threads: needs JDK 21+" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
