"""CPU time of another process at nanosecond resolution, threads that already exited included.

Linux gives every process a CPU clock that clock_gettime can read from outside: its id encodes
the pid (see the kernel's posix-cpu-timers, MAKE_PROCESS_CPUCLOCK): ((~pid) << 3) | clock,
where clock 2 (CPUCLOCK_SCHED) is the scheduler's sum_exec_runtime of the whole thread group,
live threads plus those that have exited (the kernel folds an exiting thread's runtime into its
signal struct). It is the figure /proc/PID/stat's utime+stime gives in clock ticks (10 ms
here), read in ns. Any process may read it; it stays readable while the process is a zombie
and fails with EINVAL once it is reaped.

A process-wide clock does not include the process's children. For a tree (a launched command
that may be a wrapper around the JVM), `TreeCpu` sums the clocks of the root and of its
descendants, from the first reading (from zero for a process born after it) to the last one: a
process that is reaped between two readings loses the CPU it used after the last one, and the
figure says so (`complete` false); one born and reaped between two polls is not seen at all. For the launched child itself, `reap` waits with wait4, whose rusage
covers the child's threads and the children it reaped (microsecond resolution).
"""
import os
import threading
import time
from typing import Dict, Optional, Tuple

CPUCLOCK_SCHED = 2   # the scheduler's runtime (not the tick-sampled PROF/VIRT clocks)


class ProcessGone(Exception):
    """The process's clock can no longer be read (it was reaped, or never existed)."""


def process_clock_id(pid: int) -> int:
    """clock_gettime id of the process-wide CPU clock of pid.

    The kernel builds it in a 32-bit clockid_t: ~pid is negative in two's complement, and so is
    the id. Python's ~ on a non-negative int gives the same negative value (-(pid + 1)), the
    shift multiplies it by 8, and OR-ing 2 sets a bit that the shift left at zero, so the int
    is the C value read as signed. pid 0 would mean "the caller" to the kernel: refused here."""
    if not isinstance(pid, int) or pid <= 0:
        raise ValueError(f"not a pid: {pid!r}")
    return ((~pid) << 3) | CPUCLOCK_SCHED


def process_cpu_ns(pid: int) -> int:
    """CPU time of pid (all its threads, live and exited), ns. ProcessGone when it is reaped."""
    try:
        return time.clock_gettime_ns(process_clock_id(pid))
    except OSError as e:   # EINVAL: no such process (or reaped); ESRCH on some kernels
        raise ProcessGone(f"pid {pid}: {e.strerror}") from None


def cpu_or_none(pid: int) -> Optional[int]:
    """process_cpu_ns, or None when the process is gone."""
    try:
        return process_cpu_ns(pid)
    except ProcessGone:
        return None


def _stat_ticks(pid: int) -> Tuple[int, int]:
    """(utime, stime) of /proc/PID/stat, in clock ticks (whole process, exited threads
    included)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except (FileNotFoundError, ProcessLookupError):
        raise ProcessGone(f"pid {pid}: no /proc entry") from None
    fields = s[s.rindex(")") + 2:].split()
    return int(fields[11]), int(fields[12])


def stat_cpu_ns(pid: int) -> int:
    """utime + stime of /proc/PID/stat (whole process, exited threads included), converted
    from clock ticks: a cross-check of process_cpu_ns with a tick's resolution."""
    return sum(_stat_ticks(pid)) * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def stat_sys_ns(pid: int) -> int:
    """stime of /proc/PID/stat (whole process, exited threads included): the CPU time its
    threads spent in the kernel (where a uprobe's trap and its BPF program run), with a
    clock tick's resolution."""
    return _stat_ticks(pid)[1] * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


TICK_NS = 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def reaped_children_cpu_ns(pid: int) -> Optional[int]:
    """cutime + cstime of /proc/PID/stat: the CPU time of the children pid has waited for (and
    of theirs), in clock ticks converted to ns; None when pid is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = s[s.rindex(")") + 2:].split()
    return (int(fields[13]) + int(fields[14])) * TICK_NS


def schedstat_live_threads_ns(pid: int) -> int:
    """Sum of /proc/PID/task/*/schedstat's run time: the live threads only (a thread that has
    exited is gone from task/), so at most process_cpu_ns. Used to cross-check."""
    total = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        raise ProcessGone(f"pid {pid}: no /proc entry") from None
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            continue
    return total


def children_of(pids) -> set:
    """Pids whose parent is in pids (one scan of /proc)."""
    want = set(pids)
    out = set()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        ppid = int(s[s.rindex(")") + 2:].split()[1])
        if ppid in want:
            out.add(int(d))
    return out


class TreeCpu:
    """CPU time used by a process (tree=False) or by it and its descendants (tree=True) between
    start() and stop(), polled every `interval` s so that a process that goes away keeps its
    last reading. result() says which readings were lost."""

    def __init__(self, root: int, tree: bool = False, interval: float = 0.1):
        self.root, self.tree, self.interval = root, tree, interval
        self.first: Dict[int, int] = {}
        self.last: Dict[int, int] = {}
        self.gone: set = set()
        self.root_missing_at_start = False
        self._started = False
        self.first_reaped: Dict[int, int] = {}
        self.last_reaped: Dict[int, int] = {}
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()

    def _pids(self) -> set:
        live = {p for p in self.last if p not in self.gone}
        live.add(self.root)
        if not self.tree:
            return {self.root}
        frontier = set(live)
        while frontier:   # descendants born since the last poll, and theirs
            new = children_of(frontier) - live
            live |= new
            frontier = new
        return live

    def poll(self):
        with self._lock:
            for p in self._pids():
                if p in self.gone:
                    continue
                try:
                    v = process_cpu_ns(p)
                except ProcessGone:
                    if p in self.last:
                        self.gone.add(p)
                    elif p == self.root:
                        self.root_missing_at_start = True
                    continue
                # a process found after the first poll was born (or exec'd in a child born)
                # after it: all its CPU time is within the watch
                self.first.setdefault(p, v if not self._started else 0)
                self.last[p] = v
                c = reaped_children_cpu_ns(p)
                if c is not None:
                    self.first_reaped.setdefault(p, c if not self._started else 0)
                    self.last_reaped[p] = c

    def start(self, background: bool = True) -> "TreeCpu":
        self.poll()
        self._started = True
        if background:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def _run(self):
        while not self._stop.wait(self.interval):
            self.poll()

    def stop(self) -> dict:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.poll()
        return self.result()

    def result(self) -> dict:
        with self._lock:
            per = {p: self.last[p] - self.first[p] for p in self.last}
            reaped = sum(self.last_reaped[p] - self.first_reaped[p] for p in self.last_reaped)
            # children that the tree's processes reaped during the watch: a child the polls
            # saw is in cpu_ns up to its last reading, one they did not see is not at all
            seen_gone = sum(per[p] for p in self.gone if p != self.root)
            unseen = reaped > seen_gone + TICK_NS * (len(self.gone) + 1)
            return {"cpu_ns": sum(per.values()) if per else None,
                    "reaped_children_cpu_ns": reaped,
                    "processes": len(per),
                    "gone_pids": sorted(self.gone),
                    # a process reaped between polls lost up to one interval of CPU
                    "complete": (not self.gone and not self.root_missing_at_start
                                 and not unseen),
                    "method": ("clock_gettime of each process's CPU clock (CPUCLOCK_SCHED, "
                               "ns; threads that exited included)"
                               + (", summed over the root and its descendants (a descendant "
                                  "born and reaped between two polls is missed)" if self.tree
                                  else ", the target process only (not its children)")
                               + (f"; pids {', '.join(map(str, sorted(self.gone)))} went away "
                                  "and keep their last reading (polled every "
                                  f"{self.interval:g} s)" if self.gone else "")
                               + ("; the root could not be read when tracing began"
                                  if self.root_missing_at_start else "")
                               + (f"; processes of the tree reaped children that used "
                                  f"{reaped / 1e6:,.0f} ms of CPU (cutime + cstime, in ticks), "
                                  "more than the polls saw of them: that CPU is not counted"
                                  if unseen else ""))}


def exited(pid: int) -> bool:
    """Has the child pid exited? Does not reap it (WNOWAIT): its CPU clock stays readable."""
    try:
        r = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return r is not None


def wait_exited(pid: int, timeout: Optional[float] = None) -> bool:
    """Wait (without reaping) until the child pid has exited; False on timeout."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while not exited(pid):
        if deadline is not None and time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def reap(child) -> Tuple[int, Optional[int], Optional[int]]:
    """Reap a subprocess.Popen child with wait4. Returns (exit code, its CPU clock read just
    before reaping in ns or None, the rusage CPU time (user + system) in ns with microsecond
    resolution: the child's threads and the children it reaped itself). If something else
    already reaped it, the two CPU figures are None."""
    if child.returncode is not None:
        return child.returncode, None, None
    wait_exited(child.pid)
    try:
        clock = process_cpu_ns(child.pid)
    except ProcessGone:
        clock = None
    try:
        _, status, ru = os.wait4(child.pid, 0)
    except ChildProcessError:
        return child.wait(), clock, None
    child.returncode = os.waitstatus_to_exitcode(status)
    us = round(ru.ru_utime * 1e6) + round(ru.ru_stime * 1e6)   # the kernel's timevals, in us
    # its kernel-mode part, kept on the child for those who want it apart (rusage_sys_ns)
    child.jvmos_rusage_sys_ns = round(ru.ru_stime * 1e6) * 1000
    return child.returncode, clock, us * 1000


def rusage_sys_ns(child) -> Optional[int]:
    """The system (kernel-mode) part of a child's rusage, once reap() has reaped it (its
    threads and the children it reaped; us resolution, in ns); None before or without."""
    return getattr(child, "jvmos_rusage_sys_ns", None)


def launched_cpu(clock_at_start: Optional[int], clock_at_end: Optional[int],
                 rusage_ns: Optional[int]) -> dict:
    """CPU time of a launched command during the recording: its rusage at reaping (threads and
    reaped children, us resolution) minus its CPU clock when tracing began (the gate's start-up,
    before the command ran). Without rusage, its own clock read just before reaping (ns, its
    children not included)."""
    if clock_at_start is None:
        return {"cpu_ns": None, "complete": False,
                "method": "the launched process's CPU clock could not be read when tracing began"}
    if rusage_ns is not None:
        return {"cpu_ns": rusage_ns - clock_at_start, "complete": True,
                "method": "wait4 rusage of the launched command (user + system of its threads "
                          "and of the children it reaped; us resolution) minus its CPU clock "
                          "when tracing began"}
    if clock_at_end is not None:
        return {"cpu_ns": clock_at_end - clock_at_start, "complete": False,
                "method": "the launched process's CPU clock (ns) from when tracing began to "
                          "just before it was reaped; its children are not included"}
    return {"cpu_ns": None, "complete": False,
            "method": "the launched process was reaped before its CPU time could be read"}


def overhead_totals(guaranteed_ns: Optional[float], wall_ns: Optional[float], cpu: dict,
                    probe_ns: Optional[float] = None) -> dict:
    """Summary totals that put the guaranteed overhead beside the target's CPU time during the
    recording (and, named as such, beside the wall time), and the probes' estimated cost
    beside the same CPU time: the probes run on the traced threads, so their cost is CPU time,
    and the slowdown they make is probe / (recorded CPU - probe), an estimate."""
    c = cpu.get("cpu_ns")
    base = c - probe_ns if c is not None and probe_ns is not None else None
    if base is None:
        basis = "unknown: no probe cost or no CPU time of the target"
    elif base <= 0:
        basis = "unknown: the estimated probe cost exceeds the target's CPU time"
        base = None
    else:
        basis = ("estimated: probe_overhead_ns / (target_cpu_ns - probe_overhead_ns), the "
                 "traced processes' CPU time"
                 + ("" if cpu.get("complete") else
                    "; target_cpu_ns is a lower bound, so this is an upper bound"))
    return {"target_cpu_ns": c,
            # its kernel-mode part, where a launched command's rusage gives it (None otherwise)
            "target_sys_ns": cpu.get("sys_ns"),
            "cpu_uninstrumented_estimate_ns": base,
            "slowdown_pct": None if base is None else 100.0 * probe_ns / base,
            "slowdown_basis": basis,
            "target_cpu_method": cpu.get("method"),
            # false: a process was reaped between readings (its last reading kept) or a
            # reading failed; the figure is then a lower bound
            "target_cpu_complete": bool(cpu.get("complete")),
            "guaranteed_overhead_pct_of_cpu": (100.0 * guaranteed_ns / c
                                               if c and guaranteed_ns is not None else None),
            "guaranteed_overhead_pct_of_wall": (100.0 * guaranteed_ns / wall_ns
                                                if wall_ns and guaranteed_ns is not None else None)}


def cpu_split(bare_cpu_ns: Optional[float], recorded_cpu_ns: Optional[float],
              overhead_ns: float) -> dict:
    """A load's CPU time split into the guaranteed overhead and Java execution, on the bare
    run (which the probes did not inflate): Java execution = bare CPU - overhead, overhead % =
    overhead / bare CPU. The recorded run's CPU is the probe effect's figure: recorded - bare,
    and recorded / bare. An overhead larger than the bare CPU time is not clamped: Java
    execution is then negative and `overhead_exceeds_bare_cpu` says so."""
    ok = bool(bare_cpu_ns)
    out = {"java_exec_ns": bare_cpu_ns - overhead_ns if ok else None,
           "overhead_pct_of_bare_cpu": 100.0 * overhead_ns / bare_cpu_ns if ok else None,
           "overhead_exceeds_bare_cpu": overhead_ns > bare_cpu_ns if ok else None,
           "probe_effect_cpu_ns": None, "recorded_over_bare_cpu": None}
    if ok and recorded_cpu_ns is not None:
        out["probe_effect_cpu_ns"] = recorded_cpu_ns - bare_cpu_ns
        out["recorded_over_bare_cpu"] = recorded_cpu_ns / bare_cpu_ns
    return out


def run_measured(cmd, timeout: Optional[float] = None) -> dict:
    """Run cmd to its end (stdout and stderr captured) and measure it: wall time (ns) and CPU
    time from wait4's rusage (user + system of its threads and of the children it reaped;
    microsecond resolution, in ns). subprocess.TimeoutExpired after killing it on timeout."""
    import subprocess
    import tempfile
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic_ns()
        child = subprocess.Popen(cmd, stdout=out, stderr=err)
        if not wait_exited(child.pid, timeout):
            child.kill()
            child.wait()
            raise subprocess.TimeoutExpired(cmd, timeout)
        wall = time.monotonic_ns() - t0
        code, _, cpu = reap(child)
        out.seek(0)
        err.seek(0)
        return {"returncode": code, "stdout": out.read().decode(errors="replace"),
                "stderr": err.read().decode(errors="replace"), "wall_ns": wall, "cpu_ns": cpu,
                "sys_ns": rusage_sys_ns(child)}
