"""The links layer, compiled (probes/links.bpf.c, probes/links.h): accept, accept4, connect
(category link) and open, openat, openat2, close (category file), the paper's C_link/C_file.

Attach points. --scope process (the default): libc's functions that make these syscalls
(catalogue.LINK_LIBC_WRAPPERS: the wrappers and glibc's internal __open_nocancel and
__close_nocancel), a uprobe pair opened in the traced processes only, so that no syscall
tracepoint is enabled and no other process on the host pays anything. What they cannot see is
catalogue.LINK_BLIND_SPOTS (the dynamic loader's own open/close, openat2, raw syscalls; a
non-blocking connect's EINPROGRESS counted as failed), written into the manifest.
--scope host: the syscall tracepoints, which see every call the kernel serves, at the
host-wide cost of an enabled syscall tracepoint (results/overhead).

The price at process scope: glibc's openat, __open_nocancel and __close_nocancel begin with
instructions the kernel single-steps under a uprobe (a stack adjustment, a mov), and a probe
with a return probe cannot be moved past a stack adjustment, so their hits cost about 9 us
instead of under 1 us; the recording warns that they are charged at the emulated cost (an
underestimate) until the calibration measures a single-stepped pair.

Measured before the nocancel functions were added (2-core VM, LinkBench --mode accept --links
500 on JDK 17, tracepoint witness on the same pid): accept 500/500 and connect 500/500 agree on
the libc route; close 1018 of 1112 and open(at) 60 of 101 were seen, the rest made by glibc's
nocancel paths and ld.so. Costs: the tracepoint pair 0.64-0.71 us per call in the traced
process, the libc uprobe pair on close 1.87-1.93 us; a bystander's close(-1) takes 0.26 us
alone, 0.65 us while the tracepoints are attached, 0.26 us with the libc route.
"""
from jvmos.enginecalib import Calibration

from jvmos.catalogue import LINK_LIBC_WRAPPERS, LINK_SYSCALLS

NAME = OBJECT = "links"
HEADER = "links.h"
BASE = 128

CATEGORIES = {"link": BASE + 1, "file": BASE + 2}
NAMES = {BASE + 1: ("failed", "ncalls", None)}
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


def constants(ctx) -> dict:
    return {}


def plan(ctx) -> None:
    for sc in LINK_SYSCALLS:
        cat = "link" if sc in LINK else "file"
        if ctx.scope == "process":
            for sym in LINK_LIBC_WRAPPERS.get(sc, ()):     # openat2: none, not seen
                ctx.uprobe("LIBC", sym, "libc_enter", f"libc_{cat}_ret")
            continue
        ctx.tracepoint("syscalls", f"sys_enter_{sc}", "sys_link_enter")
        ctx.tracepoint("syscalls", f"sys_exit_{sc}", f"sys_{cat}_exit", named=True)


CALIBRATIONS = [
    # the tracepoint pair is the --scope host route, the libc pair the --scope process one
    Calibration("link_syscall_hit", "close", 200_000, ("links",), ("links:syscall_pair",),
                "links.bpf.c's sys_link_enter + sys_file_exit on close(-1) (EBADF)",
                scope="host"),
    Calibration("link_libc_hit", "close", 200_000, ("links",), ("links:libc_pair",),
                "links.bpf.c's libc_enter + libc_file_ret on libc's close(-1) (EBADF), as "
                "placed", scope="process"),
    Calibration("sched_switch_links_hit", "yield", 100_000, ("links",),
                ("links:sched_switch",),
                "links.bpf.c's links_switch, per switch out of a traced thread (two threads "
                "yielding to each other on one CPU)", per_switch=True),
]
