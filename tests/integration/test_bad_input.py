"""Bad input: one clear line on stderr, a non-zero exit, never a traceback, never a lost result."""
import json
import os
import subprocess

import pytest

from conftest import can_trace, run_jvmos

pytestmark = pytest.mark.integration


def one_error_line(r):
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    errors = [l for l in r.stderr.splitlines() if l.startswith("jvmos: error:")]
    assert len(errors) == 1, r.stderr
    return errors[0]


def test_pid_that_does_not_exist():
    line = one_error_line(run_jvmos(["record", "--pid", "999999999"]))
    assert "no process with pid 999999999" in line


def test_bpftrace_missing_from_path(tmp_path):
    line = one_error_line(run_jvmos(["record", "--out", str(tmp_path / "x"), "--", "/bin/true"],
                                    env={"PATH": str(tmp_path)}))
    assert "bpftrace not found" in line


def test_unknown_layer(tmp_path):
    line = one_error_line(run_jvmos(["record", "--layers", "io,disk", "--out",
                                     str(tmp_path / "x"), "--", "/bin/true"]))
    assert "unknown layer 'disk'" in line


def test_unknown_experiment():
    line = one_error_line(run_jvmos(["run", "no-such-thing"]))
    assert "unknown experiment" in line


def test_report_of_a_directory_that_is_not_a_run(tmp_path):
    line = one_error_line(run_jvmos(["report", str(tmp_path)]))
    assert "not a jvmos run directory" in line


@pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")
def test_traced_command_exits_non_zero_keeps_its_result(platform_file, tmp_path):
    out = tmp_path / "fails"
    r = run_jvmos(["record", "--out", str(out), "--", "/bin/sh", "-c", "echo hi > /dev/null; exit 3"])
    line = one_error_line(r)
    assert "exited with status 3" in line
    s = json.loads((out / "summary.json").read_text())
    assert s["status"] == "command_failed" and s["exit_code"] == 3
    assert s["categories"]["io_syscall"]["calls"] >= 1


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a read-only tmpfs")
def test_read_only_out(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(ro)]).returncode:
        pytest.skip("cannot mount tmpfs here")
    try:
        line = one_error_line(run_jvmos(["record", "--out", str(ro / "run"), "--", "/bin/true"]))
        assert "cannot write to output directory" in line
    finally:
        subprocess.run(["umount", str(ro)])


def test_existing_result_is_never_overwritten(tmp_path):
    out = tmp_path / "done"
    out.mkdir()
    (out / "summary.json").write_text('{"schema": "jvmos.summary/1"}')
    line = one_error_line(run_jvmos(["record", "--out", str(out), "--", "/bin/true"]))
    assert "already holds a recording" in line
    assert json.loads((out / "summary.json").read_text()) == {"schema": "jvmos.summary/1"}
