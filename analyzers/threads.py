"""The threads resource (probes/threads.bpf.c; paper section 3.2): native thread creation and
exit split into libc, kernel and the JVM's part (categories thread_create, thread_jvm), the
waiting around it (thread_wait), futex synchronization (sync), run-queue wait (runq) and the
context switches of the traced threads. Times are corrected per hit (correction.correct); the layer has no
calibrated windows of its own and borrows the io layer's, naming them in
`probe_window_source`.
"""
from typing import Dict, List, Optional, Tuple

from jvmos.analyzers.syscalls_x86_64 import NAMES as _SYSCALL_NAMES
from jvmos.analyzers.correction import (NESTED_SOURCE, PAIR_SOURCE, SYS_SOURCE, add, combine,
                                       correct, correct_by_window, get, mul, probe_costs,
                                       sub, sum_known)

# probe kind -> (what one hit is, cost key in --mode time, cost key in --mode count): the
# probes of this layer, as analyzers/overhead.py charges them (cost keys name entries of the
# platform file's "engine_probes" section; "probes" in files made before bpftrace retired)
KINDS = {
    "threads:sched_switch": ("a switch out of a traced thread: the threads layer's sched_switch program",
                             "sched_switch_threads_hit", "sched_switch_threads_hit"),
    "threads:futex_pair": ("a futex syscall: a sys_enter/sys_exit tracepoint pair",
                           "futex_threads_hit", "futex_threads_hit"),
    "threads:span_syscall": ("mmap, mprotect, madvise, clone, rseq, ... (12 syscalls): "
                             "a sys_enter/sys_exit tracepoint pair",
                             "span_syscall_threads_hit", "span_syscall_threads_hit"),
    "threads:clone_count": ("the clone tracepoints' extra work (the count at entry, the mark of "
                            "a Java thread at exit): two per clone",
                            "tracepoint", "tracepoint"),
    "threads:uprobe": ("entry of JVM_StartThread, pthread_create, thread_native_entry or "
                       "JavaThread::exit", "uprobe", "uprobe"),
    "threads:uretprobe": ("return of one of those four functions", "uretprobe", "uretprobe"),
    "threads:sched_wakeup_new": ("a new task woken by a traced thread", "tracepoint",
                                 "tracepoint"),
    "threads:sched_wakeup": ("a wakeup of a traced thread (run-queue wait, --mode time)",
                             "tracepoint", "tracepoint"),
    "threads:sys_enter_exit": ("a traced thread's exit syscall", "tracepoint", "tracepoint"),
    # --scope process: libc's functions instead of the syscall tracepoints
    "threads:span_libc": ("clone3, clone, mmap, mprotect, madvise, ... (libc's functions, "
                          "--mode time): an entry+return uprobe pair",
                          "span_libc_threads_hit", "span_libc_threads_hit"),
    "threads:futex_libc": ("a futex wait in glibc's function (condition variable, semaphore, "
                           "contended mutex): an entry+return uprobe pair",
                           "futex_libc_threads_hit", "futex_libc_threads_hit"),
    "threads:clone_libc": ("clone3 or clone, --mode count: an entry uprobe (a count)",
                           "uprobe", "uprobe"),
    "threads:sched_process_exit": ("a traced thread's exit, seen at sched_process_exit",
                                   "tracepoint", "tracepoint"),
}


def probe_hits(raw, scope: str) -> List[Tuple[str, Dict[str, int]]]:
    """[(kind, {pid: hits})] of this layer's probes, from the maps that count their events.
    At --scope process the futex calls are libc uprobe pairs, and a clone is an entry uprobe
    (its return, in --mode time, is counted as a threads:span_libc hit by the program)."""
    sum_ = raw.sum_by_pid
    clones = sum_("calls", lambda k: k[0] == "thread_create")
    if scope == "process":
        timed = {p for (p, kind), n in raw.keyed("hits").items()
                 if kind == "threads:span_libc" and int(n)}
        own = [("threads:futex_libc", sum_("ncalls", lambda k: k[0] == "sync")),
               # in --mode time the clone's pair is counted whole by its return program
               ("threads:clone_libc", {p: n for p, n in clones.items() if p not in timed})]
    else:
        own = [("threads:futex_pair", sum_("ncalls", lambda k: k[0] == "sync")),
               ("threads:clone_count", {p: 2 * n for p, n in clones.items()})]
    return [("threads:sched_switch", sum_("csw", lambda k: True))] + own + [
            ("threads:uprobe", sum_("ncalls", lambda k: (k[0], k[1]) == ("thread_jvm", "start")
                                    or (k[0] == "thread_create"
                                        and k[1].startswith("pthread_create"))))]


THREAD_LABELS = ("java", "internal")


# count mode drops the return probes that close the JVM and pthread_create spans
COUNT_MODE_THREADS = ("--mode count: the return probes that close the JVM and pthread_create "
                      "spans are not attached, so this time is partial (calls are exact; use "
                      "--mode time); ")


def _layers(parts: Dict[str, dict], tc: dict) -> dict:
    """Per thread label (java, internal): its threads and the libc, kernel and JVM layers'
    corrected times, each the sum of its known parts."""
    def layer_sum(names):
        return sum_known(parts[n]["time_ns"] for n in names if n in parts)

    layers = {}
    for lab in THREAD_LABELS:
        layers[lab] = {
            "threads": get(tc, f"pthread_create {lab}"),
            "libc_ns": layer_sum([f"libc create {lab}", f"libc start {lab}", f"libc exit {lab}"]),
            "kernel_ns": layer_sum([f"kernel in create {lab}", f"kernel in start/exit {lab}",
                                    f"kernel exit {lab}"]
                                   + (["kernel in jvm start java"] if lab == "java" else [])),
            "jvm_ns": layer_sum((["jvm start java"] if lab == "java" else [])
                                + [f"jvm exit {lab}"]),
        }
    return layers


def _waits_and_sync(tw: dict, sy: dict, rq: dict, c: dict, sys_source: str = SYS_SOURCE,
                    scope: str = "host") -> dict:
    """thread_wait and runq (waiting, not corrected) and sync (futex spans at --scope host,
    glibc's futex waits at --scope process, each corrected with the window of its probe) of
    one process."""
    out = {}
    if tw:
        out["thread_wait"] = {
            "calls": get(tw, "first run delay"), "bytes": None,
            "time_ns": sum(v.get("time_ns", 0) for v in tw.values()),
            "method": "measured",
            "parts": {k: {"calls": v.get("calls", 0), "time_ns": v.get("time_ns", 0)}
                      for k, v in sorted(tw.items())},
            "basis": "waiting, not work: new thread's delay to first run, futex waits and "
                     "off-CPU time inside thread creation spans; not corrected (the probes' "
                     "cost is not part of a wait)"}
    if sy:
        sparts = {}
        for k, v in sorted(sy.items()):
            sparts[k] = correct_by_window(v.get("time_ns", 0), v.get("calls", 0), c["sys_window"],
                                     c["sys_ci"], sys_source)
            sparts[k]["calls"] = v.get("calls", 0)
        cat = {"calls": sum(p["calls"] for p in sparts.values()), "bytes": None}
        cat.update(combine(sparts.values()))
        cat.update({
            "method": "measured", "probe_window_source": sys_source,
            # --scope process sees no wake: unknown, never 0
            "wait_calls": get(sy, "futex wait"),
            "wake_calls": None if scope == "process" else get(sy, "futex wake"),
            "parts": sparts,
            "basis": ("glibc's futex waits of the traced threads (condition variables, "
                      "semaphores, joins, its internal locks), on libc's functions (--scope "
                      "process: no wake, no contended pthread mutex and no syscall(2) futex "
                      "is seen: the manifest's blind_spots); time includes blocking"
                      if scope == "process" else
                      "futex syscalls of the traced threads, time includes blocking")})
        out["sync"] = cat
    if rq:
        out["runq"] = {
            "calls": sum(v.get("calls", 0) for v in rq.values()), "bytes": None,
            "time_ns": sum(v.get("time_ns", 0) for v in rq.values()),
            "method": "measured",
            "parts": {k: {"calls": v.get("calls", 0), "time_ns": v.get("time_ns", 0)}
                      for k, v in sorted(rq.items())},
            "lower_bound": True,
            "basis": "waiting, not work: a traced thread runnable (woken after blocking, or "
                     "preempted) until its next switch-in; calls = waits seen, a lower bound "
                     "(a thread's waits count from its first switch-out in the recording); "
                     "not corrected (a wait is not the probes' cost, though the probes on the "
                     "running threads lengthen it)"}
    return out


def _create_and_jvm(parts: Dict[str, dict], tc: dict, tj: dict, incl_ns: int,
                    start_outside_ns, scope: str) -> dict:
    """thread_create (the native parts: libc and kernel) and thread_jvm (the JVM's parts)
    of one process, each the sum of its corrected parts."""
    out = {}
    window_note = ("each part names the calibrated window it borrowed (probe_window_source); "
                   "the threads layer has no window of its own")
    native_names = [n for n in parts if not n.startswith("jvm ")]
    if tc:
        cat = {"calls": get(tc, "pthread_create java") + get(tc, "pthread_create internal"),
               "bytes": None}
        cat.update(combine(parts[n] for n in native_names))
        cat.update({
            "method": "measured", "probe_window_source": window_note,
            "clone_calls": sum(v["calls"] for k, v in tc.items() if k in ("clone", "clone3")),
            "abandoned_start_spans": get(tc, "libc start abandoned"),
            "layers": _layers(parts, tc),
            "parts": {n: parts[n] for n in native_names},
            "basis": "libc: pthread_create, start_thread before thread_native_entry and after "
                     "it returns; kernel: "
                     + ("clone3, clone and mmap inside those spans (libc's functions; the "
                        "other syscalls there count as libc: the manifest's blind_spots) and "
                        "exit, from sched_process_exit"
                        if scope == "process" else "syscalls inside those spans and exit")
                     + " to the last switch-out; exclusive of nested spans, syscalls and "
                     "off-CPU time; minus hits x calibrated probe windows"})
        out["thread_create"] = cat
    if tj:
        jnames = [n for n in parts if n.startswith("jvm ")]
        cat = {"calls": get(tj, "start"), "bytes": None}
        cat.update(combine(parts[n] for n in jnames))
        cat.update({
            "method": "measured", "probe_window_source": window_note,
            "start_inclusive_raw_ns": incl_ns,
            "start_probe_outside_window_ns": start_outside_ns,
            "parts": {n: parts[n] for n in jnames}})
        out["thread_jvm"] = cat
    return out


def categories(fns: dict, incl_ns: int, probes: Optional[dict],
               mode: str = "time", scope: str = "host") -> dict:
    """The threads layer's categories of one process. At --scope process the syscalls inside
    a span and the futex calls were timed by libc's uprobe pairs, not the syscall tracepoints:
    their times are corrected with the symbol pair's window instead of the tracepoint's."""
    c = probe_costs(probes)
    if scope == "process":
        c = dict(c, sys_window=c["pair_window"], sys_ci=c["pair_ci"], sys_hit=c["pair_hit"])
    sys_source = PAIR_SOURCE if scope == "process" else SYS_SOURCE
    tc, tj = fns.get("thread_create", {}), fns.get("thread_jvm", {})
    tw, sy = fns.get("thread_wait", {}), fns.get("sync", {})
    rq = fns.get("runq", {})
    if not (tc or tj or tw or sy or rq):
        return {}
    out = {}
    nested_sys = sub(c["sys_hit"], c["sys_window"])
    nested_pair = sub(c["pair_hit"], c["pair_window"])
    # validate_probes() holds uprobe <= pair hit, so this is never negative
    uret_tail = None if sub(c["pair_hit"], c["uprobe"]) is None \
        else (c["pair_hit"] - c["uprobe"]) / 2

    parts: Dict[str, dict] = {}

    def part(name, raw_what, per_call, source, extra=0.0, calls_what=None, window=None,
             ci=None):
        src = tc if not name.startswith("jvm") else tj
        raw = get(src, raw_what, "time_ns")
        calls = get(src, calls_what or raw_what)
        p = correct(raw, calls, add(mul(calls, per_call), extra), window_ns=window,
                    window_ci=ci, source=source)
        p["calls"] = calls
        parts[name] = p
        return p

    # allocator probes (mem layer) nested in the spans: their time is left out in the kernel,
    # the part of their cost outside their own window is taken out here
    na = fns.get("thread_nested_alloc", {})
    creates = {lab: get(tc, f"pthread_create {lab}") for lab in THREAD_LABELS}
    n_creates = sum(creates.values())
    share_of = {lab: (creates[lab] / n_creates if n_creates else 0.0) for lab in THREAD_LABELS}
    for lab in THREAD_LABELS:
        k_create = get(tc, f"kernel in create {lab}")
        alloc = get(na, "libc create") * share_of[lab]
        part(f"libc create {lab}", f"libc create {lab}", c["pair_window"],
             PAIR_SOURCE + NESTED_SOURCE,
             extra=add(mul(k_create, nested_sys), mul(alloc, nested_pair)),
             calls_what=f"pthread_create {lab}", window=c["pair_window"], ci=c["pair_ci"])
        part(f"kernel in create {lab}", f"kernel in create {lab}", c["sys_window"], sys_source,
             window=c["sys_window"], ci=c["sys_ci"])
        part(f"kernel in start/exit {lab}", f"kernel in start/exit {lab}", c["sys_window"],
             sys_source, window=c["sys_window"], ci=c["sys_ci"])
        part(f"kernel exit {lab}", f"kernel exit {lab}", 0.0,
             "none: the span begins at a tracepoint and ends at a switch-out, no probe window")
        # the start-up span ends at an entry uprobe, part of which precedes its clock read;
        # the exit span begins in a uretprobe, part of which follows it
        part(f"libc start {lab}", f"libc start {lab}", mul(0.5, c["uprobe"]),
             "uprobe / 2 (the calibrated bare entry uprobe, half taken as before its clock read)")
        part(f"libc exit {lab}", f"libc exit {lab}", uret_tail,
             "(jni_copy_time_hit - uprobe) / 2 (the uretprobe's share of the borrowed pair "
             "cost, half taken as after its clock read)")
        part(f"jvm exit {lab}", f"exit {lab}", c["pair_window"], PAIR_SOURCE,
             window=c["pair_window"], ci=c["pair_ci"])
        # probes nested in start/exit spans: share their cost out by raw time
        nested = add(mul(get(tc, f"kernel in start/exit {lab}"), nested_sys),
                      mul(get(na, "start/exit") * share_of[lab], nested_pair))
        spans = [parts[f"libc start {lab}"], parts[f"libc exit {lab}"], parts[f"jvm exit {lab}"]]
        total_raw = sum(p["time_raw_ns"] for p in spans)
        if total_raw and nested != 0:
            for p in spans:
                share = mul(p["time_raw_ns"] / total_raw, nested)
                src = p["probe_window_source"] + NESTED_SOURCE + " (shared out by raw time)"
                p.update(correct(p["time_raw_ns"], p["time_hits"],
                                 add(p["correction_ns"], share),
                                 window_ns=p.get("probe_window_ns"),
                                 window_ci=c["pair_ci"] if "probe_window_ns" in p else None,
                                 source=src))
    jstart = get(tj, "start")
    part("jvm start java", "start", c["pair_window"], PAIR_SOURCE + NESTED_SOURCE,
         extra=add(mul(get(tc, "pthread_create java") + get(na, "jvm start"), nested_pair),
                    mul(get(tc, "kernel in jvm start java")
                         + get(tw, "futex in JVM_StartThread"), nested_sys)),
         window=c["pair_window"], ci=c["pair_ci"])
    part("kernel in jvm start java", "kernel in jvm start java", c["sys_window"], sys_source,
         window=c["sys_window"], ci=c["sys_ci"])

    out.update(_create_and_jvm(parts, tc, tj, incl_ns, mul(jstart, nested_pair), scope))
    out.update(_waits_and_sync(tw, sy, rq, c, sys_source, scope))
    if mode == "count":
        for name in ("thread_create", "thread_jvm"):
            if name in out:
                out[name]["time_partial"] = True
                out[name]["basis"] = COUNT_MODE_THREADS + out[name].get("basis", "")
    return out


def context_switches(csw: Dict[tuple, int], pid: str, top: int = 10) -> Optional[dict]:
    per = {}
    for (p, tid, kind), n in csw.items():
        if p != pid:
            continue
        per.setdefault(tid, {"voluntary": 0, "involuntary": 0})[kind] += int(n)
    if not per:
        return None
    busiest = sorted(per.items(), key=lambda kv: -(kv[1]["voluntary"] + kv[1]["involuntary"]))
    return {"voluntary": sum(v["voluntary"] for v in per.values()),
            "involuntary": sum(v["involuntary"] for v in per.values()),
            "threads": len(per),
            "busiest_threads": {tid: v for tid, v in busiest[:top]}}


# ---------------------------------------------------------------- off-CPU time (issue 25)

# x86-64 syscall numbers (every one: analyzers/syscalls_x86_64.py); the boundary of each one a
# JVM waits in below, any other's boundary is "other syscall"
SYSCALLS_X86_64 = _SYSCALL_NAMES
OFFCPU_BOUNDARY = {
    "io: blocked in read/write (socket, pipe or file)": (
        "read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev",
        "preadv2", "pwritev2", "sendto", "recvfrom", "sendmsg", "recvmsg", "recvmmsg",
        "sendmmsg", "sendfile", "splice", "copy_file_range"),
    "sync: blocked in futex": ("futex", "futex_wait", "futex_waitv", "futex_requeue"),
    "link: blocked in accept or connect": ("accept", "accept4", "connect", "shutdown"),
    "file: blocked in open, close, sync, lock or stat": (
        "open", "openat", "openat2", "creat", "close", "fsync", "fdatasync", "msync", "fcntl", "flock",
        "ftruncate", "fallocate", "stat", "fstat", "lstat", "newfstatat", "statx", "getdents64"),
    "poll: blocked in epoll, poll or select": (
        "epoll_wait", "epoll_wait_old", "epoll_pwait", "epoll_pwait2", "poll", "ppoll",
        "select", "pselect6"),
    "sleep": ("nanosleep", "clock_nanosleep"),
    "memory: blocked in mmap, munmap, ...": ("mmap", "munmap", "mprotect", "madvise", "brk"),
    "threads and processes: blocked in clone, fork, exec, exit, wait": (
        "clone", "clone3", "fork", "vfork", "execve", "execveat", "exit", "exit_group",
        "wait4", "waitid"),
    "signal: waiting for a signal": ("rt_sigsuspend", "pause", "rt_sigtimedwait"),
    "a restarted wait (restart_syscall: a sleep, poll or futex wait resumed after a stop or "
    "a signal)": ("restart_syscall",),
}
RESTARTED = next(b for b, names in OFFCPU_BOUNDARY.items() if names == ("restart_syscall",))
_BOUNDARY_OF = {name: b for b, names in OFFCPU_BOUNDARY.items() for name in names}
OUTSIDE_SYSCALL = ("blocked outside a syscall (a page fault, the syscall-exit work, a "
                   "fatal signal's exit)")
PREEMPTED = "preempted: runnable, in a run queue (sched_yield included)"
STOPPED = "stopped: SIGSTOP or ptrace (jvmos's hold of an exec'd child until its probes attach)"
OFFCPU_BASIS = (
    "from each switch-out of a traced thread to its next switch-in (sched_switch), while the "
    "recording counted: blocked (it waited in the kernel; the time includes its wait for a "
    "CPU after the wakeup), preempted (runnable, in a run queue; a sched_yield is one), or "
    "stopped (SIGSTOP, ptrace: jvmos holds each exec'd child stopped until its probes "
    "attach); blocked time by the syscall it was switched out in (pt_regs->orig_ax, while "
    "ax = -ENOSYS; x86-64 numbers). intervals: switch-outs whose switch-in was seen. A lower "
    "bound: a thread switched out when counting began or still out when it ended is not "
    "counted. Waiting, not work: never part of the guaranteed (on-CPU) overhead; the runq "
    "and thread_wait categories are parts of it (do not add them to it); summed over "
    "threads, it can exceed the wall time.")


def syscall_name(x: int) -> Optional[str]:
    """The name of engine key x (syscall number + 1; 0: not in a syscall)."""
    if x <= 0:
        return None
    return SYSCALLS_X86_64.get(x - 1, f"syscall {x - 1}")


def off_cpu(ns: Dict[tuple, int], n: Dict[tuple, int], pid: str) -> Optional[dict]:
    """One process's off-CPU time from @offcpu_ns/@offcpu_n[pid, nr + 1, kind]: by boundary
    (blocked in a syscall of that boundary; preempted and stopped apart) and by syscall."""
    by_sys, by_b = {}, {}
    tot = {"blocked": 0, "preempted": 0, "stopped": 0}
    intervals = 0
    for (p, x, kind), v in ns.items():
        if p != pid or kind not in tot:
            continue
        v, k = int(v), int(n.get((p, x, kind), 0))
        name = syscall_name(int(x))
        tot[kind] += v
        intervals += k
        s = by_sys.setdefault(name or "(not in a syscall)",
                              {"blocked_ns": 0, "preempted_ns": 0, "stopped_ns": 0,
                               "intervals": 0})
        s["intervals"] += k
        s[f"{kind}_ns"] += v
        if kind == "preempted":
            b = PREEMPTED
        elif kind == "stopped":
            b = STOPPED
        else:
            b = OUTSIDE_SYSCALL if name is None else _BOUNDARY_OF.get(name, "other syscall")
        e = by_b.setdefault(b, {"ns": 0, "intervals": 0})
        e["ns"] += v
        e["intervals"] += k
    if not intervals:
        return None
    total = sum(tot.values())
    return {"total_ns": total, "blocked_ns": tot["blocked"], "preempted_ns": tot["preempted"],
            "stopped_ns": tot["stopped"], "intervals": intervals, "lower_bound": True,
            "by_boundary": dict(sorted(by_b.items(), key=lambda kv: -kv[1]["ns"])),
            "by_syscall": dict(sorted(by_sys.items(), key=lambda kv: -sum(
                v for k, v in kv[1].items() if k.endswith("_ns")))),
            "basis": OFFCPU_BASIS}


def off_cpu_total(per_pid: Dict[str, dict]) -> Optional[dict]:
    """The processes' off-CPU sections summed (totals)."""
    secs = [v for v in per_pid.values() if v]
    if not secs:
        return None
    keys = ("total_ns", "blocked_ns", "preempted_ns", "stopped_ns", "intervals")
    out = {**{k: 0 for k in keys}, "lower_bound": True, "by_boundary": {},
           "basis": OFFCPU_BASIS}
    for s in secs:
        for k in keys:
            out[k] += s[k]
        for b, e in s["by_boundary"].items():
            t = out["by_boundary"].setdefault(b, {"ns": 0, "intervals": 0})
            t["ns"] += e["ns"]
            t["intervals"] += e["intervals"]
    out["by_boundary"] = dict(sorted(out["by_boundary"].items(), key=lambda kv: -kv[1]["ns"]))
    return out
