"""Small statistics: least-squares lines and means with 95% intervals (Student's t)."""
import math
from typing import Sequence, Tuple

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
