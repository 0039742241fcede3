"""The JNI census (probes/jni.bpf.c; the paper's Table 2): every call of every JNI entry point
of libjvm.so, and the share of them that copy between the Java heap and native memory."""
from typing import Dict, List, Tuple

# probe kind -> (what one hit is, cost key in --mode time, cost key in --mode count): the
# probes of this layer, as analyzers/overhead.py charges them
KINDS = {
    "jni:uprobe": ("a JNI entry point other than the copies: one count() block",
                   "uprobe", "uprobe"),
}


def probe_hits(raw, scope: str) -> List[Tuple[str, Dict[str, int]]]:
    """[(kind, {pid: hits})]: one uprobe hit per JNI call counted (the copies are io's)."""
    return [("jni:uprobe", raw.sum_by_pid("calls", lambda k: k[0] == "jni_call"))]


def categories(fns: dict) -> dict:
    """jni_call of one process: every JNI entry point's calls, the copy functions (counted by
    the io layer when it is loaded) merged in, and the share that copies."""
    cats = {}
    jc = fns.get("jni_copy", {})
    # --- jni_call: census of every JNI entry point
    census = fns.get("jni_call", {})
    if census:
        merged = {s: f["calls"] for s, f in census.items()}
        for s, f in jc.items():
            merged[s] = merged.get(s, 0) + f["calls"]
        total = sum(merged.values())
        copying = sum(f["calls"] for f in jc.values())
        cats["jni_call"] = {"calls": total, "bytes": None, "time_ns": None, "method": "measured",
                            "copying_calls": copying,
                            "copying_pct": 100.0 * copying / total if total else 0.0,
                            "functions": dict(sorted(merged.items(), key=lambda kv: -kv[1]))}
    return cats


def finish_total(j: dict) -> None:
    """The census summed over processes: its share and its ranking recomputed from the sums."""
    j["copying_pct"] = 100.0 * j["copying_calls"] / j["calls"] if j["calls"] else 0.0
    j["functions"] = dict(sorted(j["functions"].items(), key=lambda kv: -kv[1]))
