"""Small statistics: least-squares lines, means with 95% intervals (Student's t), and for the
campaign experiments (seed 000) confidence intervals at any level, Welch's two-sample t-test
and the percent change of a response time (scipy.stats does the distributions)."""
import math
from typing import Optional, Sequence, Tuple

# two-sided 95% quantiles of Student's t for 1..30 degrees of freedom
_T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def t95(df: int) -> float:
    if df <= 0:
        return float("inf")
    return _T95[df - 1] if df <= len(_T95) else 1.96


def mean_ci(xs: Sequence[float]) -> Tuple[float, float, float]:
    """(mean, low, high) of the 95% interval of the mean; the interval is the mean alone for n=1."""
    n = len(xs)
    if n == 0:
        raise ValueError("no values")
    m = sum(xs) / n
    if n == 1:
        return m, m, m
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    h = t95(n - 1) * sd / math.sqrt(n)
    return m, m - h, m + h


def linfit(xs: Sequence[float], ys: Sequence[float]) -> Tuple[float, float]:
    """Least-squares y = a + b x; returns (a, b)."""
    n = len(xs)
    if n < 2:
        raise ValueError("need two points for a line")
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        raise ValueError("all x equal")
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - b * mx, b


def floored_notes(model: dict) -> list:
    """What floor_fit did to a model, one phrase per floored cost ("ns_per_byte fitted -0.001,
    floored at 0"): printed beside the model wherever it is shown or used."""
    return [f"{k} fitted {model[k + '_fit']:.3g}, floored at 0"
            for k in ("ns_per_call", "ns_per_byte") if model.get(k + "_floored")]


def floor_fit(model: dict, key: str) -> dict:
    """A fitted cost below 0 (noise around a small intercept or slope) is not a cost: it is
    floored at 0, flagged (`<key>_floored`), its fit kept (`<key>_fit`, and its interval), and
    its interval clipped to [0, ...] so that it contains the floored value."""
    v = model[key]
    if v is None or v >= 0:
        return model
    model[f"{key}_fit"] = v
    model[key] = 0.0
    model[f"{key}_floored"] = True
    ci = model.get(f"{key}_ci95")
    if ci:
        model[f"{key}_fit_ci95"] = list(ci)
        model[f"{key}_ci95"] = [max(ci[0], 0.0), max(ci[1], 0.0)]
    return model


def summary(xs: Sequence[float], level: float = 0.99) -> dict:
    """n, mean, sample standard deviation (sd, n - 1 in the denominator), seed 000's standard
    deviation (sigma, its equation 7: n in the denominator; what its error bars show) and the
    `level` confidence interval of the mean (Student's t with n - 1 degrees of freedom, from the
    sample sd; for n = 1 the interval and sd are unknown: None, sigma 0)."""
    from scipy import stats as st
    n = len(xs)
    if n == 0:
        raise ValueError("no values")
    m = sum(xs) / n
    if n == 1:
        return {"n": 1, "mean": m, "sd": None, "sigma": 0.0, "level": level, "ci": None}
    if max(xs) == min(xs):
        # no spread at all (the float mean of equal values can differ from them by an ulp,
        # which would leave a variance of 1e-34 and an interval of rounding noise)
        return {"n": n, "mean": xs[0], "sd": 0.0, "sigma": 0.0, "level": level,
                "ci": [xs[0], xs[0]]}
    ss = sum((x - m) ** 2 for x in xs)
    sd, sigma = math.sqrt(ss / (n - 1)), math.sqrt(ss / n)
    if sd == 0:
        return {"n": n, "mean": m, "sd": 0.0, "sigma": 0.0, "level": level, "ci": [m, m]}
    lo, hi = st.t.interval(level, n - 1, loc=m, scale=sd / math.sqrt(n))
    return {"n": n, "mean": m, "sd": sd, "sigma": sigma, "level": level,
            "ci": [float(lo), float(hi)]}


def welch(xs: Sequence[float], ys: Sequence[float], alpha: float = 0.01) -> dict:
    """Welch's two-sample t-test (unequal variances) of H0: equal means, two-sided: t, its
    Welch-Satterthwaite degrees of freedom, p, and whether H0 is rejected at alpha. Two
    samples without any variance: equal means are not rejected, different ones are (p 0)."""
    from scipy import stats as st
    if len(xs) < 2 or len(ys) < 2:
        raise ValueError("Welch's t-test needs two values in each sample")
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    vx = sum((x - mx) ** 2 for x in xs) / (len(xs) - 1)
    vy = sum((y - my) ** 2 for y in ys) / (len(ys) - 1)
    a, b = vx / len(xs), vy / len(ys)
    if max(xs) == min(xs) and max(ys) == min(ys):
        same = xs[0] == ys[0]
        return {"t": None, "df": None, "p": 1.0 if same else 0.0, "alpha": alpha,
                "reject": not same, "note": "no variance in either sample"}
    r = st.ttest_ind(xs, ys, equal_var=False)
    df = (a + b) ** 2 / (a * a / (len(xs) - 1) + b * b / (len(ys) - 1))
    return {"t": float(r.statistic), "df": df, "p": float(r.pvalue), "alpha": alpha,
            "reject": bool(r.pvalue < alpha)}


def pct_change(r_p: float, r_q: float) -> float:
    """Seed 000's equations 2-3: the change in response time when primitive q replaces p,
    as a percentage of p's: 100 (R(q) - R(p)) / R(p)."""
    if r_p == 0:
        raise ValueError("the reference response time is 0")
    return 100.0 * (r_q - r_p) / r_p


def welch_diff_ci(xs: Sequence[float], ys: Sequence[float], level: float = 0.95) -> dict:
    """mean(xs) - mean(ys) with its Welch t interval (unequal variances, Welch-Satterthwaite
    degrees of freedom; scipy's ttest_ind(equal_var=False).confidence_interval) and the
    two-sided p of H0: equal means. Needs two values in each sample."""
    from scipy import stats as st
    if len(xs) < 2 or len(ys) < 2:
        raise ValueError("a Welch interval needs two values in each sample")
    d = sum(xs) / len(xs) - sum(ys) / len(ys)
    if max(xs) == min(xs) and max(ys) == min(ys):
        return {"diff": d, "ci": [d, d], "p": 1.0 if d == 0 else 0.0, "n": [len(xs), len(ys)],
                "level": level, "method": "Welch t (no variance in either sample)"}
    r = st.ttest_ind(xs, ys, equal_var=False)
    ci = r.confidence_interval(confidence_level=level)
    return {"diff": d, "ci": [float(ci.low), float(ci.high)], "p": float(r.pvalue),
            "n": [len(xs), len(ys)], "level": level, "method": "Welch t"}


def paired_diff_ci(diffs: Sequence[float], level: float = 0.90) -> dict:
    """The mean of paired differences with its Student t interval (n - 1 degrees of freedom) at
    `level`, and its standard error. Needs two pairs."""
    from scipy import stats as st
    n = len(diffs)
    if n < 2:
        raise ValueError("a paired interval needs two pairs")
    m = sum(diffs) / n
    sd = math.sqrt(sum((d - m) ** 2 for d in diffs) / (n - 1))
    se = sd / math.sqrt(n)
    h = float(st.t.ppf(0.5 + level / 2, n - 1)) * se
    return {"mean": m, "ci": [m - h, m + h], "se": se, "sd": sd, "n": n, "level": level,
            "method": f"paired t, {n} pairs ({n - 1} df)"}


def ratio_ci(diffs: Sequence[float], predicted: float, predicted_se: float,
             level: float = 0.90, predicted_df: float = math.inf,
             counts: Optional[Sequence[float]] = None) -> Optional[dict]:
    """measured / predicted, where measured is the mean of paired differences and predicted
    = count x a constant whose standard error is predicted_se (on predicted_df degrees of
    freedom: the calibration's trials - 1): the ratio with its `level` interval by the delta
    method (se_R^2 = se_m^2 / P^2 + R^2 se_P^2 / P^2), Student t on the Welch-Satterthwaite
    degrees of freedom of the two parts. When the count was itself measured in each pair
    (`counts`, per pair), the measured part is that of a ratio estimator: se_m from the
    residuals d_i - R P c_i / mean(c) (a count that moves with the difference narrows it, one
    that does not widens it). None when the prediction is 0 (no ratio)."""
    from scipy import stats as st
    if not predicted:
        return None
    d = paired_diff_ci(diffs, level)
    n = d["n"]
    r = d["mean"] / predicted
    se_m = d["se"]
    if counts is not None:
        cbar = sum(counts) / len(counts)
        if cbar:
            e = [x - r * predicted * c / cbar for x, c in zip(diffs, counts)]
            se_m = math.sqrt(sum(v * v for v in e) / (n - 1)) / math.sqrt(n)
    a = se_m ** 2 / predicted ** 2
    b = r ** 2 * predicted_se ** 2 / predicted ** 2
    se = math.sqrt(a + b)
    den = a * a / (n - 1) + (b * b / predicted_df if predicted_df < math.inf else 0.0)
    df = (a + b) ** 2 / den if den > 0 else float(n - 1)
    h = float(st.t.ppf(0.5 + level / 2, df)) * se
    return {"ratio": r, "ci": [r - h, r + h], "se": se, "df": df, "level": level,
            "method": f"delta method: paired t of the measured differences ({n} pairs"
                      + ("; the count measured per pair: ratio estimator" if counts else "")
                      + f") and the prediction's standard error, Welch-Satterthwaite df "
                        f"{df:.1f}"}


EQUIVALENCE = (0.8, 1.25)


def equivalence_verdict(ratio: Optional[dict], measured: dict, predicted: float,
                        bounds=EQUIVALENCE) -> dict:
    """Two one-sided tests at 5% each (a 90% interval) of measured/predicted against `bounds`:
    'confirmed' when the ratio's interval lies inside them, 'refuted' when it lies wholly
    outside, 'inconclusive' otherwise. A prediction of about 0 (below 1% of the measured mean)
    while the measured saving's interval excludes 0 is 'missing term': the model lacks a term,
    which no ratio can say."""
    lo_b, hi_b = bounds
    sig = not (measured["ci"][0] <= 0 <= measured["ci"][1])
    if ratio is None or abs(predicted) < 0.01 * abs(measured["mean"]):
        kind = "missing term" if sig else "inconclusive"
        return {"verdict": kind, "significant": sig,
                "why": ("the model predicts about 0 while the change saved time: a term is "
                        "missing" if sig else "nothing predicted and nothing shown")}
    lo, hi = ratio["ci"]
    if lo_b <= lo and hi <= hi_b:
        kind = "confirmed"
    elif hi < lo_b or lo > hi_b:
        kind = "refuted"
    else:
        kind = "inconclusive"
    return {"verdict": kind, "significant": sig,
            "why": f"the ratio's {ratio['level']:.0%} interval [{lo:.2f}, {hi:.2f}] against "
                   f"[{lo_b}, {hi_b}]"}


def pairs_needed(sd_diff: float, predicted: float, predicted_rel_se: float,
                 half_width: float = 0.2, level: float = 0.90, cap: int = 200,
                 predicted_df: float = math.inf) -> Optional[int]:
    """The number of pairs for which a ratio of 1 would have a `level` interval of half-width
    `half_width` or less (the equivalence bounds' nearer distance from 1), from a pilot's sd of
    the paired differences and the prediction's relative standard error (on predicted_df
    degrees of freedom, combined by Welch-Satterthwaite as ratio_ci does). None when even
    `cap` pairs would not do (the prediction's own uncertainty is too wide, say) or nothing is
    predicted."""
    from scipy import stats as st
    if not predicted:
        return None
    b = predicted_rel_se ** 2
    for n in range(2, cap + 1):
        a = sd_diff ** 2 / n / predicted ** 2
        den = a * a / (n - 1) + (b * b / predicted_df if predicted_df < math.inf else 0.0)
        df = (a + b) ** 2 / den if den > 0 else float(n - 1)
        if float(st.t.ppf(0.5 + level / 2, df)) * math.sqrt(a + b) <= half_width:
            return n
    return None
