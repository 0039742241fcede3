"""Every experiment measures into JSON and renders from it (issue 32): `jvmos run X --render
DIR` writes the tables again from a finished run's JSON, measuring nothing. Each committed
result re-renders with the same figures: every number of every row of every committed CSV is
found again in the same row (the labels of rows and columns may read differently where the
committed files were made by older code, and a newer table may add a column, a row at its end
or a file; no figure may change or go)."""
import contextlib
import csv
import io
import re
from collections import Counter
import shutil
import sys
from pathlib import Path

import pytest

from jvmos import JvmosError
from jvmos.experiments import EXPERIMENTS

ROOT = Path(__file__).resolve().parents[2]

# a committed result of each experiment (the directory a `jvmos run` wrote)
COMMITTED = {
    "blocking-io": "results/blocking-io",
    "jni-census": "results/jni-census",
    "threads": "results/threads",
    "memory": "results/memory",
    "serialization": "results/serialization",
    "overhead": "results/overhead",
    "interventions": "results/interventions",
    "accuracy": "results/accuracy",
    "heuristic": "results/heuristic",
    "tomcat": "results/tomcat",
    "chat": "results/chat",
    "ipc": "results/ipc",
    "matmul": "results/matmul",
    "predictions": "results/predictions",
    "agent-overhead": "results/agent-overhead",
    "probe-effect": "results/probe-effect/servers",
}
# experiments that wrote no committed result of their own, and why
NONE_COMMITTED = {
    "server": "the generic server experiment; tomcat and chat are its committed runs",
    "held-out": "its committed runs live under results/predictions (held-out.json)",
}


def _parse(name):
    return sys.modules[EXPERIMENTS[name].__module__].parse


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_every_experiment_has_render(name):
    a = _parse(name)(["--render", "/nonexistent"])
    assert a.render == "/nonexistent"
    assert name in COMMITTED or name in NONE_COMMITTED


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_render_of_no_run_is_one_clear_error(name, tmp_path):
    with pytest.raises(JvmosError):
        EXPERIMENTS[name](["--render", str(tmp_path)])


def _copy(src: Path, dst: Path) -> None:
    """The run's own files copied; its folders (recordings, repeats) linked, read only."""
    dst.mkdir()
    for p in src.iterdir():
        if p.is_dir():
            (dst / p.name).symlink_to(p)
        else:
            shutil.copy2(p, dst / p.name)


@pytest.mark.parametrize("name", sorted(COMMITTED))
def test_committed_results_render_with_the_same_numbers(name, tmp_path):
    src = ROOT / COMMITTED[name]
    out = tmp_path / "run"
    _copy(src, out)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert EXPERIMENTS[name](["--render", str(out)]) in (0, None)
    checked = 0
    for committed in sorted(src.glob("*.csv")):
        again = out / committed.name
        assert again.is_file(), f"{committed.name} was not written again"
        old = list(csv.reader(committed.open()))
        new = list(csv.reader(again.open()))
        assert len(new) >= len(old), f"{committed.name}: {len(old)} rows, now {len(new)}"
        for i in range(1, len(old)):            # row 0: the column labels
            had, has = _numbers(old[i][1:]), _numbers(new[i][1:])
            assert not (had - has), (committed.name, i, old[i][0], sorted((had - has).elements()))
            checked += sum(had.values())
    assert checked, f"no number checked in {src}"


NUMBER = re.compile(r"[-−]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _numbers(cells) -> Counter:
    """Every number in a row's cells (a figure may sit alone in its cell, or inside a
    formatted one: '-3.1% [-5.0, -1.2]'), as written."""
    return Counter(m.replace("−", "-").replace(",", "") for c in cells
                   for m in NUMBER.findall(c))
