"""Off-CPU time by boundary (issue 25): the threads layer's sched_switch program keeps, for
each switch-out of a traced thread, the syscall it waited in, and the report shows the time
by boundary. Checked against sleeps of known length, and on a JVM that blocks on a socket."""
import json

import pytest

from conftest import ROOT, can_trace, run_jvmos

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")]

JAR = ROOT / "workloads/java/io/target/jvmos-io.jar"


def threads_boundary(syscall):
    from jvmos.analyzers import threads
    return threads._BOUNDARY_OF[syscall]


def analyzers_threads():
    from jvmos.analyzers import threads
    return threads


def test_sleeps_are_off_cpu_in_clock_nanosleep_and_the_shell_waits_in_wait4(platform_file,
                                                                            tmp_path):
    out = tmp_path / "rec"
    # "true" last, so that the shell forks every sleep (a shell may exec its last command)
    r = run_jvmos(["record", "--layers", "threads", "--mode", "time", "--out", str(out), "--",
                   "sh", "-c", "sleep 0.2; sleep 0.2; sleep 0.2; true"])
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    off = s["totals"]["off_cpu"]
    sleep = off["by_boundary"]["sleep"]
    # three sleeps of 0.2 s, each one blocked in clock_nanosleep (or nanosleep). jvmos's hold
    # of an exec'd child may stop it a moment late, inside its first sleep (CI saw 0.17 ms of
    # it): the sleep is then interrupted and resumed by restart_syscall, its own boundary
    restarted = off["by_boundary"].get(analyzers_threads().RESTARTED, {"ns": 0})
    assert 0.58e9 <= sleep["ns"] + restarted["ns"] <= 0.9e9 and sleep["intervals"] >= 3, off
    # the shell blocked in wait4 for each child, at least as long as the child slept
    shell = next(e for b, e in off["by_boundary"].items() if b.startswith("threads and processes"))
    assert shell["ns"] >= 0.58e9, off
    # jvmos holds each exec'd child stopped until its probes attach: said as such
    assert off["stopped_ns"] > 0 and analyzers_threads().STOPPED in off["by_boundary"], off
    # every interval began with a switch-out the threads layer counted
    csw = s["totals"]["context_switches"]
    assert off["intervals"] <= csw["voluntary"] + csw["involuntary"]
    # preempted time is the run queue's wait after a preemption, seen by another program
    runq = s["categories"]["runq"]["parts"]["after preemption"]["time_ns"]
    assert off["preempted_ns"] == runq, (off["preempted_ns"], runq)
    text = run_jvmos(["report", str(out)]).stdout
    assert "Off-CPU time by boundary" in text and "sleep" in text
    r = run_jvmos(["report", "--html", str(out)])
    assert r.returncode == 0, r.stderr
    page = (out / "report.html").read_text()
    assert "Off-CPU time by boundary" in page and "off-CPU time (waiting" in page


def test_a_jvm_reading_a_socket_waits_in_read_or_poll(platform_file, tmp_path):
    out = tmp_path / "rec"
    # --scope host: sync then holds every futex syscall, so the off-CPU time in them is part
    # of it (at --scope process sync holds glibc's futex waits only: test_engine_threads)
    r = run_jvmos(["record", "--layers", "threads", "--scope", "host", "--out", str(out), "--",
                   "java", "-cp", str(JAR), "org.jvmos.workloads.SocketStream", "--writes",
                   "20000", "--size", "8192"])
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    pid = next(p for p, v in s["by_pid"].items() if v.get("jvm"))
    off = s["by_pid"][pid]["off_cpu"]
    # the reader thread blocks in read (or the JDK's poll) until the writer sends
    reads = off["by_syscall"].get("read", {}).get("blocked_ns", 0) + \
        off["by_syscall"].get("ppoll", {}).get("blocked_ns", 0) + \
        off["by_syscall"].get("poll", {}).get("blocked_ns", 0)
    assert reads > 0, off
    # the JVM's threads wait on futexes (the GC's and compiler's idle threads, joins), and
    # that waiting is the sync category's time, which includes it (futex spans, blocking
    # included): the off-CPU part cannot exceed it
    futex = off["by_syscall"]["futex"]["blocked_ns"]
    assert 0 < futex <= s["by_pid"][pid]["categories"]["sync"]["time_raw_ns"], off


def test_a_seed000_socket_call_waits_in_read_and_the_html_report_says_so(platform_file,
                                                                         tmp_path):
    """One cold seed-000 call (jvmos run ipc's campaign script: the socket server and a
    client JVM making one VV call at size 5): the client waits for the answer in a socket
    read (or its poll), and both reports show the off-CPU table."""
    from jvmos.experiments.ipc import SCRIPT
    from jvmos.jdk import discover_jdks
    from jvmos.tools import IPC_JAR, jar
    d = tmp_path / "workload"
    d.mkdir()
    java = str(discover_jdks()[0].home / "bin" / "java")
    (d / "campaign.sh").write_text(SCRIPT.format(dir=d, java=java, jar=jar(IPC_JAR),
                                                 prim="sockets", bench="VV", size=5, calls=1,
                                                 opts=""))
    out = tmp_path / "rec"
    r = run_jvmos(["record", "--layers", "threads", "--out", str(out), "--", "sh",
                   str(d / "campaign.sh")])
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    client = (d / "client.pid").read_text().strip()
    off = s["by_pid"][client]["off_cpu"]
    # blocked in poll (NIO's socket read waits there) or in a socket read itself; a file read
    # (pread64 of a class) does not count
    socket = {"poll", "ppoll", "read", "recvfrom", "recvmsg"}
    waited = {name: e for name, e in off["by_syscall"].items() if name in socket}
    assert sum(e["blocked_ns"] for e in waited.values()) > 0, off["by_syscall"]
    assert run_jvmos(["report", "--html", str(out)]).returncode == 0
    page = (out / "report.html").read_text()
    assert "Off-CPU time by boundary" in page
    boundaries = {threads_boundary(name) for name in waited}
    assert any(b in page for b in boundaries), boundaries
