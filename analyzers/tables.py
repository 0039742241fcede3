"""Tables as Markdown and CSV, and human formatting of the summary's figures."""
import csv
import io
from typing import List, Optional, Sequence


def fmt_ns(ns: Optional[float]) -> str:
    if ns is None:
        return "—"
    ns = float(ns)
    for unit, div in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(ns) >= div:
            return f"{ns / div:.3g} {unit}" if abs(ns) / div < 100 else f"{ns / div:.1f} {unit}"
    return f"{ns:.0f} ns"


def fmt_count(n) -> str:
    if n is None:
        return "—"
    return f"{int(n):,}"


def fmt_bytes(n) -> str:
    if n is None:
        return "—"
    n = float(n)
    for unit, div in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= div:
            x = n / div
            return (f"{x:.3g}" if x < 100 else f"{x:.0f}") + f" {unit}"
    return f"{int(n)} B"


class Table:
    def __init__(self, title: str, headers: Sequence[str]):
        self.title = title
        self.headers = list(headers)
        self.rows: List[List[str]] = []      # formatted, for Markdown
        self.raw_rows: List[list] = []       # raw values, for CSV

    def add(self, formatted: Sequence, raw: Optional[Sequence] = None):
        for what, row in (("cells", formatted), ("raw values", raw)):
            if row is not None and len(row) != len(self.headers):
                # a CSV column shifted under the wrong header would be read as another figure
                raise ValueError(f"table '{self.title[:60]}': {len(row)} {what} for "
                                 f"{len(self.headers)} columns")
        self.rows.append([str(x) for x in formatted])
        self.raw_rows.append(list(raw if raw is not None else formatted))

    def markdown(self) -> str:
        out = [f"### {self.title}", "", "| " + " | ".join(self.headers) + " |",
               "|" + "|".join("---" for _ in self.headers) + "|"]
        out += ["| " + " | ".join(r) + " |" for r in self.rows]
        return "\n".join(out) + "\n"

    def csv(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(self.headers)
        for r in self.raw_rows:
            w.writerow(["" if x is None else x for x in r])
        return buf.getvalue()


def fmt_time(c: dict) -> str:
    """A figure's time as the table shows it: unknown when it could not be computed (not
    calibrated), and a floored value with the interval that holds it."""
    t = c.get("time_ns")
    if t is None:
        return "unknown" if c.get("time_raw_ns") is not None or c.get("basis") else "—"
    text = fmt_ns(t)
    ci = c.get("time_ci95_ns")
    if c.get("floored"):
        text += " (floored" + (f"; 95%: {fmt_ns(ci[0])} to {fmt_ns(ci[1])}" if ci else "") + ")"
    return text


def method_text(c: dict) -> str:
    """What a category's figures are: counted by probes, or estimated (calls too, when the
    calls were not probed), and whether the probe effect was subtracted."""
    method = c.get("method", "")
    if c.get("calls_method") == "estimated":
        method += " (calls estimated, not probed)"
    elif c.get("calls_method") == "probed":
        method += " (calls probed)"
    if c.get("corrected"):
        method += ", corrected" + (" (correction dominates)" if c.get("correction_dominates")
                                   else "")
        if c.get("floored"):
            method += ", floored at 0 somewhere"
    elif c.get("corrected") is False and c.get("time_raw_ns") is not None:
        method += ", not corrected: probe costs not calibrated"
    return method


def category_table(summary: dict, title: str = "Categories") -> Table:
    """Each category's figures, its time with what kind of time it is: on-CPU, a span with
    blocking included (split into blocked and on-CPU where the threads layer saw the blocking),
    or waiting."""
    from jvmos.catalogue import time_kind
    t = Table(title, ["category", "calls", "bytes", "time", "time kind",
                      "off-CPU in it (blocked, preempted)", "on-CPU (est.)", "measured raw",
                      "method"])
    for name, c in summary.get("categories", {}).items():
        method = method_text(c)
        raw = c.get("time_raw_ns")
        span = time_kind(name).startswith("span")
        split = c.get("blocked_ns") is not None
        off = (c["blocked_ns"] + c.get("preempted_in_it_ns", 0)) if split else None
        blocked = fmt_ns(off) if split else ("not split (no threads layer)" if span else "")
        on_cpu = (fmt_ns(c["on_cpu_ns"]) + (" (floored)" if c.get("on_cpu_floored") else "")
                  if split else "")
        t.add([name, fmt_count(c.get("calls")), fmt_bytes(c.get("bytes")),
               fmt_time(c), time_kind(name), blocked, on_cpu, fmt_ns(raw), method],
              [name, c.get("calls"), c.get("bytes"), c.get("time_ns"), time_kind(name),
               off, c.get("on_cpu_ns"), raw, method])
    return t
