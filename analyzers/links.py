"""The links resource (probes/links.bpf.c; the paper's C_link and C_file): accept, accept4 and
connect (category link), open, openat, openat2 and close (category file), each the on-CPU time
of the call corrected per hit with a calibrated window (named in `probe_window_source`): at
--scope process libc's functions timed by a uprobe pair (the symbol pair's window), at --scope
host the syscall tracepoints (the io layer's tracepoint window, borrowed).
"""
from typing import Dict, List, Optional, Tuple

from jvmos.analyzers.correction import (PAIR_SOURCE, SYS_SOURCE, combine, correct_by_window,
                                       get, probe_costs)

# probe kind -> (what one hit is, cost key in --mode time, cost key in --mode count): the
# probes of this layer, as analyzers/overhead.py charges them (cost keys name entries of the
# platform file's "engine_probes" section; "probes" in files made before bpftrace retired)
KINDS = {
    "links:syscall_pair": ("accept/connect/open/close: a sys_enter/sys_exit tracepoint pair",
                           "link_syscall_hit", "link_syscall_hit"),
    "links:libc_pair": ("accept/connect/open/close (--scope process): a uprobe/uretprobe "
                        "pair on libc's function", "link_libc_hit", "link_libc_hit"),
    "links:sched_switch": ("a switch out of a traced thread: the sched_switch program",
                           "sched_switch_links_hit", "sched_switch_links_hit"),
}


def probe_hits(raw, scope: str) -> List[Tuple[str, Dict[str, int]]]:
    """[(kind, {pid: hits})]: every enter/exit pair, failed calls included; at --scope process
    on libc's functions (uprobe pairs), at --scope host on the syscall tracepoints."""
    sum_ = raw.sum_by_pid
    kind = "links:libc_pair" if scope == "process" else "links:syscall_pair"
    return [(kind, sum_("calls", lambda k: k[0] in ("link", "file"))),
            (kind, sum_("ncalls", lambda k: k[0] in ("link", "file") and k[1] == "failed")),
            # a call in progress at the start: its exit only, charged as a pair (one or two
            # per recording)
            (kind, sum_("untimed", lambda k: k[0] in ("link", "file")))]


def categories(fns: dict, probes: Optional[dict], scope: str = "host") -> dict:
    """link and file of one process. Their times are corrected per hit with the window of
    what timed them: at --scope process libc's uprobe pair (the symbol pair's window), at
    --scope host the syscall tracepoint pair (the io layer's tracepoint window)."""
    c = probe_costs(probes)
    if scope == "process":
        window, ci, source = c["pair_window"], c["pair_ci"], PAIR_SOURCE
        what = "libc's function"
    else:
        window, ci, source = c["sys_window"], c["sys_ci"], SYS_SOURCE
        what = "the syscall"
    out = {}
    for cat in ("link", "file"):
        f = fns.get(cat)
        if not f:
            continue
        sparts = {}
        for k, v in sorted(f.items()):
            if k == "failed":
                continue
            # the timed calls are corrected; a call in progress when tracing began adds to
            # the count only (untimed_calls)
            p = correct_by_window(v.get("time_ns", 0), v.get("calls", 0), window, ci,
                                  source)
            untimed = v.get("untimed_calls", 0)
            p.update(calls=v.get("calls", 0) + untimed, wall_ns=v.get("wall_ns", 0))
            if untimed:
                p["untimed_calls"] = untimed
            sparts[k] = p
        figure = {"calls": sum(p["calls"] for p in sparts.values()), "bytes": None}
        figure.update(combine(sparts.values()))
        untimed = sum(p.get("untimed_calls", 0) for p in sparts.values())
        if untimed:
            figure["untimed_calls"] = untimed
        figure.update({
            "wall_ns": sum(p["wall_ns"] for p in sparts.values()),
            "failed_calls": get(f, "failed"),
            "method": "measured", "probe_window_source": source, "syscalls": sparts,
            "basis": f"on-CPU time of {what} (its span minus the time switched out "
                     "waiting for a peer), minus hits x the calibrated probe window; "
                     "wall_ns keeps the whole span"
                     + ("; calls include untimed_calls (in progress when tracing began: "
                        "counted, their time in no figure, so the time is a lower bound)"
                        if untimed else "")})
        out[cat] = figure
    return out
