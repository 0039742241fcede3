"""The platform constants of the paper's cost heuristic (section 4), measured on this machine.

  C_nt        guaranteed cost of one native thread: the libc + kernel layers of creating and
              ending a Java thread (threads layer on the NoOp-threads program)
  C_link      cost of one network connection: on-CPU time of a blocking accept/accept4 woken
              by the client's connect, plus the close of the accepted socket (links layer on
              LinkBench --mode accept)
  C_file      cost of opening one file: openat + close (links layer on LinkBench --mode open)
  C_io_chunk  guaranteed cost of one blocking write of CHUNK bytes from the Java heap to a
              socket: the heap -> temporary direct buffer copy (nio_copy) of the written bytes
              plus the kernel's copyin of them (io layer on SocketStream --size CHUNK)
  copy_ns_per_byte  the kernel copyin cost per byte (jvmos calibrate's pipe fit)

Each is measured TRIALS times with the real probes on a real JVM (jvmos/calibrate_constants.py
runs the microbenchmarks under `record`), corrected for the probe effect like every recorded
figure, and reported as mean and 95% interval in µs. This module holds the arithmetic only:
one trial's constant from a recording's summary, and the statistics of the trials.
"""
from typing import List

from jvmos import JvmosError
from jvmos.analyzers.stats import mean_ci

DEFAULT_CHUNK = 8192   # Tomcat's socket write buffer and java.io's buffer size


def stat(samples_us: List[float], what: str) -> dict:
    m, lo, hi = mean_ci(samples_us)
    return {"mean_us": m, "ci95_us": [lo, hi], "samples_us": [round(x, 4) for x in samples_us],
            "what": what}


def value_of(name: str, s: dict) -> float:
    """One trial's constant, in µs, from a recording's summary."""
    cats = s["categories"]
    if name == "C_nt":
        java = ((cats.get("thread_create") or {}).get("layers") or {}).get("java") or {}
        n = java.get("threads") or 0
        if not n:
            raise JvmosError("calibrating C_nt: no Java thread creation was recorded")
        if java.get("libc_ns") is None or java.get("kernel_ns") is None:
            raise JvmosError("calibrating C_nt: the recorded thread creation has no native "
                             "time" + _unknown_costs(s))
        return (java["libc_ns"] + java["kernel_ns"]) / n / 1e3
    if name == "C_nt_kernel":
        # C_nt's kernel part alone: what a clock of kernel time (stime) can test
        java = ((cats.get("thread_create") or {}).get("layers") or {}).get("java") or {}
        if not java.get("threads") or java.get("kernel_ns") is None:
            raise JvmosError("calibrating C_nt: no kernel time of Java thread creation")
        return java["kernel_ns"] / java["threads"] / 1e3
    if name == "C_link":
        sc = (cats.get("link") or {}).get("syscalls") or {}
        acc = [v for k, v in sc.items() if k in ("accept", "accept4")]
        n = sum(v["calls"] for v in acc)
        closes = ((cats.get("file") or {}).get("syscalls") or {}).get("close") or {}
        if not n or not closes.get("calls"):
            raise JvmosError("calibrating C_link: no accept or close was recorded")
        if closes.get("time_ns") is None or any(v.get("time_ns") is None for v in acc):
            raise JvmosError("calibrating C_link: the recorded accept or close has no time"
                             + _unknown_costs(s))
        # accept, and the close of the accepted socket (an average close of this run: server
        # and client ends close alike)
        return (sum(v["time_ns"] for v in acc) / n + closes["time_ns"] / closes["calls"]) / 1e3
    if name == "C_file":
        sc = (cats.get("file") or {}).get("syscalls") or {}
        opens = sum(v["calls"] for k, v in sc.items() if k.startswith("open"))
        if not opens:
            raise JvmosError("calibrating C_file: no open was recorded")
        if any(v.get("time_ns") is None for v in sc.values()):
            raise JvmosError("calibrating C_file: a recorded open or close has no time"
                             + _unknown_costs(s))
        return sum(v["time_ns"] for v in sc.values()) / opens / 1e3
    if name == "C_io_chunk":
        calls, nio_write, copyin = _io_chunk_parts(s)
        return (nio_write + copyin) / calls / 1e3
    raise KeyError(name)


def _unknown_costs(s: dict) -> str:
    """Why a recording's time is unknown, for a constant's error: the probe costs it needs
    that are not resolved (its warnings), and what measures them again."""
    why = "; ".join(w for w in s.get("warnings") or [] if "unknown" in w or "not resolved" in w)
    return (f" (a probe cost it needs is unknown: {why[:300]}; 'jvmos calibrate --probes' "
            "measures them again, best on an idle machine)")


def _io_chunk_parts(s: dict):
    """(writes, NIO copy time of the written bytes, kernel copyin time), ns: the copies of the
    written bytes only (the reader's side is the peer's cost)."""
    cats = s["categories"]
    io = cats.get("io_syscall") or {}
    writes = ((io.get("syscalls") or {}).get("write") or {})
    nio, kc = cats.get("nio_copy") or {}, cats.get("kernel_copy") or {}
    if not writes.get("calls") or not nio.get("bytes") or kc.get("time_ns") is None:
        raise JvmosError("calibrating C_io_chunk: no NIO socket write was recorded")
    nio_write = (nio.get("time_ns") or 0.0) * min(1.0, writes["bytes"] / nio["bytes"])
    copyin = kc["time_ns"] * (kc["copyin_bytes"] / kc["bytes"]) if kc.get("bytes") else 0.0
    return writes["calls"], nio_write, copyin


def io_chunk_bounds(s: dict, jdk_home: str):
    """One trial's C_io_chunk (µs) with the NIO and copyin per-byte costs at the low and at the
    high end of their calibrated 95% intervals (both estimates scale with them)."""
    calls, nio_write, copyin = _io_chunk_parts(s)
    k = s.get("constants") or {}

    def ratios(c):
        if not c or not c.get("ns_per_byte") or not c.get("ns_per_byte_ci95"):
            return 1.0, 1.0
        lo, hi = c["ns_per_byte_ci95"]
        return max(0.0, lo) / c["ns_per_byte"], hi / c["ns_per_byte"]

    nio_c = (k.get("nio_heap_to_direct") or {}).get(jdk_home)
    (nl, nh), (cl, ch) = ratios(nio_c), ratios(k.get("kernel_copyin"))
    return ((nio_write * nl + copyin * cl) / calls / 1e3,
            (nio_write * nh + copyin * ch) / calls / 1e3)
