"""Off-CPU time by boundary (analyzers/threads.py off_cpu) from the engine's maps."""
from jvmos.analyzers import threads as th


def test_syscall_names_from_the_engines_key():
    assert th.syscall_name(0) is None                 # not in a syscall
    assert th.syscall_name(1) == "read" and th.syscall_name(203) == "futex"
    assert th.syscall_name(220) == "restart_syscall"
    assert th.syscall_name(1000) == "syscall 999"


def test_blocked_time_goes_to_its_boundary_preempted_and_stopped_apart():
    ns = {("7", "1", "blocked"): 300, ("7", "203", "blocked"): 1000,
          ("7", "203", "preempted"): 50, ("7", "0", "blocked"): 20,
          ("7", "0", "preempted"): 5, ("7", "233", "blocked"): 7,
          ("7", "60", "stopped"): 40, ("9", "1", "blocked"): 999}
    n = {k: 1 for k in ns}
    n[("7", "203", "blocked")] = 4
    off = th.off_cpu(ns, n, "7")
    assert off["total_ns"] == 1422 and off["blocked_ns"] == 1327
    assert off["preempted_ns"] == 55 and off["stopped_ns"] == 40 and off["intervals"] == 10
    b = off["by_boundary"]
    assert b["sync: blocked in futex"] == {"ns": 1000, "intervals": 4}
    assert b["io: blocked in read/write (socket, pipe or file)"]["ns"] == 300
    assert b[th.PREEMPTED]["ns"] == 55 and b[th.OUTSIDE_SYSCALL]["ns"] == 20
    assert b[th.STOPPED]["ns"] == 40                          # whatever syscall it was in
    assert b["poll: blocked in epoll, poll or select"]["ns"] == 7   # epoll_wait is 232
    assert list(b)[0] == "sync: blocked in futex"                 # largest first
    assert sum(e["ns"] for e in b.values()) == off["total_ns"]
    assert off["by_syscall"]["futex"] == {"blocked_ns": 1000, "preempted_ns": 50,
                                          "stopped_ns": 0, "intervals": 5}
    assert th.off_cpu(ns, n, "8") is None
    tot = th.off_cpu_total({"7": off, "9": th.off_cpu(ns, n, "9"), "8": None})
    assert tot["total_ns"] == 1422 + 999 and tot["intervals"] == 11


def test_a_negative_java_residual_is_not_resolved_never_a_figure():
    from jvmos.experiments import threads as t
    s = {"categories": {"thread_create": {"layers": {"java": {
        "threads": 10, "jvm_ns": 1e5, "libc_ns": 1e5, "kernel_ns": 1e5}}},
        "thread_jvm": {"start_inclusive_raw_ns": 5e5, "start_probe_outside_window_ns": 0},
        "thread_wait": {}}, "totals": {}}
    r = t.layer_row("x", s, {"start_ns_all_rounds": 4e5})
    assert r["java_us"] is None and r["java_residual_us"] == -10.0
    assert "not resolved" in r["java_unresolved"] and "overhead_pct" not in r
    r = t.layer_row("x", s, {"start_ns_all_rounds": 6e5})
    assert r["java_us"] == 10.0 and r["overhead_pct"] > 0


def test_syscall_table_matches_the_installed_kernel_header():
    import re
    from pathlib import Path
    from jvmos.analyzers.syscalls_x86_64 import NAMES
    header = Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h")
    if not header.exists():
        import pytest
        pytest.skip("no x86-64 kernel header here")
    found = {int(n): name for name, n in
             re.findall(r"#define __NR_(\w+)\s+(\d+)", header.read_text())}
    assert len(found) > 300
    assert {n: NAMES.get(n) for n in found} == found


def test_every_boundary_names_a_real_syscall_and_rt_sigsuspend_is_a_signal_wait():
    t = th
    names = set(t.SYSCALLS_X86_64.values())
    for b, members in t.OFFCPU_BOUNDARY.items():
        assert set(members) <= names, (b, set(members) - names)
    # rt_sigsuspend (130) is where a shell's `wait` builtin blocks: named, not "syscall 130"
    assert t.syscall_name(131) == "rt_sigsuspend"
    assert t._BOUNDARY_OF["rt_sigsuspend"].startswith("signal")
    assert t._BOUNDARY_OF["restart_syscall"] == t.RESTARTED


def test_a_waiting_stack_is_named_by_its_innermost_libc_wrapper_then_its_jdk_frame():
    from jvmos.analyzers import stacks as st
    j = "_[j]"
    # HotSpot's Thread.sleep parks: the futex is the boundary, the call site says sleep
    sleep = ["Napper.main" + j, "Napper.nap" + j, "java/lang/Thread.sleep" + j,
             "__futex_abstimed_wait_common"]
    read = ["App.run" + j, "sun/nio/ch/SocketDispatcher.read0" + j, "__GI_read"]
    poll = ["App.run" + j, "sun/nio/ch/Net.poll" + j]                  # no native frame
    accept = ["App.serve" + j, "sun/nio/ch/Net.accept" + j, "__libc_accept",
              "do_syscall_64_[k]"]                                     # kernel frames skipped
    nanos = ["main", "__GI___clock_nanosleep"]
    gc = ["thread_native_entry", "__futex_abstimed_wait_common"]
    unknown = ["App.run" + j, "App.spin" + j]
    assert st.wait_syscall(sleep) == "futex" and st.wait_syscall(read) == "read"
    assert st.wait_syscall(poll) == "poll" and st.wait_syscall(accept) == "accept"
    assert st.wait_syscall(nanos) == "clock_nanosleep" and st.wait_syscall(unknown) is None
    # a JDK method whose name only begins like a wait's is not one (and never a KeyError)
    assert st.wait_syscall(["App.run" + j, "sun/nio/ch/Net.pollConnectNow" + j]) is None
    # every libc prefix is taken off: __GI___libc_read is read
    assert st.wait_syscall(["App.run" + j, "__GI___libc_read"]) == "read"
    assert st.wait_syscall(["App.run" + j, "__GI___libc_open"]) == "openat"
    w = st.attribute_waits([(sleep, 30), (gc, 60), (read, 8), (poll, 2), (accept, 1),
                            (unknown, 1)], 10_000_000)
    assert w["samples_total"] == 102
    futex = w["by_boundary"]["sync: blocked in futex"]
    assert futex["samples"] == 90 and futex["no_application_frame_samples"] == 60
    assert futex["top_call_sites"] == [["Napper.nap -> java/lang/Thread.sleep", 30]]
    assert abs(futex["share_pct"] - 100 * 90 / 102) < 1e-9
    assert w["by_boundary"]["io: blocked in read/write (socket, pipe or file)"]["samples"] == 8
    assert w["by_boundary"]["other or unknown"]["samples"] == 1
    assert list(w["by_boundary"])[0] == "sync: blocked in futex"       # most samples first
    assert "not a time" in w["basis"] and "10 ms" in w["basis"]
