"""bpftrace's probe costs, as platform files calibrated before the compiled engine was
jvmos's only engine stored them (the "probes" section): reading only. Nothing measures them
any more (the engine's own costs are enginecost's, section "engine_probes"); the recordings
made with bpftrace that are committed under results/ are still re-analysed with them
(scripts/reanalyse.py), and probes_for gives such a recording the figures that apply to its
script.
"""
from typing import List, Optional, Tuple


def probes_for(probes: Optional[dict], script, jvm_homes) -> Tuple[Optional[dict], List[str]]:
    """The probe costs that apply to a script: where its JNI copy probes are USDT, the USDT
    figures of that JDK replace the symbol pair's (unknown, with a warning, when uncalibrated)."""
    if not probes:
        return probes, []
    out = dict(probes)
    # the threads and mem layers' uprobe pairs, and --scope process's libc I/O wrappers, stay
    # symbol uprobes: they keep these figures
    for k in ("jni_copy_time_hit", "jni_copy_time_window", "jni_copy_count_hit"):
        if k in probes:
            out["symbol_pair_" + k[len("jni_copy_"):]] = probes[k]
    if not any(k == "usdt" for k in script.kinds.values()):
        return out, []
    homes = list(jvm_homes)
    cal = [(probes.get("usdt") or {}).get(str(h)) for h in homes]
    keys = ("jni_copy_time_hit", "jni_copy_time_window", "jni_copy_count_hit")
    if len(cal) == 1 and cal[0] and all(("usdt_" + k) in cal[0] for k in keys):
        for k in keys:
            out[k] = dict(cal[0]["usdt_" + k], source=f"usdt ({homes[0]})")
        return out, []
    for k in keys:      # absent = unknown: the symbol pair's figures must not stand in
        out.pop(k, None)
    if len(cal) > 1:
        why = (f"{len(homes)} JDKs were probed and their USDT probe costs differ: which one "
               "ran is not known when the costs are applied")
    else:
        why = ("their cost is not calibrated for " + (", ".join(map(str, homes)) or "this JVM")
               + " in this platform file (bpftrace's costs are no longer measured)")
    out["usdt_unknown"] = why
    return out, [f"the JNI probes are USDT probes and {why}: JNI copy times are uncorrected "
                 "and their probe cost unknown"]
