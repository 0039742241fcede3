"""scripts/frames.py: sampled CPU through the frames a pattern names, checked against counts
worked out by hand from small collapsed profiles."""
import json
import math
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "frames.py"

# two JVMs of one recording; 25 samples in all
PID1 = """\
java/lang/Thread.run_[j];Worker.loop_[j];java/io/DataInputStream.readInt_[j];java/io/BufferedInputStream.read_[i] 6
java/lang/Thread.run_[j];Worker.loop_[j];java/io/DataInputStream.readInt_[0] 2
java/lang/Thread.run_[j];Worker.loop_[j];Worker.multiply_[j] 5
java/lang/Thread.run_[j];Worker.loop_[j];Worker.rec_[j];Worker.rec_[j];Worker.leafy_[j] 5
"""
PID2 = """\
start_thread;CompileBroker::compiler_thread_loop;C2Compiler::compile_method 4
Main.send_[j];java/io/DataOutputStream.writeInt_[j];java/io/BufferedOutputStream.write_[i] 3
"""


def run(*args):
    """The script, with the sampling interval given (these profiles have no manifest)."""
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
            "-p", "CompileBroker", "-p", r"Worker\.loop", "-p", r"readInt$", "-p", r"_\[j\]",
            "-p", r"Worker\.rec$")
    assert r.returncode == 0, r.stderr
    [res] = json.loads(r.stdout)
    assert res["samples_total"] == 25 and res["profiles"] == 2
    assert res["all_ms"] == 12.5                          # 25 x 1 ms / 2 runs
    p = res["patterns"]
    # readInt: the 6 (compiled, read inlined below it) and the 2 (interpreted); leaf of the 2
    assert p[r"DataInputStream\.readInt"]["inclusive_samples"] == 8
    assert p[r"DataInputStream\.readInt"]["self_samples"] == 2
    assert p[r"DataInputStream\.readInt"]["inclusive_ms"] == 4.0
    assert p[r"DataInputStream\.readInt"]["share_of_all_pct"] == 32.0
    # Garwood's interval for 8 counts is 3.454..15.763 (tables of the exact Poisson interval)
    lo, hi = p[r"DataInputStream\.readInt"]["inclusive_ci95_ms"]
    assert math.isclose(lo, 3.4538 / 2, rel_tol=1e-3) and math.isclose(hi, 15.7632 / 2, rel_tol=1e-3)
    # both buffered streams, each a leaf: 6 + 3
    assert p[r"Buffered(In|Out)putStream"]["inclusive_samples"] == 9
    assert p[r"Buffered(In|Out)putStream"]["self_samples"] == 9
    # a native frame without annotation matches too
    assert p["CompileBroker"]["inclusive_samples"] == 4
    assert p[r"Worker\.loop"]["inclusive_samples"] == 18
    assert p[r"Worker\.loop"]["self_samples"] == 0
    # the annotation is removed before matching: an anchored name matches, the annotation not
    assert p["readInt$"]["inclusive_samples"] == 8 and p["readInt$"]["self_samples"] == 2
    assert p[r"_\[j\]"]["inclusive_samples"] == 0 and p[r"_\[j\]"]["matched"] is False
    # two matching frames in one stack: the sample counts once
    assert p[r"Worker\.rec$"]["inclusive_samples"] == 5


def test_no_match_has_an_upper_bound_not_zero_error(tmp_path):
    d = make_run(tmp_path)
    r = run(d, "--interval-ns", "1000000", "--json", "-p", "NoSuchMethod")
    v = json.loads(r.stdout)[0]["patterns"]["NoSuchMethod"]
    assert v["inclusive_ms"] == 0 and v["inclusive_ci95_ms"][0] == 0
    assert math.isclose(v["inclusive_ci95_ms"][1], 3.689, rel_tol=1e-3)   # -ln(0.025)
    r = run(d, "--interval-ns", "1000000", "-p", "NoSuchMethod")
    assert "(no frame matched)" in r.stdout


def test_interval_comes_from_jvmos_and_its_manifest(tmp_path):
    d = make_run(tmp_path)
    (d / "manifest.json").write_text(json.dumps(
        {"sampler": "async-profiler (agentpath), cpu, 1000000 ns interval"}))
    r = subprocess.run([sys.executable, str(SCRIPT), str(d), "--json", "-p", "multiply"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)[0]["patterns"]["multiply"]["inclusive_ms"] == 5.0
    (d / "manifest.json").write_text(json.dumps(
        {"sampler": "async-profiler (agentpath), cpu, 200000 ns interval"}))
    r = subprocess.run([sys.executable, str(SCRIPT), str(d), "-p", "multiply"],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "sampled every 200000 ns" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_text_output_names_the_denominator(tmp_path):
    d = make_run(tmp_path)
    r = run(d, "--interval-ns", "1000000", "-p", "multiply")
    assert r.returncode == 0, r.stderr
    assert "sampled CPU, ms; [95% interval of the sampling error only]" in r.stdout
    assert "25 samples in 2 profiles, 25.0 of sampled CPU in all" in r.stdout
    assert "inclusive      5.0 [1.6–11.7] (20.0% of all)" in r.stdout
    r = run(d, "--interval-ns", "1000000", "--per-run", "5", "-p", "multiply")
    assert "ms per run (mean of 5)" in r.stdout and "inclusive      1.0" in r.stdout


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


def test_bad_profiles_are_one_line(tmp_path):
    for i, (text, said) in enumerate([("", "hold no samples"),
                                      ("a;b -4\n", "not a collapsed stack"),
                                      ("a;b 2.5\n", "not a collapsed stack"),
                                      (";; 2\n", "not a collapsed stack"),
                                      ("no_count\n", "not a collapsed stack")]):
        d = tmp_path / f"r{i}"
        d.mkdir()
        (d / "profile-1.collapsed").write_text(text)
        r = run(d, "--interval-ns", "1000000", "-p", "a")
        assert r.returncode == 1 and "Traceback" not in r.stderr, (text, r.stderr)
        assert said in r.stderr and len(r.stderr.strip().splitlines()) == 1, (text, r.stderr)
    d = tmp_path / "dir"
    (d / "profile-1.collapsed").mkdir(parents=True)
    r = run(d, "--interval-ns", "1000000", "-p", "a")
    assert r.returncode == 1 and "cannot be read" in r.stderr and "Traceback" not in r.stderr


def test_the_agent_writes_into_the_run_directory_from_any_cwd():
    """`record --sample --out relative/dir -- sh -c 'cd /tmp; java ...'`: the agent's file is
    absolute, so the profile still lands in the run directory that frames.py reads."""
    from jvmos import sampling
    args = sampling.agent_args(Path("results/runs/x"))
    file = args.split("file=", 1)[1]
    assert Path(file).is_absolute() and file.endswith("results/runs/x/profile-%p.collapsed")
