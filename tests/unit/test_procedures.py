"""The procedures behind committed results (scripts/procedures): the render step re-makes the
committed table from the committed data, byte for byte, and the measuring steps are at least
well-formed (they need root and minutes of recording, so `make test` does not run them)."""
import json
import shutil
import subprocess
import sys

import pytest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROC = ROOT / "scripts" / "procedures"


def test_cold_waits_render_remakes_the_committed_table(tmp_path):
    src = ROOT / "results" / "ipc" / "cold-waits"
    (tmp_path / "runs").mkdir()
    shutil.copy(src / "runs" / "cold-waits.json", tmp_path / "runs")
    r = subprocess.run([sys.executable, str(PROC / "ipc_cold_waits_render.py"),
                        str(tmp_path / "runs")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "cold-waits.md").read_text() == (src / "cold-waits.md").read_text()


def test_chat_messages_dose_remakes_the_committed_table(tmp_path):
    """The post-hoc split of held-out chat-virtual's saving (per delivery, and the sessions
    alone) re-made from the two committed runs, byte for byte."""
    src = ROOT / "results" / "predictions" / "held-out-chat"
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    shutil.copy(src / "held-out.json", a)
    shutil.copy(src / "messages-4" / "held-out.json", b)
    for d, s in ((a, src), (b, src / "messages-4")):
        for arm in "AB":
            (d / f"recorded-{arm}").mkdir()
            shutil.copy(s / f"recorded-{arm}" / "summary.json", d / f"recorded-{arm}")
    r = subprocess.run([sys.executable, str(PROC / "chat_messages_dose.py"), str(a), str(b)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert (a / "messages-dose.md").read_text() == (src / "messages-dose.md").read_text()
    # the slope by hand, from the two runs' own paired differences
    d1 = json.loads((a / "held-out.json").read_text())["tests"][0]["analysis"]["diffs_ns"]
    d4 = json.loads((b / "held-out.json").read_text())["tests"][0]["analysis"]["diffs_ns"]
    got = json.loads((a / "messages-dose.json").read_text())
    assert got["per_delivery_ns"] == pytest.approx(
        (sum(d4) / len(d4) - sum(d1) / len(d1)) / (200 * 20 * 3))
    # a = the 1-message saving less one message's worth of deliveries
    assert got["sessions_ns"] == pytest.approx(sum(d1) / len(d1) - got["per_delivery_ns"] * 4000)
    # two runs that priced different θ cannot be set side by side
    data = json.loads((b / "held-out.json").read_text())
    data["tests"][0]["theta_sha256"] = "0" * 64
    (b / "held-out.json").write_text(json.dumps(data))
    r = subprocess.run([sys.executable, str(PROC / "chat_messages_dose.py"), str(a), str(b)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "different θ" in r.stderr


def test_equal_200_remakes_the_committed_table():
    """Table 5's per-thread cost at 200 threads, re-made from the committed recordings."""
    r = subprocess.run([sys.executable, str(PROC / "threads_equal200.py"),
                        str(ROOT / "results" / "threads" / "equal-200"),
                        str(ROOT / "results" / "chat" / "repeats" / "runs")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == (ROOT / "results" / "threads" / "equal-200" / "per-thread.md").read_text()


def test_java_layer_sampled_counts_a_collapsed_profile(tmp_path):
    """The counting script on a small collapsed profile whose counts are known."""
    prof = tmp_path / "p.collapsed"
    prof.write_text("main;java/lang/Thread.start;JVM_StartThread;pthread_create 5\n"
                    "main;java/lang/Thread.start;java/lang/Thread.start0 3\n"
                    "main;other 7\n")
    r = subprocess.run([sys.executable, str(PROC / "threads_java_layer_sampled.py"), str(prof)],
                       capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["samples_total"] == 15 and got["samples_in_thread_start"] == 8
    assert got["samples_in_thread_start_outside_jvm_startthread"] == 3
    assert got["top_leaf_frames_outside_jvm_startthread"] == [["java/lang/Thread.start0", 3]]


def test_no_procedure_code_under_results():
    """results/ holds data only; procedures live in scripts/procedures."""
    # (a recording keeps the script it launched, as data: runs/*/workload/)
    code = [p for p in (ROOT / "results").rglob("*") if p.suffix in (".py", ".sh")
            and "workload" not in p.parts]
    assert code == [], code


def test_measuring_procedures_are_well_formed():
    for name in ("ipc_cold_waits.py", "start_signal_check.py"):
        r = subprocess.run([sys.executable, "-m", "py_compile", str(PROC / name)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    assert "results/start-signal-check" in (PROC / "start_signal_check.py").read_text()
    assert (ROOT / "results" / "start-signal-check" / "after-10x10").is_dir()
    r = subprocess.run(["bash", "-n", str(PROC / "matmul_sampled.sh")], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    # each names the results directory it writes, which is committed
    assert "results/ipc/cold-waits/runs" in (PROC / "ipc_cold_waits.py").read_text()
    assert (ROOT / "results" / "ipc" / "cold-waits" / "runs").is_dir()
    assert "OUT=results/matmul/sampled" in (PROC / "matmul_sampled.sh").read_text()
    assert (ROOT / "results" / "matmul" / "sampled").is_dir()
