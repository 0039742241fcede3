"""θ end to end on real JVMs, in its smallest form: `jvmos calibrate --in-situ` fits the whole
CPU per connection on the request server and stores it with its sources; `jvmos run held-out`
tests it on the shop, names θ's sha256 and keeps its runs apart from θ's; `jvmos predict
--what-if keep-alive` prices a recording with it. Speed is not asserted; a connection must
cost CPU (a slope above 0) and the arithmetic must hold."""
import json

import pytest

from conftest import can_trace, one_error_line, run_jvmos

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")]


def _without_theta(platform_file, plat):
    """A copy of the session's platform file with no θ in it (a developer's may hold some)."""
    data = json.loads(platform_file.read_text())
    data.pop("theta", None)
    data.pop("theta_by_jdk", None)
    plat.write_text(json.dumps(data))


def test_theta_in_situ_and_held_out(platform_file, tmp_path):
    plat = tmp_path / "platform.json"
    _without_theta(platform_file, plat)
    r = run_jvmos(["calibrate", "--in-situ", "--trials", "2", "--in-situ-requests", "200",
                   "--platform", str(plat), "--out", str(tmp_path / "insitu")], timeout=600)
    assert r.returncode == 0, r.stderr
    t = json.loads(plat.read_text())["theta"]["keep-alive"]
    runs = json.loads((tmp_path / "insitu" / "insitu.json").read_text())["runs"]
    assert len(runs) == 2 and t["runs_sha256"] == [x["sha256"] for x in runs]
    for run in runs:
        doses = [w["dose"] for w in run["windows"]]
        assert all(doses.count(d) == 4 for d in t["doses"])
        # the client's own count of the connections of each dose
        uses = {w["dose"]: w["uses"] for w in run["windows"]}
        assert uses == {"every:1": 200, "every:2": 100, "every:4": 50, "keep-alive": 1}
    assert t["commit"] and t["theta_sha256"]
    assert [p["main"] for p in t["programs"]] == ["org.jvmos.workloads.Intervene"]
    assert t["fit"]["ns_per_use"] > 0, "a connection opened per request costs the JVM CPU"
    assert len(t["fit"]["leave_one_dose_out"]) == 3
    # writes: four live servers per group, one per write size, the kernel's count of writes
    w = json.loads(plat.read_text())["theta"]["bigger-chunks"]
    groups = json.loads((tmp_path / "insitu" / "bigger-chunks" / "insitu.json").read_text())
    assert len(groups["runs"]) == 2 and w["runs_sha256"] == [g["sha256"] for g in
                                                              groups["runs"]]
    n = w["requests_per_window"]
    for g in groups["runs"]:
        for win in g["windows"]:
            # 64 KiB answers in chunks of the dose's size: at least that many writes
            assert win["uses"] >= n * (64 << 10) // int(win["dose"])
            assert win["bytes"] == n * (16 + (64 << 10))
    assert sorted(w["doses"], key=int) == ["1024", "2048", "4096", "8192"]
    assert w["fit"]["ns_per_use"] > 0, "a write removed saves the JVM CPU"
    # first touches: a pair of fresh servers per heap size; the uses the kernel's minor faults
    # of the one touching its heap in the run less the pretouched one's
    f = json.loads(plat.read_text())["theta"]["pretouch"]
    pt = json.loads((tmp_path / "insitu" / "pretouch" / "insitu.json").read_text())["runs"]
    assert len(pt) == 2 and f["runs_sha256"] == [g["sha256"] for g in pt]
    for g in pt:
        assert sorted(win["dose"] for win in g["windows"]) == sorted(f["doses"])
        uses = {win["dose"]: win["uses"] for win in g["windows"]}
        # the heap that is not pretouched is touched in the run: more of it, more faults
        assert uses["1024"] > uses["256"] > 1000, uses
    assert f["fit"]["ns_per_use"] > 0, "a first touch in the run costs the JVM CPU"

    out = tmp_path / "ho"
    # the smallest sizes every check below holds at by design: one ipc call a client run (a
    # call takes ~0.1 s here, nearly all of it waiting on the socket, in 24 client runs), one
    # dacapo iteration more in the longer runs; two pretouch loads (a fresh shop's heap faults
    # in one load after the warm-up may be none)
    r = run_jvmos(["run", "held-out", "--servers", "2", "--windows", "1", "--pages", "20",
                   "--ipc-size", "500", "--ipc-calls", "1", "--pretouch-loads", "2",
                   "--dacapo-iterations", "1", "--dacapo-size", "small",
                   "--platform", str(plat), "--out", str(out)], timeout=900)
    assert r.returncode == 0, r.stderr
    res = json.loads((out / "held-out.json").read_text())
    # every test this machine has a θ for: the shop, ipc, pretouch and the combined arm (θ
    # thread-pool is on JDK 17 here, too old for virtual threads: chat skipped, saying why),
    # each in its own directory
    assert [t["name"] for t in res["tests"]] == ["shop-keep-alive", "ipc-buffered",
                                                 "shop-pretouch", "shop-combined",
                                                 "dacapo-inflate"]
    assert "JDK 21+" in res["skipped"]["chat-virtual"]
    assert (out / "shop-keep-alive" / "recorded-A").is_dir()
    ho = res["tests"][0]
    x = ho["analysis"]
    assert ho["theta_sha256"] == t["theta_sha256"]
    assert x["theta_programs_disjoint"]
    # a connection per page in arm A (80 pages), one per load thread kept
    assert ho["recorded"]["A"]["accepts"] >= 80 and x["removed"] == ho["recorded"]["A"][
        "accepts"] - 4
    assert x["prediction"]["predicted_ns"] == pytest.approx(x["removed"] * t["fit"]["ns_per_use"])
    assert x["equal_work"]
    # small sizes do not speak for θ: nothing stored beside it
    assert "held_out" not in json.loads(plat.read_text())["theta"]["keep-alive"]

    # seed 000's socket server, unbuffered -> buffered: θ for writes (fitted above at 1-8 KiB)
    ip = res["tests"][1]
    ra, y = ip["recorded"]["A"], ip["analysis"]
    calls = 1                   # --ipc-calls: answers a client run gets
    # unbuffered: many more writes than answers; buffered (B): about one write an answer
    assert ra["writes"] > 10 * calls and ip["recorded"]["B"]["writes"] < ra["writes"] / 10
    assert ip["keep"] == calls * max(1, -(-ra["write_bytes"] // calls // 8192))
    assert y["removed"] == ra["writes"] - ip["keep"] and y["equal_work"]
    assert ip["theta_sha256"] == json.loads(plat.read_text())["theta"]["bigger-chunks"][
        "theta_sha256"] and y["theta_programs_disjoint"] and not ip["full_size"]
    assert not (out / "ipc-buffered" / "held-out.partial.json").exists()

    # pretouch: the count removed is A's heap faults, B (pretouched) has next to none
    pr = res["tests"][2]
    pa, pb, z = pr["recorded"]["A"], pr["recorded"]["B"], pr["analysis"]
    assert 0 < pa["heap_page_faults"] <= pa["page_faults"] and z["removed"] == pa[
        "heap_page_faults"]
    assert pb["heap_page_faults"] <= max(100, pa["heap_page_faults"] // 10)
    assert z["prediction"]["predicted_ns"] == pytest.approx(z["removed"] * f["fit"]["ns_per_use"])
    assert z["equal_work"] and "minflt_a_minus_b" in z and not pr["full_size"]
    # the combined arm: each kind's count x its θ, summed
    co = res["tests"][3]["analysis"]
    kinds = co["removed_by_kind"]
    assert kinds["keep-alive"] == res["tests"][3]["recorded"]["A"]["accepts"] - 4 * 2
    assert co["prediction"]["predicted_ns"] == pytest.approx(sum(co["predicted_by_kind_ns"].values()))
    assert co["equal_work"] and co["theta_programs_disjoint"]

    # the inflate benchmark: every document of each of the n iterations more is read through
    # a new Inflater in A (the small size has 2,000 documents), one per worker per iteration
    # in B; both counts are the probes' (n = 1: runs of 1 and 2 iterations)
    di = res["tests"][4]
    ia, ib, v = di["recorded"]["A"], di["recorded"]["B"], di["analysis"]
    assert ia["zlib_inflaters"] == 1 * 2000 and ib["zlib_inflaters"] == di["keep"] > 0
    assert v["removed"] == 2000 - di["keep"] and v["count_error_b"] == 0
    assert [u["order"] for u in di["units"]] == [["A1", "B1", "B2", "A2"],
                                                 ["B1", "A1", "A2", "B2"]]

    r = run_jvmos(["predict", "--from-run", ho["recorded"]["A"]["run_dir"], "--what-if",
                   "keep-alive", "--platform", str(plat)], timeout=60)
    assert r.returncode == 0, r.stderr
    # priced by θ, unless θ's own interval (2 servers here) reaches 0: then refused, saying so
    if t["fit"]["ci_with_model_error_ns"][0] > 0:
        assert "the whole change (θ, " in r.stdout and "no held-out test yet" in r.stdout
    else:
        assert "not priced: θ is not resolved from 0" in r.stdout

    # refitted from its stored windows: the same slopes, a new record naming the old one
    r = run_jvmos(["calibrate", "--in-situ", "--refit", str(tmp_path / "insitu"),
                   "--platform", str(plat)], timeout=120)
    assert r.returncode == 0, r.stderr
    t2 = json.loads(plat.read_text())["theta"]["keep-alive"]
    assert t2["fit"]["server_slopes_ns"] == pytest.approx(t["fit"]["server_slopes_ns"])
    assert t2["refitted_from"]["theta_sha256"] == t["theta_sha256"]


def test_theta_that_saw_the_shop_is_refused(platform_file, tmp_path):
    """θ that claims the shop among its programs: the held-out test refuses a verdict, and
    keeps its figures. Its own θ keep-alive (the test above's sizes), so that xdist can run it
    beside that test."""
    plat = tmp_path / "platform.json"
    _without_theta(platform_file, plat)
    r = run_jvmos(["calibrate", "--in-situ", "--in-situ-terms", "keep-alive", "--trials", "2",
                   "--in-situ-requests", "200", "--platform", str(plat), "--out",
                   str(tmp_path / "insitu")], timeout=600)
    assert r.returncode == 0, r.stderr
    from jvmos.tools import SHOP_JAR, jar, program_id
    # the shop's identity as the held-out test names it (checked against its result below)
    shop = program_id(jar(SHOP_JAR), "org.jvmos.workloads.shop (jar)")
    data = json.loads(plat.read_text())
    data["theta"]["keep-alive"]["programs"].append(shop)
    plat.write_text(json.dumps(data))
    r = run_jvmos(["run", "held-out", "--only", "shop-keep-alive", "--servers", "2",
                   "--windows", "1", "--pages", "20", "--platform", str(plat), "--out",
                   str(tmp_path / "leak")], timeout=900)
    assert r.returncode != 0 and "leaked" in r.stderr
    res = json.loads((tmp_path / "leak" / "held-out.json").read_text())
    assert res["tests"][0]["program_id"] == shop
    assert not res["tests"][0]["analysis"]["theta_programs_disjoint"]
    assert "LEAKED" in (tmp_path / "leak" / "held-out.md").read_text()


def test_in_situ_bad_input():
    one_error_line(run_jvmos(["calibrate", "--in-situ", "--in-situ-requests", "3"], timeout=60))


def _modern_jdk():
    """A JDK 21 or later found on this machine (virtual threads), or None."""
    from jvmos.experiments.chat import feature
    from jvmos.jdk import discover_jdks
    return next((j for j in discover_jdks() if feature(j) >= 21), None)


def test_theta_threads_and_the_chat_held_out(platform_file, tmp_path):
    """θ thread-pool on two live servers per group (a thread per connection, a pool) and its
    held-out test on the chat server, platform -> virtual threads, on θ's own JDK."""
    jvm = _modern_jdk()
    if jvm is None:
        pytest.skip("no JDK 21 or later on this machine (virtual threads)")
    plat = tmp_path / "platform.json"
    _without_theta(platform_file, plat)
    r = run_jvmos(["calibrate", "--in-situ", "--in-situ-terms", "thread-pool", "--trials", "2",
                   "--in-situ-requests", "200", "--jdk", str(jvm.home), "--platform", str(plat),
                   "--out", str(tmp_path / "insitu")], timeout=600)
    assert r.returncode == 0, r.stderr
    t = json.loads(plat.read_text())["theta"]["thread-pool"]
    groups = json.loads((tmp_path / "insitu" / "thread-pool" / "insitu.json").read_text())
    assert t["jdk"] == str(jvm.home) and t["unit"] == "thread"
    from jvmos.heuristic import theta as th
    # θ names its runs by their content: recomputed here, windows and each server's own
    assert t["runs_sha256"] == [th.sha256_of(g["windows"]) for g in groups["runs"]]
    assert all(g["arms_sha256"] == th.sha256_of(g["arms"]) for g in groups["runs"])
    assert t["servers"] == 2 and t["servers_per_run"] == 2
    for g in groups["runs"]:
        arms = g["arms"]
        assert len(arms["per-connection"]) == len(arms["pool"]) == len(g["windows"]) == 16
        for w, p, q in zip(g["windows"], arms["per-connection"], arms["pool"]):
            # one window of θ is the pair's difference, the same dose and the same requests
            assert w["dose"] == p["dose"] == q["dose"] and p["answer"] == q["answer"]
            assert w["cpu_ns"] == pytest.approx(p["cpu_ns"] - q["cpu_ns"])
            assert p["first"] != q["first"]
        # each dose had the thread-per-connection server first as often as the pool
        for d in t["doses"]:
            firsts = [p["first"] for p in arms["per-connection"] if p["dose"] == d]
            assert firsts.count(True) == firsts.count(False) == 2
        # the client's count: a connection per request, every 2nd or 4th, or one per window
        assert {w["dose"]: w["uses"] for w in g["windows"]} == {
            "every:1": 200, "every:2": 100, "every:4": 50, "keep-alive": 1}
    assert t["fit"]["ns_per_use"] > 0, "a thread per connection costs more CPU than a pool"

    out = tmp_path / "ho"
    r = run_jvmos(["run", "held-out", "--only", "chat-virtual", "--servers", "2", "--windows",
                   "1", "--rooms", "2", "--platform", str(plat), "--out", str(out)],
                  timeout=900)
    assert r.returncode == 0, r.stderr
    ho = json.loads((out / "held-out.json").read_text())["tests"][0]
    x = ho["analysis"]
    assert ho["theta_sha256"] == t["theta_sha256"] and ho["jdk"] == t["jdk"]
    assert x["theta_programs_disjoint"] and x["equal_work"]
    # a reader and a writer thread per connection: 40 users, 80 threads started (a thread the
    # JVM starts on its own may join them; a double count, 160, may not)
    assert 80 <= ho["recorded"]["A"]["threads_created"] <= 90
    # virtual threads: no platform thread per connection
    assert ho["recorded"]["B"]["threads_created"] < 40
    assert ho["recorded"]["A"]["count_hooks"], "the probes that counted the threads are named"
    assert not ho["full_size"]
    # small sizes do not speak for θ
    assert "held_out" not in json.loads(plat.read_text())["theta"]["thread-pool"]
    assert not (out / "held-out.partial.json").exists()


def test_chat_held_out_needs_a_theta_for_threads(platform_file, tmp_path):
    plat = tmp_path / "platform.json"
    _without_theta(platform_file, plat)
    r = run_jvmos(["run", "held-out", "--only", "chat-virtual", "--platform", str(plat),
                   "--out", str(tmp_path / "x")], timeout=120)
    line = one_error_line(r)
    assert "no θ thread-pool" in line
