"""The I/O resource (probes/io.bpf.c; paper section 3.1): JNI copies between the Java heap and
native memory (jni_copy, measured), I/O syscalls (io_syscall, measured; their time includes
blocking and is not guaranteed overhead), the kernel's copyin/copyout of the bytes they moved
(kernel_copy: bytes x the calibrated per-byte cost, estimated, as the paper did), the NIO
path's heap <-> temporary direct buffer copies (nio_copy, estimated) and the bytes of each
path (JNI, NIO, other). Measured times are corrected with the io layer's own calibrated
windows (jvmos calibrate --probes measures them on the engine's io.bpf.c programs; a recording
made with the retired bpftrace scripts was corrected with their own windows).
"""
from typing import Dict, List, Optional, Tuple

from jvmos.analyzers.correction import combine, correct_by_window, probe_ci, probe_cost
from jvmos.analyzers.stats import floored_notes
from jvmos.catalogue import JNI_BYTES_FROM_ARGS, SYSCALL_DIRECTION

# probe kind -> (what one hit is, cost key in --mode time, cost key in --mode count): the
# probes of this layer, as analyzers/overhead.py charges them
KINDS = {
    "io:jni_copy": ("a JNI copy function: an entry probe (+ a return probe in --mode time)",
                    "jni_copy_time_hit", "jni_copy_count_hit"),
    "io:syscall_pair": ("an I/O syscall: a sys_enter/sys_exit tracepoint pair",
                        "io_syscall_hit", "io_syscall_hit"),
    "io:uprobe": ("a libnio read/write native or Unsafe_CopyMemory0: one entry probe",
                  "uprobe", "uprobe"),
    "io:syscall_upair": ("an I/O call (--scope process): a uprobe/uretprobe pair on libc's "
                         "wrapper", "symbol_pair_time_hit", "symbol_pair_time_hit"),
}


def probe_hits(raw, scope: str) -> List[Tuple[str, Dict[str, int]]]:
    """[(kind, {pid: hits})]; at --scope process the I/O calls were probed on libc's wrappers
    (uprobe pairs), not syscall tracepoints."""
    sum_ = raw.sum_by_pid
    return [("io:jni_copy", sum_("calls", lambda k: k[0] == "jni_copy")),
            ("io:syscall_upair" if scope == "process" else "io:syscall_pair",
             sum_("calls", lambda k: k[0] == "io_syscall")),
            ("io:uprobe", sum_("calls", lambda k: k[0] in ("nio_native", "unsafe_copy_out",
                                                            "unsafe_copy_etc")))]


def _model_resolution(model: Optional[dict]) -> str:
    """What the JNI copy model's fit could not resolve from the probe window's noise, said
    beside the estimate: a cost floored at 0, or a per-call cost whose values at the ends of
    the window's 95% interval straddle 0."""
    if not model:
        return ""
    if model.get("unresolved"):
        return f"; the model is unresolved, the copies' time unknown: {model['unresolved']}"
    out = floored_notes(model)
    ends = model.get("ns_per_call_at_window_ci95_ends")
    if isinstance(ends, (list, tuple)) and len(ends) == 2 and None not in ends \
            and ends[0] < 0 < ends[1]:
        out.append(f"ns_per_call is not resolved from the probe window's noise: "
                   f"{ends[0]:.0f} to {ends[1]:.0f} ns at the ends of the window's 95% interval")
    return ("; the model's limits: " + "; ".join(out)) if out else ""


def _fit_cost(model: Optional[dict], calls: int, nbytes: int) -> Optional[float]:
    if not model or "ns_per_byte" not in model:     # none, or unresolved
        return None
    return calls * model.get("ns_per_call", 0.0) + nbytes * model["ns_per_byte"]


def categories(fns: dict, paths: dict, confirmed: int, costs: dict, jvm_key: Optional[str],
               mode: str) -> dict:
    """jni_copy, io_syscall, kernel_copy and nio_copy of one process. fns: {category:
    {function or syscall: {calls, bytes, time_ns}}}; paths: {(path, direction): {calls,
    bytes}} of @path_calls/@path_bytes; confirmed: @nio_confirmed's count; jvm_key: the JDK
    home whose calibrated copy costs apply."""
    cats = {}
    # --- jni_copy: measured with entry+return probes
    jc = fns.get("jni_copy", {})
    if jc:
        c = {"calls": sum(f["calls"] for f in jc.values()),
             "bytes": sum(f["bytes"] for f in jc.values()),
             "time_ns": sum(f["time_ns"] for f in jc.values()),
             "method": "measured",
             "calls_without_bytes": sum(f["calls"] for s, f in jc.items()
                                        if s not in JNI_BYTES_FROM_ARGS),
             "functions": {s: dict(f) for s, f in sorted(jc.items())}}
        if mode == "count":
            model = (costs.get("jni_region") or {}).get(jvm_key or "")
            c["method"] = "estimated"
            c["time_ns"] = _fit_cost(model, c["calls"], c["bytes"])
            c["basis"] = ("--mode count: calls x ns_per_call + bytes x ns_per_byte of this JDK's "
                          "JNI Region copy, calibrated in --mode time with the probe window "
                          "subtracted (jvmos calibrate --probes)"
                          + ("" if model else "; no calibration for this JDK")
                          + _model_resolution(model))
            for f in c["functions"].values():
                f["time_ns"] = None
        cats["jni_copy"] = c
    # --- io_syscall: measured at the syscall tracepoints
    sc = fns.get("io_syscall", {})
    if sc:
        cats["io_syscall"] = {
            "calls": sum(f["calls"] for f in sc.values()),
            "bytes": sum(f["bytes"] for f in sc.values()),
            "time_ns": sum(f["time_ns"] for f in sc.values()),
            "method": "measured",
            "syscalls": {s: dict(f) for s, f in sorted(sc.items())}}
        # --- kernel_copy: bytes the syscalls moved x calibrated per-byte copy cost
        cin = sum(f["bytes"] for s, f in sc.items() if SYSCALL_DIRECTION.get(s) == "in")
        cout = sum(f["bytes"] for s, f in sc.items() if SYSCALL_DIRECTION.get(s) == "out")
        ncalls = sum(f["calls"] for s, f in sc.items() if SYSCALL_DIRECTION.get(s))
        kin, kout = costs.get("kernel_copyin"), costs.get("kernel_copyout")
        t = None
        if kin and kout:
            t = cin * kin["ns_per_byte"] + cout * kout["ns_per_byte"]
        cats["kernel_copy"] = {
            "calls": ncalls, "bytes": cin + cout, "time_ns": t, "method": "estimated",
            "copyin_bytes": cin, "copyout_bytes": cout,
            "basis": "bytes moved by the I/O syscalls x per-byte copyin/copyout cost "
                     "calibrated with pipe writes/reads of growing size (jvmos calibrate)"
                     + ("" if t is not None else "; no calibration available")}
    # --- nio_copy: NIO-path syscall bytes x calibrated heap->direct copy cost
    nio_calls = sum(v["calls"] for (p, _), v in paths.items() if p == "nio")
    nio_bytes = sum(v["bytes"] for (p, _), v in paths.items() if p == "nio")
    uc = fns.get("unsafe_copy_out", {})
    native = fns.get("nio_native", {})
    if nio_calls or uc or native:
        model = (costs.get("nio_heap_to_direct") or {}).get(jvm_key or "", None)
        basis_model = "heap->direct ByteBuffer copy of this JDK (jvmos calibrate)"
        if model is None and costs.get("memcpy"):
            model = costs["memcpy"]
            basis_model = "user-space memcpy (no calibration of this JDK's heap->direct copy)"
        cats["nio_copy"] = {
            "calls": nio_calls, "bytes": nio_bytes,
            "time_ns": _fit_cost(model, nio_calls, nio_bytes), "method": "estimated",
            "unsafe_copy_calls": sum(f["calls"] for f in uc.values()),
            "unsafe_copy_bytes": sum(f["bytes"] for f in uc.values()),
            "confirmed_calls": confirmed,
            "nio_native_calls": sum(f["calls"] for f in native.values()),
            "basis": "each I/O syscall issued from a libnio.so read/write native is taken as one "
                     "copy of its bytes between a heap buffer and a temporary direct buffer, "
                     "costed as ns_per_call + bytes x ns_per_byte of the " + basis_model +
                     "; confirmed_calls counts those whose buffer was the destination of an "
                     "Unsafe_CopyMemory0 just before (only visible before JIT intrinsification); "
                     "I/O from application direct buffers would be over-counted"}
    return cats


def paths(paths, io_bytes: int):
    jni = sum(v["bytes"] for (p, _), v in paths.items() if p == "jni")
    nio = sum(v["bytes"] for (p, _), v in paths.items() if p == "nio")
    return {"jni": {"calls": sum(v["calls"] for (p, _), v in paths.items() if p == "jni"),
                    "bytes": jni},
            "nio": {"calls": sum(v["calls"] for (p, _), v in paths.items() if p == "nio"),
                    "bytes": nio},
            "other": _other(io_bytes - jni - nio)}


def _other(rest: int) -> dict:
    """I/O bytes that neither path explains; when the paths explain more than the syscalls
    moved (a read begun before tracing started is attributed at its Set<T>ArrayRegion), 0,
    flagged, with the excess kept."""
    if rest >= 0:
        return {"bytes": rest}
    return {"bytes": 0, "floored": True, "paths_exceed_syscall_bytes": -rest}


# which calibrated window applies to the measured times of each category (their own: the
# io layer's probes are the ones calibrate --probes measures)
WINDOWS = {"jni_copy": ("jni_copy_time_window",
                        "jni_copy_time_window (calibrated for this uprobe+uretprobe pair)"),
           "io_syscall": ("io_syscall_window",
                          "io_syscall_window (calibrated for this tracepoint pair)")}


# --scope process times the I/O calls with a uprobe+uretprobe pair on libc's wrappers: no
# window calibrated for the tracepoint pair applies to it; the JNI copy pair's is the nearest
# measured one where the pair's own was not resolved (same probe kinds, both on an instruction the kernel emulates)
WINDOWS_PROCESS = dict(WINDOWS, io_syscall=(
    "symbol_pair_time_window", "the JNI copy symbol pair's window (borrowed: --scope process "
    "times I/O calls with a uprobe+uretprobe pair on libc's wrappers, like the JNI copy "
    "pair on a function symbol; io_syscall_window was calibrated for the tracepoint pair)"))


def correct_times(cats: dict, probes: Optional[dict], mode: str, scope: str = "host") -> None:
    """Correct the io layer's measured times of one process: each function or syscall is
    raw - hits x window; the category is the sum of its corrected parts. Idempotent."""
    windows = WINDOWS_PROCESS if scope == "process" else WINDOWS
    if scope == "process" and "io:syscall_upair" in ((probes or {}).get("own_kinds") or ()):
        # the compiled engine's calibration measured the libc wrapper pair itself
        windows = dict(WINDOWS, io_syscall=("symbol_pair_time_window", (
            "symbol_pair_time_window (calibrated for this uprobe+uretprobe pair on libc's "
            "wrapper, as the engine placed it)")))
    for name, (key, source) in windows.items():
        c = cats.get(name)
        if not c or (name == "jni_copy" and mode == "count"):
            continue
        window, ci = probe_cost(probes, key), probe_ci(probes, key)
        sub = c.get("functions") or c.get("syscalls") or {}
        for f in sub.values():
            raw = f.get("time_raw_ns", f["time_ns"])
            f.update(correct_by_window(raw, f["calls"], window, ci, source))
        c.update(combine(sub.values()))
        c["probe_window_source"] = source
        if window is not None:
            c["probe_window_ns"] = window
