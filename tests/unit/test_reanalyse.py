"""A committed recording reads back with this checkout's analyzers (scripts/reanalyse.py):
one the engine made (raw/engine.json decoded by the plan it ran) and one made before the
engine (raw/bpftrace.json, read by jvmos.analyzers.bpftrace). What the probes counted does
not depend on the platform file: every category's calls and bytes come out as committed."""
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("reanalyse", ROOT / "scripts" / "reanalyse.py")
reanalyse = importlib.util.module_from_spec(spec)
spec.loader.exec_module(reanalyse)

RUNS = {"engine": ROOT / "results/chat/repeats/runs/platform-20x20-r1",
        "bpftrace": ROOT / "results/accuracy/after-start-signal/runs/blocking-io-count"}


@pytest.mark.parametrize("kind", sorted(RUNS))
def test_a_committed_recording_reads_back_with_its_counts(kind):
    run = RUNS[kind]
    assert (run / "raw" / ("engine.json" if kind == "engine" else "bpftrace.json")).is_file()
    # no platform file: the times go unknown, the counts do not depend on one
    made = (reanalyse.rebuild_engine if kind == "engine" else reanalyse.rebuild)(run, {})
    committed = json.loads((run / "summary.json").read_text())
    checked = 0
    for name, c in committed["categories"].items():
        for field in ("calls", "bytes"):
            if isinstance(c.get(field), int):
                assert made["categories"][name][field] == c[field], (name, field)
                checked += 1
    assert checked >= 4
    assert set(made["by_pid"]) == set(committed["by_pid"])
