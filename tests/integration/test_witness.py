"""The tests' bpftrace witness stops through its own exit(), not a SIGINT that bpftrace 0.17
can lose under load (conftest.bpftrace_witness), and one that does not stop fails its test
quickly, saying so, never after a 300 s wait."""
import json
import os
import time

import pytest

from conftest import bpftrace_witness, can_trace, stop_witness

pytestmark = pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")


def _maps(out):
    maps = {}
    for line in out.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "map":
            maps.update(rec["data"])
    return maps


def test_witness_stops_by_its_exit_and_prints_its_maps(tmp_path):
    out = tmp_path / "w.json"
    p = bpftrace_witness(out, "tracepoint:syscalls:sys_enter_getppid "
                              f"/pid == {os.getpid()}/ {{ @n = count(); }}")
    for _ in range(5):
        os.getppid()
    t0 = time.monotonic()
    stop_witness(p)
    assert p.returncode == 0
    assert time.monotonic() - t0 < 30
    # the 5 calls, and the sync calls before them (at least one)
    assert _maps(out)["@n"] >= 6


def test_a_witness_that_does_not_stop_fails_in_its_grace(tmp_path):
    """A planted defect: the exit probe's key no longer matches, so nothing stops it."""
    out = tmp_path / "w.json"
    p = bpftrace_witness(out, "tracepoint:syscalls:sys_enter_getppid /pid == 1/ { @n = count(); }")
    p.jvmos_exit_key += 1
    t0 = time.monotonic()
    with pytest.raises(AssertionError, match="did not exit within 3 s"):
        stop_witness(p, grace=3)
    assert time.monotonic() - t0 < 20
    assert p.poll() is not None            # killed, not left behind
