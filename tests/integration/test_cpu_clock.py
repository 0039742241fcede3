"""jvmos.cputime on real JVMs whose threads burn CPU and exit, and the target's CPU time that
`jvmos record` puts beside the guaranteed overhead."""
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ROOT, can_trace, run_jvmos
from jvmos import cputime
from jvmos.jdk import discover_jdks

pytestmark = [pytest.mark.integration]

SRC = Path(__file__).resolve().parent / "java" / "BurnThreads.java"
IO_JAR = ROOT / "workloads/java/io/target/jvmos-io.jar"
TICK_NS = 1_000_000_000 // os.sysconf("SC_CLK_TCK")
THREADS, BURN_MS = 4, 200


@pytest.fixture(scope="module")
def burn(tmp_path_factory):
    """(java, classpath) of BurnThreads, compiled with the first JDK found."""
    jdks = [j for j in discover_jdks() if (j.home / "bin" / "javac").exists()]
    if not jdks:
        pytest.skip("needs a JDK with javac")
    d = tmp_path_factory.mktemp("burn")
    subprocess.run([str(jdks[0].home / "bin" / "javac"), "-d", str(d), str(SRC)], check=True,
                   timeout=300)
    return str(jdks[0].home / "bin" / "java"), str(d)


def burn_cmd(burn, sleep_ms):
    java, cp = burn
    return [java, "-cp", cp, "BurnThreads", str(THREADS), str(BURN_MS), str(sleep_ms)]


def test_cpu_clock_counts_threads_that_exited_and_agrees_with_proc_stat(burn):
    p = subprocess.Popen(burn_cmd(burn, 5000), stdout=subprocess.PIPE, text=True)
    try:
        burned = json.loads(p.stdout.readline())["burned_ns"]   # printed after the joins
        assert burned >= THREADS * BURN_MS * 1_000_000          # each thread spun to its budget
        live = cputime.schedstat_live_threads_ns(p.pid)
        clock = cputime.process_cpu_ns(p.pid)
        ticks = cputime.stat_cpu_ns(p.pid)
        clock2 = cputime.process_cpu_ns(p.pid)
    finally:
        p.kill()
        p.wait()
    # the burners have exited: their CPU is gone from task/*/schedstat, not from the clock
    assert clock - live >= burned
    assert clock >= burned
    # /proc/PID/stat is the same runtime cut into ticks (utime and stime each truncated);
    # allow a tick per thread that burned, two for the truncations, and 20 ms for the JVM's
    # own threads between the readings (it sleeps then)
    slack = (THREADS + 2) * TICK_NS + 20_000_000
    assert clock - slack <= ticks <= clock2 + slack


def test_tree_keeps_the_last_reading_of_a_child_that_was_reaped_and_wait4_counts_it(burn):
    # a shell wraps the JVM and reaps it; the JVM sleeps 600 ms after its burners exit, so
    # that a reading at a 0.1 s interval is taken after the burn
    sh = subprocess.Popen(["/bin/sh", "-c", " ".join(burn_cmd(burn, 600)) + "; sleep 1"],
                          stdout=subprocess.PIPE, text=True)
    tree = cputime.TreeCpu(sh.pid, tree=True, interval=0.1).start()
    burned = json.loads(sh.stdout.readline())["burned_ns"]
    assert cputime.wait_exited(sh.pid, timeout=120)
    res = tree.stop()
    code, clock_end, rusage_ns = cputime.reap(sh)
    assert code == 0 and sh.returncode == 0
    assert res["cpu_ns"] >= burned
    assert res["gone_pids"] and not res["complete"]            # the JVM went, and it is said
    assert "last reading" in res["method"]
    # the shell's own clock does not include its reaped child; its rusage does
    assert clock_end < burned <= rusage_ns
    launched = cputime.launched_cpu(0, clock_end, rusage_ns)
    assert launched["cpu_ns"] == rusage_ns and launched["complete"]


def test_tree_says_when_children_it_never_saw_were_reaped():
    # 300 short children, each born and reaped between two polls at 0.2 s, then a busy loop
    sh = subprocess.Popen(["/bin/sh", "-c", "for i in $(seq 300); do /bin/true; done; i=0; "
                           "while [ $i -lt 200000 ]; do i=$((i+1)); done"])
    tree = cputime.TreeCpu(sh.pid, tree=True, interval=0.2).start()
    assert cputime.wait_exited(sh.pid, timeout=120)
    res = tree.stop()
    _, _, rusage_ns = cputime.reap(sh)
    # the children used CPU (300 exec's of /bin/true take well over a tick here) that the
    # clocks did not see: the figure is marked, and stays below the shell's rusage
    assert res["reaped_children_cpu_ns"] > 0
    assert not res["complete"] and "not counted" in res["method"]
    assert res["cpu_ns"] < rusage_ns


@pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")
def test_record_pid_gives_the_overhead_as_a_share_of_the_targets_cpu(platform_file, tmp_path):
    out = tmp_path / "attach"
    java = str(discover_jdks()[0].home / "bin" / "java")
    jvm = subprocess.Popen([java, "-cp", str(IO_JAR), "org.jvmos.workloads.BlockingIo",
                            "--iterations", "2000000000", "--size", "10", "--target", "/dev/null"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)
        before = cputime.process_cpu_ns(jvm.pid)
        r = run_jvmos(["record", "--pid", str(jvm.pid), "--duration", "3", "--out", str(out)])
        after = cputime.process_cpu_ns(jvm.pid)
    finally:
        jvm.kill()
        jvm.wait()
    assert r.returncode == 0, r.stderr
    t = json.loads((out / "summary.json").read_text())["totals"]
    cpu = t["target_cpu_ns"]
    # the JVM loops on write(2): it used CPU while traced, and no more than around the record
    assert 0 < cpu <= after - before
    assert t["target_cpu_complete"] is True
    assert "CPU clock" in t["target_cpu_method"]
    g = t["guaranteed_overhead_ns"]
    assert t["guaranteed_overhead_pct_of_cpu"] == pytest.approx(100.0 * g / cpu)
    assert t["guaranteed_overhead_pct_of_wall"] == pytest.approx(100.0 * g / t["wall_ns"])
    pct = t["guaranteed_overhead_pct_of_cpu"]
    assert f"= {pct:.1f}% of the target's CPU time ({cpu / 1e6:,.1f} ms CPU during the " \
           "recording)" in r.stdout


@pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")
def test_record_launch_counts_the_cpu_of_threads_that_exited(platform_file, tmp_path, burn):
    out = tmp_path / "launch"
    r = run_jvmos(["record", "--layers", "threads", "--out", str(out), "--"]
                  + burn_cmd(burn, 0))
    assert r.returncode == 0, r.stderr
    burned = json.loads([l for l in r.stdout.splitlines() if l.startswith('{"threads"')][0])[
        "burned_ns"]
    t = json.loads((out / "summary.json").read_text())["totals"]
    assert t["target_cpu_complete"] is True and "wait4 rusage" in t["target_cpu_method"]
    assert t["target_cpu_ns"] >= burned
    assert "% of the target's CPU time (" in r.stdout


@pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")
def test_figure2_splits_the_bare_loads_cpu(platform_file, tmp_path):
    out = tmp_path / "tomcat"
    r = run_jvmos(["run", "tomcat", "--levels", "2x2", "--page-bytes", "4096",
                   "--warmup-pages", "8", "--out", str(out)], timeout=1800)
    assert r.returncode == 0, r.stderr
    L = json.loads((out / "figure2.json").read_text())["levels"]["2x2"]
    bare, rec, g = L["bare_cpu_ns"], L["server_cpu_ns"], L["guaranteed_ns"]
    assert bare > 0 and rec > 0 and g > 0
    assert L["java_exec_ns"] == pytest.approx(bare - g)
    assert L["overhead_pct_of_bare_cpu"] == pytest.approx(100.0 * g / bare)
    assert L["probe_effect_cpu_ns"] == pytest.approx(rec - bare)
    assert L["recorded_over_bare_cpu"] == pytest.approx(rec / bare)
    md = (out / "figure2.md").read_text()
    # the recorded-minus-bare bracket includes the server's warm-up, and says so
    assert "| overhead / bare CPU |" in md and \
        "recorded CPU (recorded - bare, warm-up included)" in md
    # the row shows the bare-run figures, not the recorded run's
    row = [l for l in md.splitlines() if l.startswith("| 2x2 |")][0]
    assert f"| {bare / 1e6:,.1f} |" in row and f"{100.0 * g / bare:.1f}%" in row
