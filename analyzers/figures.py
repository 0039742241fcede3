"""Figures where a table is hard to read (matplotlib, written as PNG and SVG)."""
from pathlib import Path
from typing import Dict

from jvmos.analyzers.tables import fmt_bytes

PATH_COLOURS = {"jni": "#d95f02", "nio": "#1b9e77", "other": "#9e9e9e"}


def bytes_by_path(tasks: Dict[str, dict], out_stem: Path, title: str) -> list:
    """One horizontal bar per task: the share of its I/O bytes that took each path."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(tasks)
    fig, ax = plt.subplots(figsize=(9, 0.8 * len(names) + 1.6))
    for i, name in enumerate(names):
        paths = tasks[name]["paths"]
        total = sum(paths[p]["bytes"] for p in PATH_COLOURS) or 1
        left = 0.0
        for p, colour in PATH_COLOURS.items():
            share = 100.0 * paths[p]["bytes"] / total
            ax.barh(i, share, left=left, color=colour, label=p if i == 0 else None)
            if share >= 8:
                ax.text(left + share / 2, i, fmt_bytes(paths[p]["bytes"]), ha="center",
                        va="center", fontsize=8, color="white")
            left += share
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels([tasks[n].get("short", n) for n in names])
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of I/O syscall bytes (%)")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, -0.45 if len(names) < 4 else -0.3),
              ncol=3, frameon=False)
    return save(fig, out_stem)


def save(fig, stem: Path) -> list:
    """Writes a figure as STEM.png and STEM.svg, closes it, returns the two paths."""
    import matplotlib.pyplot as plt
    fig.tight_layout()
    files = []
    for ext in ("png", "svg"):
        f = stem.with_suffix("." + ext)
        fig.savefig(f, dpi=120)
        files.append(f)
    plt.close(fig)
    return files
