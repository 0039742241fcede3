"""Off-CPU time by boundary (issue 25): the threads layer's sched_switch program keeps, for
each switch-out of a traced thread, the syscall it waited in, and the report shows the time
by boundary. Checked against sleeps of known length, and on a JVM that blocks on a socket."""
import json

import pytest

from conftest import ROOT, can_trace, run_jvmos

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")]

JAR = ROOT / "workloads/java/io/target/jvmos-io.jar"


def test_sleeps_are_off_cpu_in_clock_nanosleep_and_the_shell_waits_in_wait4(platform_file,
                                                                            tmp_path):
    out = tmp_path / "rec"
    r = run_jvmos(["record", "--layers", "threads", "--mode", "count", "--out", str(out), "--",
                   "sh", "-c", "sleep 0.2; sleep 0.2; sleep 0.2"])
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    off = s["totals"]["off_cpu"]
    sleep = off["by_boundary"]["sleep"]
    # three sleeps of 0.2 s, each one switch-out in clock_nanosleep (or nanosleep)
    assert 0.58e9 <= sleep["ns"] <= 0.9e9 and sleep["switches"] >= 3, off
    # the shell blocked in wait4 for each child, at least as long as the child slept
    shell = off["by_boundary"]["threads and processes"]
    assert shell["ns"] >= 0.58e9, off
    assert off["blocked_ns"] + off["preempted_ns"] == off["total_ns"]
    assert sum(b["ns"] for b in off["by_boundary"].values()) == off["total_ns"]
    text = run_jvmos(["report", str(out)]).stdout
    assert "Off-CPU time by boundary" in text and "sleep" in text
    r = run_jvmos(["report", "--html", str(out)])
    assert r.returncode == 0, r.stderr
    page = (out / "report.html").read_text()
    assert "Off-CPU time by boundary" in page and "off-CPU time (waiting" in page


def test_a_jvm_reading_a_socket_waits_in_read_or_poll(platform_file, tmp_path):
    out = tmp_path / "rec"
    r = run_jvmos(["record", "--layers", "threads", "--out", str(out), "--", "java", "-cp",
                   str(JAR), "org.jvmos.workloads.SocketStream", "--writes", "20000",
                   "--size", "8192"])
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    pid = next(p for p, v in s["by_pid"].items() if v.get("jvm"))
    off = s["by_pid"][pid]["off_cpu"]
    # the reader thread blocks in read (or the JDK's poll) until the writer sends
    socket_wait = sum(off["by_boundary"].get(b, {}).get("ns", 0) for b in
                      ("io (read/write on a socket, pipe or file)", "poll (epoll, poll, select)"))
    assert socket_wait > 0, off
    # the JVM's threads wait on futexes (the GC's and compiler's idle threads, joins)
    assert off["by_boundary"]["sync (futex, yield)"]["switches"] > 0
    assert off["by_syscall"], off
