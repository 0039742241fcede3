"""Helpers of the unit tests: the recorded fixtures and hand-built raw bpftrace output.

A module of its own name (not conftest.py, a name tests/ already uses) so tests can import it.
"""
import json
from pathlib import Path

from jvmos.analyzers import bpftrace

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FIXTURE_NAMES = ["blocking-java17", "socket-census", "randomrw-census"]


class Recording:
    """One recorded fixture: raw bpftrace output, manifest and the summary jvmos wrote."""

    def __init__(self, name: str):
        self.name = name
        self.dir = FIXTURES / name
        self.manifest = json.loads((self.dir / "manifest.json").read_text())
        self.summary = json.loads((self.dir / "summary.json").read_text())
        self.raw = bpftrace.parse_file(self.dir / "bpftrace.json")

    @property
    def addresses(self):
        return self.manifest["probes"]["addresses"]

    @property
    def jvms_by_pid(self):
        return {pid: info["jvm"]["home"] for pid, info in self.manifest["processes"].items()
                if info.get("jvm")}

    @property
    def costs(self):
        return self.summary["constants"]

    def rebuild(self, **overrides):
        from jvmos.analyzers import summary as summ
        kw = dict(wall_ns=self.summary["totals"]["wall_ns"], status=self.summary["status"],
                  addresses=self.addresses, costs=self.costs, jvms_by_pid=self.jvms_by_pid,
                  exit_code=self.summary["exit_code"])
        kw.update(overrides)
        return summ.build(self.raw, **kw)


_cache = {}


def recording(name: str) -> Recording:
    if name not in _cache:
        _cache[name] = Recording(name)
    return _cache[name]


def map_lines(maps: dict, lost=(), attached=None, printf=()):
    """Lines of `bpftrace -f json` output, one per map, as bpftrace prints them at END."""
    out = []
    if attached is not None:
        out.append(json.dumps({"type": "attached_probes", "data": {"probes": attached}}))
    for p in printf:
        out.append(json.dumps({"type": "printf", "data": p}))
    for n in lost:
        out.append(json.dumps({"type": "lost_events", "data": {"events": n}}))
    for name, value in maps.items():
        out.append(json.dumps({"type": "map", "data": {name: value}}))
    return out
