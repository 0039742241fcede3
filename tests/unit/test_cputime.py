"""The CPU-clock id arithmetic of jvmos.cputime, and reading this process's own clock by pid."""
import os
import struct
import time

import pytest

from jvmos import cputime


def c_clockid(pid: int, clock: int) -> int:
    """MAKE_PROCESS_CPUCLOCK done the way C does it on a 32-bit clockid_t: ~pid as unsigned
    32 bits, shifted left 3 (dropping the bits that leave the word), OR clock, read as signed."""
    word = ((~pid & 0xFFFFFFFF) << 3 | clock) & 0xFFFFFFFF
    return struct.unpack("<i", struct.pack("<I", word))[0]


def test_clock_id_by_hand():
    # pid 1: ~1 = -2; -2 << 3 = -16; -16 | 2 = -14   (0xFFFFFFF2 as a 32-bit word)
    assert cputime.process_clock_id(1) == -14
    # pid 1000: ~1000 = -1001; * 8 = -8008; | 2 = -8006  (-8008 is a multiple of 8: bit 1 free)
    assert cputime.process_clock_id(1000) == -8006
    # the largest pid Linux allows (2^22 = 4194304): ~ = -4194305; * 8 = -33554440; | 2
    assert cputime.process_clock_id(4194304) == -33554438


@pytest.mark.parametrize("pid", [1, 2, 7, 1000, 32768, 4194304])
def test_clock_id_matches_the_c_macro(pid):
    assert cputime.process_clock_id(pid) == c_clockid(pid, 2)
    assert cputime.process_clock_id(pid) < 0
    assert cputime.process_clock_id(pid) & 7 == 2     # low bits: CPUCLOCK_SCHED, not per-thread


@pytest.mark.parametrize("bad", [0, -1, "12", 1.5])
def test_clock_id_refuses_what_is_not_a_pid(bad):
    with pytest.raises(ValueError):
        cputime.process_clock_id(bad)


def test_own_clock_read_by_pid_agrees_with_process_time():
    # this process's clock read through its pid is the one time.process_time_ns reads
    # (CLOCK_PROCESS_CPUTIME_ID): read between two readings of the latter, it lies between them
    a = time.process_time_ns()
    b = cputime.process_cpu_ns(os.getpid())
    c = time.process_time_ns()
    assert a <= b <= c


def test_a_pid_that_does_not_exist_is_said_gone():
    pid = int(open("/proc/sys/kernel/pid_max").read()) + 1    # beyond pid_max: never a process
    with pytest.raises(cputime.ProcessGone):
        cputime.process_cpu_ns(pid)
    with pytest.raises(cputime.ProcessGone):
        cputime.stat_cpu_ns(pid)


def test_overhead_totals_name_both_denominators():
    # 30 ms overhead, 1.2 s CPU, 2 s wall: 30/1200 = 2.5% of CPU, 30/2000 = 1.5% of wall
    t = cputime.overhead_totals(30e6, 2e9, {"cpu_ns": 1_200_000_000, "complete": True,
                                             "method": "m"})
    assert t["target_cpu_ns"] == 1_200_000_000
    assert t["guaranteed_overhead_pct_of_cpu"] == pytest.approx(2.5)
    assert t["guaranteed_overhead_pct_of_wall"] == pytest.approx(1.5)
    assert t["target_cpu_complete"] is True and t["target_cpu_method"] == "m"
    # no CPU used, or none read: no share, and never a division by zero
    for cpu in (0, None):
        t = cputime.overhead_totals(30e6, 2e9, {"cpu_ns": cpu, "complete": False, "method": "m"})
        assert t["guaranteed_overhead_pct_of_cpu"] is None
        assert t["target_cpu_complete"] is False


def test_launched_cpu_prefers_rusage_and_says_when_it_is_only_the_clock():
    # gate used 20 ms before tracing; rusage 820 ms at reaping: 800 ms during the recording
    r = cputime.launched_cpu(20_000_000, 700_000_000, 820_000_000)
    assert r["cpu_ns"] == 800_000_000 and r["complete"] and "rusage" in r["method"]
    # no rusage: the clock before reaping, 700 - 20 = 680 ms, children not included
    r = cputime.launched_cpu(20_000_000, 700_000_000, None)
    assert r["cpu_ns"] == 680_000_000 and not r["complete"] and "not included" in r["method"]
    assert cputime.launched_cpu(None, 700_000_000, 820_000_000)["cpu_ns"] is None
    assert cputime.launched_cpu(20_000_000, None, None)["cpu_ns"] is None


def test_report_line_gives_the_share_and_the_cpu_time():
    from jvmos.report import target_cpu_line
    t = cputime.overhead_totals(30e6, 2e9, {"cpu_ns": 1_200_000_000, "complete": True,
                                             "method": "m"})
    assert target_cpu_line(t) == ("  = 2.5% of the target's CPU time (1,200.0 ms CPU during the "
                                  "recording)")
    t = cputime.overhead_totals(30e6, 2e9, {"cpu_ns": 1_200_000_000, "complete": False,
                                             "method": "pid 9 went away"})
    assert target_cpu_line(t).endswith("recording; incomplete, a lower bound: pid 9 went away)")


def test_tomcat_split_takes_java_execution_from_the_bare_run():
    from jvmos.cputime import cpu_split
    from jvmos.experiments.server import recorded_cpu_text
    # bare 400 ms, recorded 500 ms, overhead 60 ms:
    # Java execution 400 - 60 = 340 ms; overhead 60/400 = 15%; probe effect +100 ms, 1.25x
    s = cpu_split(400e6, 500e6, 60e6)
    assert s["java_exec_ns"] == pytest.approx(340e6)
    assert s["overhead_pct_of_bare_cpu"] == pytest.approx(15.0)
    assert s["probe_effect_cpu_ns"] == pytest.approx(100e6)
    assert s["recorded_over_bare_cpu"] == pytest.approx(1.25)
    assert s["overhead_exceeds_bare_cpu"] is False
    assert recorded_cpu_text({"server_cpu_ns": 500e6, **s}) == "500.0 (+100.0, 1.25x)"
    # overhead 450 ms > bare 400 ms: not clamped, -50 ms, flagged
    s = cpu_split(400e6, 500e6, 450e6)
    assert s["java_exec_ns"] == pytest.approx(-50e6) and s["overhead_exceeds_bare_cpu"]
    # no bare CPU: no split at all rather than a share of nothing
    s = cpu_split(0, 500e6, 60e6)
    assert s["java_exec_ns"] is None and s["overhead_pct_of_bare_cpu"] is None


def test_memory_cpu_figures_by_hand():
    from jvmos.experiments.memory import cpu_figures
    # bare 2,000 ms CPU, recorded 2,600 ms, libc + kernel 50 ms: 2.5%, +600 ms, 1.3x
    f = cpu_figures(2_000_000_000, 2_600_000_000, 50e6)
    assert f["overhead_pct_of_bare_cpu"] == pytest.approx(2.5)
    assert f["probe_effect_cpu_ns"] == 600_000_000
    assert f["recorded_over_bare_cpu"] == pytest.approx(1.3)
    f = cpu_figures(2_000_000_000, None, 50e6)
    assert f["probe_effect_cpu_ns"] is None and f["recorded_over_bare_cpu"] is None


def test_run_measured_keeps_the_kernel_mode_part_apart():
    """dd copying byte by byte between /dev/zero and /dev/null spends much of its CPU in the
    kernel, awk summing numbers almost none: the rusage's system part is never above the
    total, and its share is far larger for dd. (The split is the kernel's tick-sampled one:
    dd's share was 0.50 to 0.63 here, 0.50 once on a loaded CI machine with a short run, so
    the runs are long and the test compares the two rather than one with a fixed half.)"""
    from jvmos import cputime
    r = cputime.run_measured(["dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=1500000"],
                             timeout=120)
    u = cputime.run_measured(["awk", "BEGIN { for (i = 0; i < 3000000; i++) s += i }"],
                             timeout=120)
    assert r["returncode"] == 0 and u["returncode"] == 0
    assert 0 < r["sys_ns"] <= r["cpu_ns"] and 0 <= u["sys_ns"] <= u["cpu_ns"]
    dd, awk = r["sys_ns"] / r["cpu_ns"], u["sys_ns"] / u["cpu_ns"]
    assert dd > 0.35 and dd > awk + 0.25, (dd, awk)
