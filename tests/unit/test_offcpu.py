"""Off-CPU time by boundary (analyzers/threads.py off_cpu) from the engine's maps."""
from jvmos.analyzers import threads as th


def test_syscall_names_from_the_engines_key():
    assert th.syscall_name(0) is None                 # not in a syscall
    assert th.syscall_name(1) == "read" and th.syscall_name(203) == "futex"
    assert th.syscall_name(1000) == "syscall 999"


def test_blocked_time_goes_to_its_boundary_and_preempted_apart():
    ns = {("7", "1", "voluntary"): 300, ("7", "203", "voluntary"): 1000,
          ("7", "203", "involuntary"): 50, ("7", "0", "voluntary"): 20,
          ("7", "0", "involuntary"): 5, ("7", "233", "voluntary"): 7,
          ("9", "1", "voluntary"): 999}
    n = {k: 1 for k in ns}
    n[("7", "203", "voluntary")] = 4
    off = th.off_cpu(ns, n, "7")
    assert off["total_ns"] == 1382 and off["blocked_ns"] == 1327 and off["preempted_ns"] == 55
    assert off["switches"] == 9
    b = off["by_boundary"]
    assert b["sync (futex, yield)"] == {"ns": 1000, "switches": 4}
    assert b["io (read/write on a socket, pipe or file)"]["ns"] == 300
    assert b[th.PREEMPTED]["ns"] == 55 and b[th.OUTSIDE_SYSCALL]["ns"] == 20
    assert b["poll (epoll, poll, select)"]["ns"] == 7          # epoll_wait is 232
    assert list(b)[0] == "sync (futex, yield)"                 # largest first
    assert off["by_syscall"]["futex"] == {"blocked_ns": 1000, "preempted_ns": 50, "switches": 5}
    assert th.off_cpu(ns, n, "8") is None
    tot = th.off_cpu_total({"7": off, "9": th.off_cpu(ns, n, "9"), "8": None})
    assert tot["total_ns"] == 1382 + 999 and tot["switches"] == 10
