"""scripts/frames.py: sampled CPU through the frames a pattern names, checked against counts
worked out by hand from small collapsed profiles."""
import json
import math
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "frames.py"

# two JVMs of one recording; 20 samples in all
PID1 = """\
java/lang/Thread.run_[j];Worker.loop_[j];java/io/DataInputStream.readInt_[j];java/io/BufferedInputStream.read_[i] 6
java/lang/Thread.run_[j];Worker.loop_[j];java/io/DataInputStream.readInt_[0] 2
java/lang/Thread.run_[j];Worker.loop_[j];Worker.multiply_[j] 5
"""
PID2 = """\
start_thread;CompileBroker::compiler_thread_loop;C2Compiler::compile_method 4
Main.send_[j];java/io/DataOutputStream.writeInt_[j];java/io/BufferedOutputStream.write_[i] 3
"""


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True,
                          text=True)


def make_run(tmp_path: Path) -> Path:
    d = tmp_path / "rec"
    d.mkdir()
    (d / "profile-101.collapsed").write_text(PID1)
    (d / "profile-102.collapsed").write_text(PID2)
    return d


def test_inclusive_self_and_shares_by_hand(tmp_path):
    d = make_run(tmp_path)
    r = run(d, "--interval-ns", "1000000", "--per-run", "2", "--json",
            "-p", r"DataInputStream\.readInt", "-p", r"Buffered(In|Out)putStream",
            "-p", "CompileBroker", "-p", r"Worker\.loop")
    assert r.returncode == 0, r.stderr
    [res] = json.loads(r.stdout)
    assert res["samples_total"] == 20 and res["profiles"] == 2
    assert res["all_ms"] == 10.0                          # 20 x 1 ms / 2 runs
    p = res["patterns"]
    # readInt: the 6 (compiled, read inlined below it) and the 2 (interpreted); leaf of the 2
    assert p[r"DataInputStream\.readInt"]["inclusive_samples"] == 8
    assert p[r"DataInputStream\.readInt"]["self_samples"] == 2
    assert p[r"DataInputStream\.readInt"]["inclusive_ms"] == 4.0
    assert math.isclose(p[r"DataInputStream\.readInt"]["inclusive_err95_ms"],
                        1.96 * math.sqrt(8) / 2)
    assert p[r"DataInputStream\.readInt"]["share_of_all_pct"] == 40.0
    # both buffered streams, each a leaf: 6 + 3
    assert p[r"Buffered(In|Out)putStream"]["inclusive_samples"] == 9
    assert p[r"Buffered(In|Out)putStream"]["self_samples"] == 9
    # a native frame without annotation matches too; a sample is counted once
    assert p["CompileBroker"]["inclusive_samples"] == 4
    assert p[r"Worker\.loop"]["inclusive_samples"] == 13
    assert p[r"Worker\.loop"]["self_samples"] == 0


def test_text_output_names_the_denominator(tmp_path):
    d = make_run(tmp_path)
    r = run(d, "--interval-ns", "1000000", "-p", "multiply")
    assert r.returncode == 0, r.stderr
    assert "20 samples in 2 profiles, 20.0 ms of sampled CPU" in r.stdout
    assert "inclusive      5.0" in r.stdout and "(25.0% of all)" in r.stdout


def test_a_run_without_profiles_is_one_line(tmp_path):
    r = run(tmp_path, "--interval-ns", "1000000", "-p", "x")
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert r.stderr.strip().endswith("(was it recorded with --sample?)")
    assert len(r.stderr.strip().splitlines()) == 1


def test_bad_pattern_and_interval_are_refused(tmp_path):
    d = make_run(tmp_path)
    r = run(d, "--interval-ns", "1000000", "-p", "(")
    assert r.returncode == 2 and "--pattern '('" in r.stderr
    r = run(d, "--interval-ns", "0", "-p", "x")
    assert r.returncode == 2 and "must be positive" in r.stderr
