"""Why held-out chat-virtual missed: the saving against the messages per user, from two
finished runs of `jvmos run held-out --only chat-virtual` that differ only in --messages (the
same rooms, servers, windows and θ). A post-hoc explanation, not a test: the verdict is the
pre-stated run's.

The saving per load is modelled as a + b x deliveries (deliveries = users x members of a room
x messages per user): b, the saving per delivery, is the difference of the two runs' mean
savings over the difference of their deliveries; a, the sessions' own saving (threads and
connections, no message), is the line taken back to zero deliveries. Each run's mean saving is
over its own server pairs, so the two are independent: standard errors combine in quadrature,
on Welch-Satterthwaite degrees of freedom (scipy), at 90%. a is set beside the θ prediction
the runs share.

  .venv/bin/python scripts/procedures/chat_messages_dose.py \\
      results/predictions/held-out-chat results/predictions/held-out-chat/messages-4
writes messages-dose.json and messages-dose.md into the first directory.
"""
import json
import math
import statistics
import sys
from pathlib import Path

from scipy import stats as st


def recorded(d: Path, arm: str) -> dict:
    """Futex calls and context switches in the run's one recorded load of an arm (threads
    layer, count mode: exact counts of one load, no interval)."""
    s = json.loads((d / f"recorded-{arm}" / "summary.json").read_text())
    csw = (s.get("totals") or {}).get("context_switches") or {}
    return {"futex": ((s.get("categories") or {}).get("sync") or {}).get("calls", 0),
            "context_switches": (csw.get("voluntary") or 0) + (csw.get("involuntary") or 0)}


def run(d: Path) -> dict:
    t = json.loads((d / "held-out.json").read_text())["tests"][0]
    x = t["analysis"]
    users = t["rooms"] * 20
    diffs = x["diffs_ns"]
    return {"dir": str(d), "messages": t["messages"], "deliveries": users * 20 * t["messages"],
            "mean_ns": statistics.mean(diffs), "se_ns": statistics.stdev(diffs) /
            math.sqrt(len(diffs)), "n": len(diffs), "predicted_ns":
            x["prediction"]["predicted_ns"], "theta_sha256": t["theta_sha256"],
            "recorded": {arm: recorded(d, arm) for arm in "AB"}}


def main(a_dir: str, b_dir: str) -> None:
    lo, hi = sorted((run(Path(a_dir)), run(Path(b_dir))), key=lambda r: r["deliveries"])
    if lo["theta_sha256"] != hi["theta_sha256"] or lo["predicted_ns"] != hi["predicted_ns"]:
        sys.exit("error: the two runs priced different θ or different counts")
    dx = hi["deliveries"] - lo["deliveries"]
    b = (hi["mean_ns"] - lo["mean_ns"]) / dx
    k = lo["deliveries"] / dx          # a = lo - b * lo_deliveries = (1 + k) lo - k hi
    a = (1 + k) * lo["mean_ns"] - k * hi["mean_ns"]
    va, vb = ((1 + k) * lo["se_ns"]) ** 2, (k * hi["se_ns"]) ** 2
    df_a = (va + vb) ** 2 / (va ** 2 / (lo["n"] - 1) + vb ** 2 / (hi["n"] - 1))
    se_b2 = (lo["se_ns"] ** 2 + hi["se_ns"] ** 2) / dx ** 2
    df_b = (lo["se_ns"] ** 2 + hi["se_ns"] ** 2) ** 2 / (
        lo["se_ns"] ** 4 / (lo["n"] - 1) + hi["se_ns"] ** 4 / (hi["n"] - 1))
    ta, tb = st.t.ppf(0.95, df_a), st.t.ppf(0.95, df_b)
    se_a = math.sqrt(va + vb)
    out = {"runs": [lo, hi], "extra_deliveries": dx, "extra_saving_ns": hi["mean_ns"] -
           lo["mean_ns"],
           "per_delivery_ns": b, "per_delivery_ci90_ns": [b - tb * math.sqrt(se_b2),
                                                          b + tb * math.sqrt(se_b2)],
           "sessions_ns": a, "sessions_ci90_ns": [a - ta * se_a, a + ta * se_a],
           "sessions_over_theta": a / lo["predicted_ns"],
           "sessions_over_theta_ci90": [(a - ta * se_a) / lo["predicted_ns"],
                                        (a + ta * se_a) / lo["predicted_ns"]],
           "df": {"sessions": df_a, "per_delivery": df_b},
           # what each extra delivery made the server do, from the recorded loads
           "per_extra_delivery": {arm: {k: (hi["recorded"][arm][k] - lo["recorded"][arm][k]) /
                                        dx for k in ("futex", "context_switches")}
                                  for arm in "AB"},
           "method": "two independent runs, saving = a + b x deliveries; Welch-Satterthwaite "
                     "df, 90%; θ's prediction taken as exact (its own 95% interval is ±2.6%); "
                     "two points cannot test the line itself; post hoc (an explanation, not a "
                     "test)"}
    d = Path(a_dir)
    (d / "messages-dose.json").write_text(json.dumps(out, indent=2) + "\n")
    r = lambda v: f"{v / 1e6:,.1f}"  # noqa: E731
    md = ["### The chat server's saving against its messages (post hoc, not a test)", "",
          "| messages per user | deliveries per load | measured saving, ms (mean of "
          "pairs) | θ's prediction, ms |", "|---|---|---|---|"]
    for x in (lo, hi):
        md.append(f"| {x['messages']} | {x['deliveries']:,} | {r(x['mean_ns'])} | "
                  f"{r(x['predicted_ns'])} |")
    md += ["", f"- {dx:,} more deliveries saved {r(out['extra_saving_ns'])} ms more: "
           f"{b / 1e3:.1f} µs per delivery [{out['per_delivery_ci90_ns'][0] / 1e3:.1f}, "
           f"{out['per_delivery_ci90_ns'][1] / 1e3:.1f}] (90%).",
           f"- Taken back to zero deliveries, the sessions alone saved {r(a)} ms "
           f"[{r(out['sessions_ci90_ns'][0])}, {r(out['sessions_ci90_ns'][1])}] (90%, "
           f"Welch df {df_a:.1f}): {out['sessions_over_theta']:.2f} "
           f"[{out['sessions_over_theta_ci90'][0]:.2f}, "
           f"{out['sessions_over_theta_ci90'][1]:.2f}] times θ's prediction.",
           "- Per extra delivery, in the one recorded load of each arm and run (threads "
           "layer, count mode; exact counts, no interval): platform threads "
           f"{out['per_extra_delivery']['A']['futex']:.2f} futex calls and "
           f"{out['per_extra_delivery']['A']['context_switches']:.2f} context switches; "
           f"virtual threads {out['per_extra_delivery']['B']['futex']:.2f} futex calls and "
           f"{out['per_extra_delivery']['B']['context_switches']:.2f} context switches.",
           f"- Method: {out['method']}."]
    (d / "messages-dose.md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
