"""The compiled mem layer (`jvmos record --layers mem`) on deterministic C
workloads, with bpftrace as the independent witness: it counts the same events of the same
program (a uniquely named copy: its comm) in maps of its own, and the counts must agree.

  - memcal (102,400 mallocs, one 64 MiB mmap/munmap, 16,384 first touches, arena growth and
    trimming through sbrk/brk): allocator calls, memory calls per function or syscall, at
    --scope process (libc's wrappers) and --scope host (the syscall tracepoints);
  - probecal --mode madvise in --mode count: every madvise counted, none timed;
and the figures mem.bt defines that follow from the counts: the bytes of the 64 MiB mapping,
the growth timeline (a page per fault plus the break's growth; the bytes asked of malloc),
the probe effect of every kind known (the engine's own calibration).

Page faults are compared with a margin: the process is traced from the moment jvmos lets it
go at its gate, a few instructions of Python before the exec that gives it the name the
witness filters on, and a fault there is the engine's and not the witness's.
"""
import json
import secrets
import shutil
from pathlib import Path

import pytest

from conftest import bpftrace_witness, stop_witness, ROOT, can_trace, run_jvmos

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")]

MEMCAL = ROOT / "workloads/c/build/memcal"
PROBECAL = ROOT / "workloads/c/build/probecal"
ENGINE = ROOT / "build/jvmos-engine"
OBJECT = ROOT / "build/probes/mem.bpf.o"
MALLOCS = 400 * 256            # memcal's mallocs per trial
REGION = 64 << 20              # memcal's mapping per trial
GATE_FAULTS = 8                # page faults the gate may take between its release and exec


@pytest.fixture(autouse=True)
def _built():
    if not ENGINE.exists() or not OBJECT.exists():
        pytest.fail("the engine or build/probes/mem.bpf.o is not built: make build")


def unique_copy(tmp_path: Path, prog: Path) -> Path:
    p = tmp_path / f"jm{secrets.token_hex(4)}"
    shutil.copy(prog, p)
    return p


def libc() -> str:
    from jvmos.jdk import libc_of
    return str(libc_of(None))


class Witness:
    """bpftrace counting each probe of {map name: probe} into a map of its own, for one comm,
    attached before the workload starts."""

    def __init__(self, tmp_path: Path, comm: str, probes: dict):
        self.out = tmp_path / f"witness-{secrets.token_hex(3)}.json"
        text = "\n".join(f'{p} /comm == "{comm}"/ {{ @{name} = count(); }}'
                         for name, p in probes.items())
        self.names = list(probes)
        self.p = bpftrace_witness(self.out, text)

    def stop(self) -> dict:
        stop_witness(self.p)
        seen = {n: 0 for n in self.names}
        for line in self.out.read_text().splitlines():
            rec = json.loads(line)
            if rec.get("type") == "map":
                for k, v in rec["data"].items():
                    if k.lstrip("@") in seen:
                        seen[k.lstrip("@")] = v
        return seen


def record(tmp_path: Path, args, *cmd) -> dict:
    out = tmp_path / f"rec-{secrets.token_hex(3)}"
    r = run_jvmos(["record", "--layers", "mem", *args, "--out", str(out),
                   "--", *map(str, cmd)], timeout=600)
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["status"] == "complete", s.get("status_reason")
    assert len(s["by_pid"]) == 1
    return s


def only_pid(s: dict) -> dict:
    return next(iter(s["by_pid"].values()))


def check_probe_effect(s: dict, kinds) -> None:
    t = s["totals"]
    assert not t["probe_overhead_unknown_kinds"], t["probe_overhead_unknown_kinds"]
    assert t["probe_overhead_ns"] is not None and t["probe_overhead_ns"] > 0
    for k in kinds:
        cost = t["probe_cost_per_hit_ns"][k]
        assert cost["ns"] > 0 and "mem.bpf.c" in cost["source"], (k, cost)


@pytest.mark.parametrize("scope", ["process", "host"])
def test_memcal_agrees_with_bpftrace(platform_file, tmp_path, scope):
    prog = unique_copy(tmp_path, MEMCAL)
    lib = libc()
    probes = {"malloc": f"uprobe:{lib}:malloc",
              "faults": "tracepoint:exceptions:page_fault_user"}
    vm = ("mmap", "munmap", "sbrk") if scope == "process" else \
        ("mmap", "munmap", "mprotect", "brk")
    for f in vm:
        probes[f] = (f"uprobe:{lib}:{f}" if scope == "process"
                     else f"tracepoint:syscalls:sys_enter_{f}")
    w = Witness(tmp_path, prog.name, probes)
    try:
        s = record(tmp_path, ["--scope", scope], prog, "--trials", "1")
    finally:
        seen = w.stop()
    p = only_pid(s)
    mc, vc = p["categories"]["malloc"], p["categories"]["vm"]
    assert mc["functions"]["malloc"]["calls"] == seen["malloc"] > MALLOCS, (mc, seen)
    assert mc["timed_calls"] == mc["calls"]
    sc = vc["syscalls"]
    for f in vm:
        assert sc.get(f, {}).get("calls", 0) == seen[f], (f, sc.get(f), seen)
    assert seen["sbrk" if scope == "process" else "brk"] > 0
    assert seen["faults"] >= REGION // 4096
    assert 0 <= vc["page_faults"] - seen["faults"] <= GATE_FAULTS, (vc["page_faults"], seen)
    # memcal's one mapping and its unmapping (at --scope host the loader's are there too)
    if scope == "process":
        assert sc["mmap"]["bytes"] == sc["munmap"]["bytes"] == REGION
    else:
        assert sc["mmap"]["bytes"] >= REGION and sc["munmap"]["bytes"] >= REGION
    # the growth timeline: a page per fault and the break's growth; the bytes asked of malloc
    grow = p["memory_growth"]
    brk = sc["sbrk" if scope == "process" else "brk"]["bytes"]
    assert brk > 0
    assert sum(b for _, b in grow["vm_bytes"]) == 4096 * vc["page_faults"] + brk
    assert sum(b for _, b in grow["malloc_bytes"]) == mc["bytes"]
    # every memory call made outside the allocator is timed on its own (memcal's mapping)
    assert sc["mmap"]["time_hits"] >= 1 and sc["munmap"]["time_hits"] >= 1
    kinds = ["mem:malloc_pair", "mem:page_fault", "mem:sched_switch"]
    if scope == "host":
        kinds.append("mem:vm_syscall_pair")
    check_probe_effect(s, kinds)


def test_count_mode_counts_every_madvise(platform_file, tmp_path):
    n = 20_000
    prog = unique_copy(tmp_path, PROBECAL)
    w = Witness(tmp_path, prog.name, {"madvise": f"uprobe:{libc()}:madvise"})
    try:
        s = record(tmp_path, ["--mode", "count"], prog, "--mode", "madvise", "--iterations",
                   str(n))
    finally:
        seen = w.stop()
    sc = only_pid(s)["categories"]["vm"]["syscalls"]
    # the loop's and probecal's one MADV_NOHUGEPAGE, none timed (no return probe)
    assert sc["madvise"]["calls"] == seen["madvise"] == n + 1, (sc["madvise"], seen)
    assert sc["madvise"]["bytes"] >= n * 4096
    assert not sc["madvise"].get("time_hits")
    check_probe_effect(s, ["mem:malloc_pair"] if "mem:malloc_pair" in
                       s["totals"]["probe_hits"] else [])
