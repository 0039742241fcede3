"""The paper's cost heuristic (section 4, equations 1-6): what the OS costs a JVM, predicted
from platform constants and a description of the workload. One function per equation, so the
code can be checked against the paper line by line. Times in microseconds.

  (2) C_thr  = n_thr * C_nt
  (4) C_net  = n_links * (n_chunks * C_IOchunk + C_link)
  (5) C_file = n_files * (n_file_chunks * C_IOchunk + C_file)
  (3) C_IO   = C_net + C_file
  (1) C_os   = C_thr + C_IO + C_mem
  (6) C_os   = n_thr * (C_nt + C_link + n_chunks * C_IOchunk) + C_mem   (a server in steady
             state: one thread and one link per connection, no files)

There is no synchronization term. The paper blames the native synchronization it did not
model for its growing error; jvmos measures futex calls, but the cost a prediction is compared
with (the guaranteed overhead) does not contain synchronization time: a futex wait's time is
mostly blocking (in results/heuristic the waits of one recording add up to 5-99 s of thread time
in a 0.3-2.4 s run), and no calibration measures a cost per synchronization. A C_sync fitted
against that cost could only soak up what the other terms miss (it did: 0.10-0.44 µs per futex
depending on which level was held out, while the futex wakes themselves took 1.9-3.3 µs each
on-CPU), which is not a constant of the platform.

C_mem has no platform constant either: it is given (`jvmos predict --mem-ms`), 0 as in the
paper's steady state, or, in `jvmos run heuristic`, the memory cost of the other load levels.
A run's own measured memory is never its own estimate's C_mem.
"""
from dataclasses import asdict, dataclass, field
from typing import Dict, Optional, Tuple

from jvmos.analyzers.correction import sum_known

CONSTANTS = ("C_nt", "C_link", "C_io_chunk", "C_file")
# the paper's constants, µs (Sun JVM 1.6 on Solaris 10, dual SPARC; section 5.3): the one
# place they are written (`jvmos calibrate` and Table 7's constants table print them)
PAPER_CONSTANTS_US = {"C_nt": 173.0, "C_link": 140.0, "C_io_chunk": 3.3}


@dataclass
class Constants:
    C_nt: float
    C_link: float
    C_io_chunk: float
    C_file: float = 0.0
    # 95% intervals, (low, high), where known
    ci95: Dict[str, Tuple[float, float]] = field(default_factory=dict)

    def at(self, end: str) -> "Constants":
        """The constants at the low or high end of their intervals (the model is monotone
        in every constant, so this bounds the prediction)."""
        i = 0 if end == "low" else 1
        vals = {k: self.ci95[k][i] if k in self.ci95 else getattr(self, k) for k in CONSTANTS}
        return Constants(**vals)


@dataclass
class Workload:
    connections: int                 # n_links: network connections accepted
    chunks: float                    # n_chunks: blocking I/O operations per connection
    threads: Optional[int] = None    # n_thr: native threads started (default: connections)
    files: int = 0                   # n_files
    file_chunks: Optional[float] = None   # I/O chunks per file (default: chunks)
    mem_us: float = 0.0              # C_mem
    mem_source: str = "not given: 0, the paper's steady state"   # where C_mem came from
    exec_time_us: Optional[float] = None  # T, the run's execution time


def c_thr(k: Constants, w: Workload) -> float:                       # equation 2
    return (w.threads if w.threads is not None else w.connections) * k.C_nt


def c_net(k: Constants, w: Workload) -> float:                       # equation 4
    return w.connections * (w.chunks * k.C_io_chunk + k.C_link)


def c_file(k: Constants, w: Workload) -> float:                      # equation 5
    chunks = w.file_chunks if w.file_chunks is not None else w.chunks
    return w.files * (chunks * k.C_io_chunk + k.C_file)


def c_io(k: Constants, w: Workload) -> float:                        # equation 3
    return c_net(k, w) + c_file(k, w)


def c_os(k: Constants, w: Workload) -> float:                        # equation 1
    return c_thr(k, w) + c_io(k, w) + w.mem_us


def c_os_server(k: Constants, w: Workload) -> float:                 # equation 6
    n_thr = w.threads if w.threads is not None else w.connections
    return n_thr * (k.C_nt + k.C_link + w.chunks * k.C_io_chunk) + w.mem_us


def speedup(t_us: float, cost_us: float) -> Optional[float]:
    """T / (T - C_os): how much faster the same work would run without the OS's cost, on a
    JVM hosted directly by a hypervisor. None when the cost is not less than T."""
    if t_us is None or cost_us >= t_us:
        return None
    return t_us / (t_us - cost_us)


def predict(k: Constants, w: Workload) -> dict:
    terms = {"eq2_C_thr_us": c_thr(k, w), "eq4_C_net_us": c_net(k, w),
             "eq5_C_file_us": c_file(k, w), "eq3_C_IO_us": c_io(k, w), "C_mem_us": w.mem_us,
             "eq1_C_os_us": c_os(k, w),
             "eq6_C_os_us": c_os_server(k, w)}
    out = {"constants_us": {c: getattr(k, c) for c in CONSTANTS}, "workload": asdict(w),
           "terms": terms, "C_os_us": terms["eq1_C_os_us"]}
    if k.ci95:
        lo, hi = k.at("low"), k.at("high")
        out["C_os_ci95_us"] = [c_os(lo, w), c_os(hi, w)]
        out["constants_ci95_us"] = {c: list(v) for c, v in k.ci95.items()}
    if w.exec_time_us:
        out["speedup"] = speedup(w.exec_time_us, out["C_os_us"])
        out["overhead_pct"] = 100.0 * out["C_os_us"] / w.exec_time_us
        if "C_os_ci95_us" in out:
            a, b = out["C_os_ci95_us"]
            out["speedup_ci95"] = [speedup(w.exec_time_us, a), speedup(w.exec_time_us, b)]
    return out


def from_platform(platform: Optional[dict]) -> Optional[Constants]:
    """The constants of a platform file (jvmos calibrate), with their intervals; the fitted
    ones (jvmos run heuristic) when it holds them and they are asked for."""
    k = (platform or {}).get("constants")
    if not k:
        return None
    get = lambda n: k.get(n, {}).get("mean_us", 0.0)
    ci = {n: tuple(k[n]["ci95_us"]) for n in ("C_nt", "C_link", "C_io_chunk", "C_file")
          if n in k and k[n].get("ci95_us")}
    return Constants(C_nt=get("C_nt"), C_link=get("C_link"), C_io_chunk=get("C_io_chunk"),
                     C_file=get("C_file"), ci95=ci)


# the io layer's write syscalls: a blocking write is one I/O chunk (eq. 4)
WRITE_SYSCALLS = ("write", "writev", "sendto", "sendmsg", "pwrite64")


def counts_from_summary(s: dict) -> dict:
    """What the probes counted in a recording (summary.json), in the heuristic's terms."""
    cats = s["categories"]
    sc = (cats.get("io_syscall") or {}).get("syscalls") or {}
    calls = lambda names: sum((sc.get(k) or {}).get("calls", 0) for k in names)
    link = (cats.get("link") or {}).get("syscalls") or {}
    files = (cats.get("file") or {}).get("syscalls") or {}
    return {"accepts": sum(v["calls"] for k, v in link.items() if k.startswith("accept")),
            "io_writes": calls(WRITE_SYSCALLS),
            "io_write_bytes": sum((sc.get(k) or {}).get("bytes") or 0 for k in WRITE_SYSCALLS),
            "io_reads": calls(("read", "readv", "recvfrom", "recvmsg", "pread64")),
            "io_syscalls": (cats.get("io_syscall") or {}).get("calls", 0),
            "io_bytes": (cats.get("io_syscall") or {}).get("bytes", 0),
            "threads_created": (cats.get("thread_create") or {}).get("calls", 0),
            "files_opened": sum(v["calls"] for k, v in files.items() if k.startswith("open")),
            "futex": (cats.get("sync") or {}).get("calls", 0),
            "malloc_calls": (cats.get("malloc") or {}).get("calls", 0),
            "page_faults": (cats.get("vm") or {}).get("page_faults", 0) or 0,
            "context_switches": s["totals"].get("context_switches")}


def mem_parts_from_summary(s: dict) -> dict:
    """The memory resource of a recording split as jvmos's extended model uses it (ns): the
    allocator's time (the probed calls plus the estimated frees, one per block allocated: the
    free term is proportional to the allocator calls, so it belongs to the same regressor), the
    user page faults' time, the memory syscalls' time. The three add up to the mem resource.
    A part whose time is unknown (a calibration missing) is None, never 0; a part the
    recording has no figure for (no allocator call, no memory syscall) is 0."""
    cats = s["categories"]
    m, vm = cats.get("malloc") or {}, cats.get("vm") or {}
    fr = cats.get("free_estimated") or {}
    known = lambda c, k="time_ns": c.get(k) if c else 0.0
    return {"malloc_ns": sum_known([known(m), known(fr)]),
            "page_fault_ns": known(vm, "page_fault_time_ns"),
            "vm_syscall_ns": known(vm, "syscalls_time_ns")}


def workload_from_summary(s: dict, mem_us: Optional[float] = None,
                          mem_source: Optional[str] = None) -> Workload:
    """Equation 1's inputs as a recording counted them (workload_from_counts); T = the
    recording's wall time."""
    return workload_from_counts(counts_from_summary(s), s["totals"]["wall_ns"] / 1e3, mem_us,
                                mem_source)


def workload_from_counts(c: dict, exec_time_us: Optional[float] = None,
                         mem_us: Optional[float] = None,
                         mem_source: Optional[str] = None) -> Workload:
    """Equation 1's inputs from what the probes counted (counts_from_summary, or a load
    level's medians of them): connections accepted, I/O operations per connection, threads
    created, files opened. The I/O operations belong to the connections when there are any
    (a server), else to the files. C_mem is NOT taken from the counts' recording (its measured
    memory cost is part of what the prediction is compared with): it is `mem_us` as given,
    else 0 (the paper's steady state). A count that is absent is 0 (nothing was counted)."""
    n = lambda key: c.get(key) or 0
    conns, files = n("accepts"), n("files_opened")
    ops = n("io_writes") + n("io_reads")
    w = Workload(connections=conns, chunks=ops / conns if conns else 0.0,
                 threads=n("threads_created"), files=files,
                 file_chunks=0 if conns else (ops / files if files else 0),
                 exec_time_us=exec_time_us)
    if mem_us is not None:
        w.mem_us = mem_us
        w.mem_source = mem_source or "given"
    return w


def measured_from_summary(s: dict) -> dict:
    """What a recording measured, to compare a prediction with (µs): the guaranteed overhead
    (equation 1's resources: I/O, threads, links, memory; no synchronization time), its memory
    part, and the rest without memory."""
    t = s["totals"]
    by = t.get("guaranteed_by_resource") or {}
    total = t.get("guaranteed_overhead_ns")
    if total is None:       # a term unknown: the known terms, a lower bound (said in the run's
        total = sum(by.values())    # warnings and totals.guaranteed_overhead_unknown)
    mem = by.get("mem", 0.0)
    return {"C_os_us": total / 1e3, "mem_us": mem / 1e3, "without_mem_us": (total - mem) / 1e3,
            "by_resource_us": {k: v / 1e3 for k, v in by.items()}}
