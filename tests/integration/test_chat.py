"""The chat server (Figure 1) and the generic server experiment, end to end at a small scale:
every message delivered exactly once, two native threads per connection on platform threads
and far fewer on virtual ones, the figure written; and their bad input."""
import json
import socket
import subprocess

import pytest

from conftest import ROOT, can_trace, one_error_line, run_jvmos
from jvmos.jdk import discover_jdks

pytestmark = pytest.mark.integration
traced = pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")

CHAT_JAR = ROOT / "workloads" / "java" / "chat" / "target" / "jvmos-chat.jar"
MODERN = [j for j in discover_jdks() if j.version.split(".")[0].isdigit()
          and int(j.version.split(".")[0]) >= 21]


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()       # nothing listens there now
    return port


@traced
def test_chat_small_platform_and_virtual(platform_file, tmp_path):
    out = tmp_path / "chat"
    threads = "both" if MODERN else "platform"
    r = run_jvmos(["run", "chat", "--levels", "2", "--users-per-room", "20", "--messages", "5",
                   "--threads", threads, "--no-warm-pair", "--out", str(out)], timeout=1500)
    assert r.returncode == 0, r.stderr
    res = json.loads((out / "figure1.json").read_text())
    assert res["thread_modes"] == (["platform", "virtual"] if MODERN else ["platform"])
    created = {}
    for mode, m in res["modes"].items():
        L = m["levels"]["2x20"]
        assert L["connections"] == 40
        for run in ("recorded", "bare"):
            load = L[run]
            # every message reached every member of its room exactly once
            assert load["lost"] == 0 and load["duplicated"] == 0, (mode, run)
            assert load["deliveries"] == 2 * 20 * 5 * 20, (mode, run)
            assert load["messages_per_s"] > 0 and load["latency_us"]["p99"] > 0, (mode, run)
        created[mode] = L["counts"]["threads_created"]
        # the threads layer saw the server's synchronization and scheduling
        assert L["waits"]["futex_calls"] > 0 and L["waits"]["runq_waits"] > 0, mode
        assert L["by_resource"]["io"] > 0 and L["by_resource"]["links"] > 0, mode
        assert L["bare_cpu_ns"] > 0 and L["overhead_pct_of_bare_cpu"] is not None, mode
        assert (out / L["run_dir"] / "summary.json").exists()
        # the server's off-CPU time: its threads wait on sockets and futexes (issue 25)
        srv = json.loads((out / L["run_dir"] / "summary.json").read_text())
        off = srv["totals"]["off_cpu"]
        assert off["blocked_ns"] > 0, (mode, off)
        assert any(b.startswith(("io:", "sync:", "poll:")) for b in off["by_boundary"]), off
        text = run_jvmos(["report", str(out / L["run_dir"])]).stdout
        assert "Off-CPU time by boundary" in text, mode
    # platform threads: a reader and a writer per connection (the JVM may add a few of its own)
    assert 2 * 40 <= created["platform"] <= 2 * 40 * 1.3, created
    if MODERN:
        assert created["virtual"] < 0.25 * created["platform"], created
        assert (out / "figure1-virtual.png").stat().st_size > 5000
    assert (out / "figure1.png").stat().st_size > 5000
    assert (out / "figure1.svg").read_text().lstrip().startswith("<?xml")
    md = (out / "figure1.md").read_text()
    assert "Native synchronization" in md
    # the chat's I/O is NIO and kernel copies, both bytes x calibrated costs: said so
    assert "| I/O (estimated) |" in md and "threads (measured)" in md
    assert not (out / "figure1.partial.json").exists()     # the finished run replaced it


@traced
def test_chat_served_under_count(platform_file, tmp_path):
    """--served-under count: interleaved pairs of a bare load and a count-mode recording of the
    server, each pair's ratio kept, the table and its goal written (not asserted: speed stays
    in the experiment)."""
    out = tmp_path / "served"
    r = run_jvmos(["run", "chat", "--served-under", "count", "--levels", "1",
                   "--users-per-room", "10", "--messages", "5", "--trials", "2",
                   "--threads", "platform", "--out", str(out)], timeout=1500)
    assert r.returncode == 0, r.stderr
    res = json.loads((out / "served-count.json").read_text())
    pairs = res["modes"]["platform"]["levels"]["1x10"]["pairs"]
    assert len(pairs) == 2
    for p in pairs:
        assert p["bare"]["rate"] > 0 and p["recorded"]["rate"] > 0
        assert p["ratio"] == pytest.approx(p["recorded"]["rate"] / p["bare"]["rate"])
        man = json.loads((out / p["recorded"]["run_dir"] / "manifest.json").read_text())
        assert man["mode"] == "count", man.get("mode")
        assert p["recorded"]["probe_hits"] > 0
        # the recording's own estimate of its probes' cost, and its split by probe kind
        by_kind = p["recorded"]["probe_overhead_by_kind_ns"]
        assert p["recorded"]["probe_overhead_ns"] == pytest.approx(sum(by_kind.values()))
        assert p["recorded"]["probe_overhead_ns"] > 0
    # interleaved: the order of the arms alternates from one pair to the next
    assert [p["order"] for p in pairs] == ["bare first", "recorded first"]
    md = (out / "served-count.md").read_text()
    assert "median of pairs" in md and "Where the probe effect goes" in md
    import csv
    import io as _io
    (row,) = list(csv.DictReader(_io.StringIO((out / "served-count.csv").read_text())))
    goal = row["goal ≥90% (count mode; judged on the 95% interval)"]
    ratios = [p["ratio"] for p in pairs]
    # the geometric mean of the pairs' ratios and its interval (t on the logs, 1 df) ...
    mean, lo, hi = (float(x) for x in row["recorded / bare, geometric mean of pairs [95%, "
                                          "paired t on logs]"]
                    .replace("[", "").replace("]", "").replace(",", " ").split())
    assert mean == pytest.approx((ratios[0] * ratios[1]) ** 0.5, abs=1e-4)
    import math
    half = 12.706 * abs(math.log(ratios[0]) - math.log(ratios[1])) / 2
    assert lo == pytest.approx(mean * math.exp(-half), abs=2e-4)
    assert hi == pytest.approx(mean * math.exp(half), rel=1e-3, abs=2e-4)
    # ... and the verdict is that interval's against 90%, never the median's
    assert goal == ("reached" if lo >= 0.9 else "NOT reached" if hi < 0.9 else "unresolved")
    cpu = [p["recorded"]["server_cpu_ns"] / p["bare"]["server_cpu_ns"] for p in pairs]
    cmean = float(row["server CPU per load, recorded / bare, geometric mean of pairs [95%]"]
                  .split()[0])
    assert cmean == pytest.approx((cpu[0] * cpu[1]) ** 0.5, abs=1e-4)
    # the observed probe effect: the pairs' CPU difference, its mean
    obs = float(row["probe effect observed: server CPU recorded - bare (ms, mean [95%, "
                    "paired t])"].split()[0])
    diffs = [p["recorded"]["server_cpu_ns"] - p["bare"]["server_cpu_ns"] for p in pairs]
    assert obs == pytest.approx(sum(diffs) / 2 / 1e6, abs=1e-3)      # in ms, as headed
    assert not (out / "served-count.partial.json").exists()
    # --render writes the same tables again from the JSON, measuring nothing
    before = (out / "served-count.md").read_text()
    (out / "served-count.md").unlink()
    r = run_jvmos(["run", "chat", "--render", str(out)], timeout=120)
    assert r.returncode == 0, r.stderr
    assert (out / "served-count.md").read_text() == before


@traced
def test_server_experiment_on_a_wrapped_server(platform_file, tmp_path):
    """jvmos run server with a user's commands: the JVM found under a shell wrapper, the
    port found from its listening socket, {level} and {port} put into the load command."""
    out = tmp_path / "srv"
    # the JVM is the shell's child, not the shell itself: found among its descendants
    server = f"sh -c 'java -jar {CHAT_JAR} --port 0 --max-seconds 300; true'"
    load = (f"java -cp {CHAT_JAR} org.jvmos.workloads.chat.ChatLoad --port {{port}} "
            f"--rooms {{level}} --users-per-room 5 --messages 3 --max-seconds 120")
    r = run_jvmos(["run", "server", "--server-cmd", server, "--load-cmd", load,
                   "--levels", "1,2", "--layers", "threads,links", "--no-warm-pair",
                   "--rate-key", "messages_per_s", "--out", str(out)], timeout=900)
    assert r.returncode == 0, r.stderr
    res = json.loads((out / "figure.json").read_text())
    assert list(res["levels"]) == ["1", "2"]
    for lv, L in res["levels"].items():
        assert L["recorded"]["deliveries"] == int(lv) * 5 * 3 * 5
        assert L["recorded"]["rate"] == L["recorded"]["messages_per_s"] > 0
        assert L["counts"]["accepts"] == int(lv) * 5
    assert res["wrapper_pid"] and res["server_pid"] != res["wrapper_pid"]
    assert (out / "figure.png").stat().st_size > 5000
    assert "| 2 |" in (out / "figure.md").read_text()


def test_load_generator_at_a_closed_port():
    r = subprocess.run(["java", "-cp", str(CHAT_JAR), "org.jvmos.workloads.chat.ChatLoad",
                        "--port", str(closed_port()), "--rooms", "1", "--max-seconds", "30"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), r.stderr
    assert "cannot connect" in lines[0]


def test_chat_levels_that_do_not_parse(tmp_path):
    for bad in ("5,x", "5,,10", "0,5", "-2", "5,5"):
        out = tmp_path / "never"
        line = one_error_line(run_jvmos(["run", "chat", "--levels", bad, "--out", str(out)]))
        assert "level" in line, bad
        assert not out.exists(), bad           # rejected before anything started
    line = one_error_line(run_jvmos(["run", "server", "--server-cmd", "true", "--load-cmd",
                                     "echo {level}", "--levels", "a b", "--out",
                                     str(tmp_path / "never")]))
    assert "bad level 'a b'" in line
    assert not (tmp_path / "never").exists()


def test_server_cmd_that_exits_at_once(tmp_path):
    line = one_error_line(run_jvmos(
        ["run", "server", "--server-cmd", "sh -c 'echo no licence >&2; exit 3'",
         "--load-cmd", "echo {level}", "--levels", "1", "--out", str(tmp_path / "s")]))
    assert "the server command exited (3)" in line and "before listening" in line
    assert "no licence" in line
    line = one_error_line(run_jvmos(
        ["run", "server", "--server-cmd", "/nonexistent/server", "--load-cmd", "x {level}",
         "--levels", "1", "--out", str(tmp_path / "t")]))
    assert "cannot start" in line


def test_server_load_cmd_without_level(tmp_path):
    line = one_error_line(run_jvmos(["run", "server", "--server-cmd", "true", "--load-cmd",
                                     "echo hi", "--levels", "1", "--out", str(tmp_path / "u")]))
    assert "{level}" in line
    assert not (tmp_path / "u").exists()           # rejected before anything started
