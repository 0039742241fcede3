"""θ: the whole CPU a JVM pays per use of an OS service, measured in place by dose-response.

Where C_os's constants price the OS's part of one use (microbenchmarks, probed), θ prices what
a change that removes the use saves: the kernel's part, libc's and the JVM's own together. It
is fitted on jvmos's request server (workloads/java/io Intervene): the dose of one service per
window of n requests is varied (for connections: a new connection every K requests, K = 1, 2,
4 and never), the server's CPU per window is read from its CPU clock (less its JIT threads'),
and θ is the slope of CPU against uses.

This module holds the arithmetic only (jvmos/insitu.py measures):
  * the order of the doses in a server: rounds of every dose, each round the reverse of the
    one before (a dose early in one round is late in the next);
  * per server, the least-squares slope of window CPU on the count of uses (numpy), and the
    condition number of the design [1, count];
  * across servers (the unit: windows of one JVM are not independent), the mean slope with its
    Student t interval;
  * the model error, by leaving one dose out: each non-baseline dose's effect (its mean CPU
    less the baseline dose's) predicted from the slope fitted without it, relative to the
    observed effect; the mean square of those errors beyond their own sampling noise is
    combined in quadrature with θ's standard error;
  * a prediction: uses removed x θ, its interval θ's (model error included).
"""
import hashlib
import json
import math
import random
from typing import Dict, List, Optional, Sequence

import numpy as np
from scipy import stats as st


def sha256_of(obj) -> str:
    """The sha256 of a JSON value, keys sorted: the name of a run or of θ itself."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":"))
                          .encode()).hexdigest()


def dose_order(doses: Sequence[str], rounds: int, seed: int) -> List[str]:
    """`rounds` rounds of every dose, the first in an order drawn from the seed, each next
    round reversed: every dose has as many early places as late ones over two rounds."""
    first = list(doses)
    random.Random(seed).shuffle(first)
    out = []
    for r in range(rounds):
        out += first if r % 2 == 0 else first[::-1]
    return out


def slope(xs: Sequence[float], ys: Sequence[float]) -> dict:
    """Least squares y = a + b x (numpy), with the condition number of the design [1, x]
    with each column scaled to unit length (so that it measures how nearly the columns are
    collinear, not the unit the counts are in)."""
    x, y = np.asarray(xs, float), np.asarray(ys, float)
    if len(set(xs)) < 2:
        raise ValueError("a slope needs two different counts")
    design = np.column_stack([np.ones_like(x), x])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    scaled = design / np.linalg.norm(design, axis=0)
    return {"intercept": float(coef[0]), "slope": float(coef[1]),
            "condition_number": float(np.linalg.cond(scaled))}


def _mean_by_dose(windows: List[dict]) -> Dict[str, dict]:
    by: Dict[str, dict] = {}
    for w in windows:
        d = by.setdefault(w["dose"], {"xs": [], "ys": []})
        d["xs"].append(w["uses"])       # equal within a dose, except where the kernel counts
        d["ys"].append(w["cpu_ns"])     # them (writes, page faults): then their mean
    return {k: {"x": sum(v["xs"]) / len(v["xs"]), "y": sum(v["ys"]) / len(v["ys"])}
            for k, v in by.items()}


def loo_errors(servers: List[List[dict]], baseline: str) -> List[dict]:
    """Leave one dose out: for each non-baseline dose, the slope fitted (per server, then
    averaged) on the other doses predicts its effect over the baseline. Returns, per dose, the
    relative error of that prediction against the observed effect (averaged over servers), and
    the sampling noise of the observed effect alone (the servers' spread of it / sqrt(servers),
    relative to the prediction; the prediction's own noise is left out, so the model error
    beyond it is, if anything, overstated)."""
    per = [_mean_by_dose(ws) for ws in servers]
    doses = [d for d in per[0] if d != baseline]
    out = []
    for d in doses:
        slopes, obs, xs = [], [], []
        for m in per:
            rest = [k for k in m if k != d]
            slopes.append(slope([m[k]["x"] for k in rest], [m[k]["y"] for k in rest])["slope"])
            obs.append(m[d]["y"] - m[baseline]["y"])
            xs.append(m[d]["x"] - m[baseline]["x"])
        pred = sum(slopes) / len(slopes) * (sum(xs) / len(xs))
        o = sum(obs) / len(obs)
        sd = math.sqrt(sum((x - o) ** 2 for x in obs) / (len(obs) - 1)) if len(obs) > 1 else 0.0
        out.append({"dose": d, "predicted_effect_ns": pred, "observed_effect_ns": o,
                    "relative_error": (o - pred) / pred if pred else None,
                    "sampling_se_relative": sd / math.sqrt(len(obs)) / abs(pred)
                    if pred else None})
    return out


def model_error(loo: List[dict]) -> float:
    """The model's relative error beyond sampling noise: the mean square of the leave-one-
    dose-out errors less the mean square of their sampling standard errors, floored at 0 (an
    error no larger than its own noise is no evidence of a model that misses)."""
    rows = [e for e in loo if e["relative_error"] is not None]
    if not rows:
        return 0.0
    ms = sum(e["relative_error"] ** 2 for e in rows) / len(rows)
    noise = sum(e["sampling_se_relative"] ** 2 for e in rows) / len(rows)
    return math.sqrt(max(0.0, ms - noise))


def fit(servers: List[List[dict]], baseline: str, level: float = 0.95) -> dict:
    """θ from the windows of each server (each window: dose, uses, cpu_ns): the mean of the
    servers' slopes, its t interval, the leave-one-dose-out model error beyond noise, and the
    interval with the model error combined in quadrature (ns per use), on Welch-Satterthwaite
    degrees of freedom (servers - 1 for the slopes, the left-out doses for the model error)."""
    if len(servers) < 2:
        raise ValueError("θ needs two servers or more (the unit of its interval)")
    fits = [slope([w["uses"] for w in ws], [w["cpu_ns"] for w in ws]) for ws in servers]
    b = [f["slope"] for f in fits]
    n = len(b)
    m = sum(b) / n
    sd = math.sqrt(sum((x - m) ** 2 for x in b) / (n - 1))
    se = sd / math.sqrt(n)
    loo = loo_errors(servers, baseline)
    model_rel = model_error(loo)
    k = len([e for e in loo if e["relative_error"] is not None])
    va, vb = se ** 2, (m * model_rel) ** 2
    se_all = math.sqrt(va + vb)
    den = va * va / (n - 1) + (vb * vb / k if k and vb else 0.0)
    df_all = (va + vb) ** 2 / den if den else float(n - 1)
    t = float(st.t.ppf(0.5 + level / 2, n - 1))
    t_all = float(st.t.ppf(0.5 + level / 2, df_all))
    return {"ns_per_use": m, "ci_ns": [m - t * se, m + t * se],
            "ci_with_model_error_ns": [m - t_all * se_all, m + t_all * se_all], "se_ns": se,
            "se_with_model_error_ns": se_all, "df": df_all, "df_slopes": n - 1,
            "level": level, "server_slopes_ns": b, "model_error_relative": model_rel,
            "leave_one_dose_out": loo,
            "condition_number_max": max(f["condition_number"] for f in fits),
            "method": f"mean of {n} servers' least-squares slopes (numpy), Student t "
                      f"({n - 1} df); model error: leave one dose out, the errors' mean square "
                      f"beyond their sampling noise, combined in quadrature "
                      f"(Welch-Satterthwaite df {df_all:.1f})"}


def predict(removed: float, theta: dict) -> dict:
    """The whole saving of removing `removed` uses, ns, with θ's interval (model error
    included)."""
    lo, hi = theta["ci_with_model_error_ns"]
    ends = sorted([removed * lo, removed * hi])
    return {"removed": removed, "predicted_ns": removed * theta["ns_per_use"],
            "predicted_ci_ns": ends, "predicted_se_ns": abs(removed) *
            theta["se_with_model_error_ns"], "predicted_df": theta["df"],
            "interval": f"{theta['level']:.0%}, θ's interval with its model error"}


def combine(parts: List[dict], level: float = 0.95) -> dict:
    """The whole saving of a change that removes several kinds of use at once: the sum of
    each kind's prediction (predict()), its standard error the root of the sum of their
    squares (the θ are fitted on different servers: independent), on Welch-Satterthwaite
    degrees of freedom, and its interval at `level`."""
    mean = sum(p["predicted_ns"] for p in parts)
    var = sum(p["predicted_se_ns"] ** 2 for p in parts)
    den = sum(p["predicted_se_ns"] ** 4 / p["predicted_df"] for p in parts
              if p["predicted_se_ns"] and p["predicted_df"])
    df = var * var / den if den else float("inf")
    se = math.sqrt(var)
    t = float(st.t.ppf(0.5 + level / 2, df)) if math.isfinite(df) else \
        float(st.norm.ppf(0.5 + level / 2))
    return {"removed": None, "predicted_ns": mean, "predicted_ci_ns": [mean - t * se,
                                                                       mean + t * se],
            "predicted_se_ns": se, "predicted_df": df, "parts": parts,
            "interval": f"{level:.0%}, the θ's intervals with their model errors, combined "
                        f"as independent (Welch-Satterthwaite df {df:.1f}); the counts taken "
                        f"as exact, and what θ's transfer to another program may share "
                        f"between the θ left out: too narrow, if anything"}


def stale(theta: Optional[dict], jdk: Optional[str]) -> Optional[str]:
    """Why θ cannot price a recording of this JDK (None when it can); JDK homes compared after
    resolving links."""
    import os
    if not theta:
        return "no θ on this machine: run 'jvmos calibrate --in-situ'"
    if jdk and theta.get("jdk") and os.path.realpath(theta["jdk"]) != os.path.realpath(jdk):
        return f"θ was fitted on {theta['jdk']}, not this recording's {jdk}"
    return None


def _jdk_key(jdk: Optional[str]) -> str:
    import os
    return os.path.realpath(jdk) if jdk else ""


def of(platform: Optional[dict], what_if: str, jdk: Optional[str] = None) -> Optional[dict]:
    """θ for a what-if: the latest ("theta") when it was fitted on this JDK or no other JDK's
    is kept; else the one kept for this JDK ("theta_by_jdk": each other JDK's latest); else the
    latest, which stale() then names as another JDK's. Each θ is stored once."""
    p = platform or {}
    latest = (p.get("theta") or {}).get(what_if)
    if jdk and not (latest and _jdk_key(latest.get("jdk")) == _jdk_key(jdk)):
        t = ((p.get("theta_by_jdk") or {}).get(what_if) or {}).get(_jdk_key(jdk))
        if t:
            return t
    return latest


def keep(platform: dict, rec: dict) -> None:
    """θ stored as its what-if's latest; the latest it replaces, if fitted on another JDK,
    is kept as that JDK's (under "theta_by_jdk"), so that each JDK keeps its own."""
    w = rec["what_if"]
    by = platform.setdefault("theta_by_jdk", {}).setdefault(w, {})
    old = (platform.get("theta") or {}).get(w)
    if old and _jdk_key(old.get("jdk")) != _jdk_key(rec.get("jdk")):
        by[_jdk_key(old.get("jdk"))] = old
    by.pop(_jdk_key(rec.get("jdk")), None)
    platform.setdefault("theta", {})[w] = rec


def all_of(platform: Optional[dict], what_if: str) -> List[dict]:
    """Every stored θ of a what-if: the latest first, then each other JDK's."""
    p = platform or {}
    out = [t for t in [(p.get("theta") or {}).get(what_if)] if t]
    out += [t for t in ((p.get("theta_by_jdk") or {}).get(what_if) or {}).values() if t]
    return out
