"""The links layer, compiled (probes/links.bpf.c, probes/links.h): accept, accept4, connect
(category link) and open, openat, openat2, close (category file), the paper's C_link/C_file.

Attach points: the syscall tracepoints at both scopes. libc's wrappers (a uprobe pair in the
traced processes only, cheaper for every other process on the host) were measured as the
--scope process alternative and not chosen: they do not see what a JVM's libc and dynamic
loader do without them (__open_nocancel/__close_nocancel under fopen, fclose, opendir and
sysconf; ld.so's own open/close under dlopen), so they count fewer calls than the kernel
serves, and they cannot tell connect's EINPROGRESS from a failure (libc returns -1 and puts
the cause in errno). Measured (2-core VM, LinkBench --mode accept --links 500 on JDK 17,
tracepoint witness on the same pid): accept 500/500 and connect 500/500 agree, but close
1018 of 1112, open(at) 60 of 101 and failed file calls 1 of 57 are seen on the libc route.
Costs: the tracepoint pair 0.64-0.71 us per call in the traced process, the libc uprobe pair
on close 1.87-1.93 us; a bystander's close(-1) takes 0.26 us alone, 0.65 us while the
tracepoints are attached, 0.26 us with the libc route. JVMOS_LINKS_LIBC=close,openat,... (a developer's switch, for measuring
that choice again) puts those syscalls on libc's wrappers at --scope process.
"""
from jvmos.enginecalib import Calibration
import os

from jvmos.catalogue import LINK_SYSCALLS

NAME = OBJECT = "links"
HEADER = "links.h"
BASE = 128

CATEGORIES = {"link": BASE + 1, "file": BASE + 2}
NAMES = {BASE + 1: ("failed", "@ncalls", None)}
WHATS = {}
MISSED = {"link_no_entry": BASE + 1, "file_no_entry": BASE + 2,
          "link_offcpu_exceeds_span": BASE + 3, "file_offcpu_exceeds_span": BASE + 4}
HITS = {"links:sched_switch": BASE + 1}
HEADER_NAMES = {
    **{f"CAT_{k.upper()}": v for k, v in CATEGORIES.items()},
    "NAME_FAILED": BASE + 1,
    **{f"MISSED_{k.upper()}": v for k, v in MISSED.items()},
    "HIT_LINKS_SCHED_SWITCH": BASE + 1,
}

LINK = ("accept", "accept4", "connect")
# libc's wrappers of each syscall, the plain name first: a later name at the same address
# (open64, openat64) is probed once, under the first, so the analyzers see the syscall's name.
# openat2 has no wrapper in glibc 2.36: it stays on its tracepoint on either route.
LIBC_WRAPPERS = {"accept": ("accept",), "accept4": ("accept4",), "connect": ("connect",),
                 "open": ("open", "open64"), "openat": ("openat", "openat64"),
                 "close": ("close",)}


def libc_route() -> set:
    """The syscalls put on libc's wrappers at --scope process: none unless JVMOS_LINKS_LIBC
    names them (the measured choice is the tracepoints; see the module's docstring)."""
    want = {s.strip() for s in os.environ.get("JVMOS_LINKS_LIBC", "").split(",") if s.strip()}
    return {s for s in want if s in LIBC_WRAPPERS}


def constants(ctx) -> dict:
    return {}


def plan(ctx) -> None:
    libc = libc_route() if ctx.scope == "process" else set()
    for sc in LINK_SYSCALLS:
        cat = "link" if sc in LINK else "file"
        if sc in libc:
            for sym in LIBC_WRAPPERS[sc]:
                ctx.uprobe("LIBC", sym, "libc_enter", f"libc_{cat}_ret")
            continue
        ctx.tracepoint("syscalls", f"sys_enter_{sc}", "sys_link_enter")
        ctx.tracepoint("syscalls", f"sys_exit_{sc}", f"sys_{cat}_exit", named=True)


CALIBRATIONS = [
    Calibration("link_syscall_hit", "close", 200_000, ("links",), ("links:syscall_pair",),
                "links.bpf.c's sys_link_enter + sys_file_exit on close(-1) (EBADF)"),
    Calibration("sched_switch_links_hit", "yield", 100_000, ("links",),
                ("links:sched_switch",),
                "links.bpf.c's links_switch, per switch out of a traced thread (two threads "
                "yielding to each other on one CPU)", per_switch=True),
]
