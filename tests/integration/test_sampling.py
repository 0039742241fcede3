"""--mode sample and --sample: async-profiler in real JVMs, attributed to jvmos categories."""
import json
import subprocess
import time

import pytest

from conftest import JVMOS, ROOT, can_trace, run_jvmos, wait_for_manifest
from test_record import IO_JAR, java, summary

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok"),
              pytest.mark.skipif(not (ROOT / "build/async-profiler/libasyncProfiler.so").exists(),
                                 reason="async-profiler not installed (make build)")]
WRITE_PATH = ("jni_copy", "io_syscall", "kernel_copy", "kernel_other")


def loop(n):
    return [java(), "-cp", str(IO_JAR), "org.jvmos.workloads.BlockingIo", "--iterations",
            str(n), "--size", "10", "--target", "/dev/null"]


def test_sample_mode_attributes_the_write_loop_and_draws_a_flame_graph(tmp_path):
    out = tmp_path / "sample"
    r = run_jvmos(["record", "--mode", "sample", "--out", str(out), "--"] + loop(3_000_000))
    assert r.returncode == 0, r.stderr
    s = summary(out)
    samp = s["sampling"]
    assert samp["samples_total"] > 100
    on_path = sum(samp["categories"].get(c, {}).get("samples", 0) for c in WRITE_PATH)
    assert on_path > samp["samples_total"] / 2
    assert s["categories"]["jni_copy"]["method"] == "sampled"
    site = samp["top_call_sites"]["jni_copy"][0][0]
    assert "BlockingIo" in site and "FileOutputStream.write" in site
    html = out / samp["flamegraphs"][0]
    assert html.stat().st_size > 10_000 and "FileOutputStream" in html.read_text(errors="replace")
    assert "top Java call sites" in run_jvmos(["report", str(out)]).stdout


def test_count_mode_with_samples_takes_times_from_samples(platform_file, tmp_path):
    out = tmp_path / "count-sample"
    r = run_jvmos(["record", "--mode", "count", "--sample", "--out", str(out), "--"] + loop(1_000_000))
    assert r.returncode == 0, r.stderr
    s = summary(out)
    jc = s["categories"]["jni_copy"]
    assert jc["calls"] >= 1_000_000                         # exact, from the probes
    assert jc["method"] == "sampled" and jc["time_ns"] == jc["time_sampled_ns"]
    assert s["sampling"]["samples_total"] > 0


def test_sample_mode_attaches_and_detaches_cleanly(tmp_path):
    out = tmp_path / "attach"
    jvm = subprocess.Popen(loop(60_000_000), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(1.5)
        r = run_jvmos(["record", "--mode", "sample", "--pid", str(jvm.pid), "--duration", "2",
                       "--out", str(out)])
        assert r.returncode == 0, r.stderr
        assert jvm.poll() is None, "the JVM keeps running after the profiler stops"
        samp = summary(out)["sampling"]
        assert samp["samples_total"] > 100
        _, err = jvm.communicate(timeout=600)
        assert jvm.returncode == 0, err
    finally:
        if jvm.poll() is None:
            jvm.kill()


def test_jvm_without_attach_gives_a_clear_error_and_probe_modes_still_work(platform_file, tmp_path):
    jvm = subprocess.Popen([java(), "-XX:+DisableAttachMechanism"] + loop(500_000_000)[1:],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.5)
        r = run_jvmos(["record", "--mode", "sample", "--pid", str(jvm.pid), "--duration", "1",
                       "--out", str(tmp_path / "s")])
        assert r.returncode != 0 and "Traceback" not in r.stderr
        errors = [l for l in r.stderr.splitlines() if l.startswith("jvmos: error:")]
        assert len(errors) == 1 and "DisableAttachMechanism" in errors[0]
        # the run directory says so too: not "running", and no summary claims figures
        m = json.loads((tmp_path / "s" / "manifest.json").read_text())
        assert m["status"] == "failed" and "cannot load async-profiler" in m["error"]
        assert m["end_time"] is not None
        assert not (tmp_path / "s" / "summary.json").exists()
        r = run_jvmos(["record", "--mode", "count", "--pid", str(jvm.pid), "--duration", "2",
                       "--out", str(tmp_path / "c")])
        assert r.returncode == 0, r.stderr
        assert summary(tmp_path / "c")["categories"]["jni_copy"]["calls"] > 1000
    finally:
        jvm.kill()


def test_sample_mode_load_that_raises_is_load_failed(tmp_path):
    """The load driven while sampling (experiments pass one) fails: the recording is written
    with status load_failed and the error is said, not lost in a thread."""
    from jvmos import JvmosError
    from jvmos import record as rec
    out = tmp_path / "load"
    jvm = subprocess.Popen(loop(2_000_000_000), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)

    def load():
        time.sleep(1.0)
        raise RuntimeError("the client lost its connection")
    try:
        time.sleep(1.5)
        with pytest.raises(JvmosError) as e:
            rec.record(rec.Options(pid=jvm.pid, mode="sample", out=out, workload=load,
                                   log=lambda m: None))
        assert "the load driven during the recording failed: the client lost its connection" \
            in str(e.value)
        s = summary(out)
        m = json.loads((out / "manifest.json").read_text())
        assert s["status"] == m["status"] == "load_failed"
        assert "the client lost its connection" in s["status_reason"]
        assert s["sampling"]["samples_total"] > 0      # what was sampled is kept
        assert jvm.poll() is None
    finally:
        jvm.kill()


def test_sample_mode_target_that_exits_is_target_exited(tmp_path):
    out = tmp_path / "gone"
    jvm = subprocess.Popen(loop(2_000_000_000), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.5)
        rec = subprocess.Popen(JVMOS + ["record", "--mode", "sample", "--pid", str(jvm.pid),
                                        "--out", str(out)],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for_manifest(out, started=True)      # the agent is loaded: sampling has begun
        time.sleep(2)
        jvm.kill()
        _, err = rec.communicate(timeout=300)
        assert rec.returncode == 1 and "Traceback" not in err
        errors = [l for l in err.splitlines() if l.startswith("jvmos: error:")]
        assert len(errors) == 1 and "recording target_exited" in errors[0], err
        s = summary(out)
        assert s["status"] == "target_exited"
        assert json.loads((out / "manifest.json").read_text())["status"] == "target_exited"
    finally:
        if jvm.poll() is None:
            jvm.kill()


NAPPER = """
public class Napper {
    static final Object LOCK = new Object();
    static void nap(int ms) throws InterruptedException { Thread.sleep(ms); }
    static void await(int ms) throws InterruptedException {
        synchronized (LOCK) { LOCK.wait(ms); }
    }
    public static void main(String[] a) throws Exception {
        int rounds = Integer.parseInt(a[0]);
        for (int i = 0; i < rounds; i++) { nap(20); await(10); }
    }
}
"""


def _napper(tmp_path, rounds):
    src = tmp_path / "Napper.java"
    src.write_text(NAPPER)
    subprocess.run([java()[:-len("java")] + "javac",
                    "-d", str(tmp_path), str(src)], check=True)
    return [java(), "-cp", str(tmp_path), "Napper", str(rounds)]


@pytest.mark.parametrize("how", ["launch", "attach"])
def test_wall_samples_name_where_threads_waited(platform_file, tmp_path, how):
    """--sample --wall: the Java call sites of the off-CPU time. A program that sleeps 20 ms
    and waits 10 ms on a monitor per round. HotSpot's Thread.sleep parks on a futex, so both
    are off-CPU in futex (the threads layer's table), and the wall samples in state sleeping
    name the two call sites under the same boundary."""
    out = tmp_path / "wall"
    if how == "launch":
        r = run_jvmos(["record", "--layers", "threads", "--sample", "--wall", "--out", str(out),
                       "--"] + _napper(tmp_path, 40))
    else:
        jvm = subprocess.Popen(_napper(tmp_path, 400), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
        try:
            time.sleep(1.5)
            r = run_jvmos(["record", "--layers", "threads", "--sample", "--wall", "--pid",
                           str(jvm.pid), "--duration", "2", "--out", str(out)])
            assert jvm.poll() is None, "the JVM keeps running after the profiler stops"
        finally:
            jvm.kill()
            jvm.wait()
    assert r.returncode == 0, r.stderr
    s = summary(out)
    waits = s["sampling"]["waits"]
    assert not waits["conversion_failed"] and waits["samples_total"] > 0
    futex = waits["by_boundary"]["sync: blocked in futex"]
    sites = [site for site, _ in futex["top_call_sites"]]
    assert any("Napper.nap -> java/lang/Thread.sleep" in x for x in sites), futex
    assert any("Napper.await -> java/lang/Object.wait" in x for x in sites), futex
    # one wall sample per 10 ms of each wait: the 20-ms sleeps of 40 rounds (launch) give
    # about 80, of the rounds in 2 s (attach) about 130; half of that at least
    naps = sum(n for site, n in futex["top_call_sites"] if "Napper.nap" in site)
    assert naps >= (40 if how == "launch" else 60), futex
    # the CPU samples are still attributed (profile-PID.collapsed converted from the JFR)
    prof = out / s["sampling"]["profiles"][0]
    assert prof.stat().st_size > 0 and s["sampling"]["samples_total"] > 0
    text = run_jvmos(["report", str(out)]).stdout
    assert "Where threads waited" in text and "Napper.nap" in text


def test_wall_needs_a_sampler(tmp_path):
    r = run_jvmos(["record", "--wall", "--out", str(tmp_path / "x"), "--", "true"])
    assert r.returncode == 2 and "--wall" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()
