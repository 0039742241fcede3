"""Bad input: one clear line on stderr, a non-zero exit, never a traceback, never a lost result."""
import errno
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import JVMOS, ROOT, can_trace, one_error_line, run_jvmos, wait_for_manifest
from jvmos.jdk import discover_jdks

pytestmark = pytest.mark.integration


def test_pid_that_does_not_exist():
    line = one_error_line(run_jvmos(["record", "--pid", "999999999"]))
    assert "no process with pid 999999999" in line


def test_probes_not_built(tmp_path):
    line = one_error_line(run_jvmos(["record", "--out", str(tmp_path / "x"), "--", "/bin/true"],
                                    env={"JVMOS_ENGINE_OBJECTS": str(tmp_path / "none")}))
    assert "probes are not built" in line and "make build" in line
    assert not (tmp_path / "x").exists()


def test_the_retired_bpftrace_engine_is_refused(tmp_path):
    line = one_error_line(run_jvmos(["record", "--out", str(tmp_path / "x"), "--", "/bin/true"],
                                    env={"JVMOS_ENGINE": "bpftrace"}))
    assert "JVMOS_ENGINE=bpftrace" in line and "retired" in line
    assert not (tmp_path / "x").exists()


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


# ---- argument errors: one line, exit 2, nothing created ------------------------------------

@pytest.mark.parametrize("args, says", [
    (["--mode", "bogus", "--", "/bin/true"], "unknown mode 'bogus' (known: time, count, sample)"),
    (["--pid", "abc"], "argument --pid: invalid int value: 'abc'"),
    (["--no-such-option", "--", "/bin/true"], "unrecognized arguments: --no-such-option"),
    (["--pid", "1", "--duration", "0"], "--duration must be a positive number of seconds, not 0.0"),
    (["--pid", "1", "--duration", "-5"], "--duration must be a positive number of seconds, not -5.0"),
    (["--pid", "1", "--duration", "nan"], "--duration must be a positive number of seconds, not nan"),
    (["--pid", "1", "--duration", "inf"], "--duration must be a positive number of seconds, not inf"),
    (["--duration", "3", "--", "/bin/true"], "--duration applies to --pid only"),
])
def test_argument_errors_are_one_line(tmp_path, args, says):
    out = tmp_path / "run"
    r = run_jvmos(["record", "--out", str(out)] + args)
    line = one_error_line(r)
    assert r.returncode == 2
    assert says in line, line
    assert "usage:" not in r.stderr            # argparse's usage block is not printed
    assert not out.exists()


# ---- with root and the engine ----------------------------------------------------------------

needs_tracing = pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")
IO_JAR = ROOT / "workloads/java/io/target/jvmos-io.jar"


def java():
    jdks = discover_jdks()
    assert jdks, "no JDK found"
    return str(jdks[0].home / "bin" / "java")


def loop(n, target="/dev/null"):
    return [java(), "-cp", str(IO_JAR), "org.jvmos.workloads.BlockingIo", "--iterations", str(n),
            "--size", "10", "--target", str(target)]


def read_json(path):
    return json.loads(path.read_text())


@needs_tracing
def test_jdk_that_is_not_a_jdk(tmp_path):
    out = tmp_path / "run"
    line = one_error_line(run_jvmos(["record", "--jdk", str(tmp_path), "--out", str(out), "--",
                                     "/bin/sh", "-c", "true"]))
    assert f"--jdk {tmp_path}: not a JDK home" in line
    assert not out.exists(), "nothing is created for an argument error"


@needs_tracing
def test_pid_of_a_process_that_is_not_a_jvm(platform_file, tmp_path):
    out = tmp_path / "sh"
    # builtins only (no child process: a traced child that execs is held until probed, which
    # would pace this loop by jvmos's polling); bounded in time rather than in count, because
    # attaching can take tens of seconds on a loaded host, and killed at the end
    sh = subprocess.Popen(["/bin/bash", "-c", "end=$((SECONDS + 900)); "
                                              "while [ $SECONDS -lt $end ]; do echo x > /dev/null; done"])
    try:
        r = run_jvmos(["record", "--pid", str(sh.pid), "--duration", "2", "--out", str(out)])
        assert r.returncode == 0, r.stderr
        warnings = [l for l in r.stderr.splitlines() if l.startswith("warning:")]
        assert len(warnings) == 1 and f"pid {sh.pid} is not a JVM" in warnings[0], r.stderr
        s = read_json(out / "summary.json")
        assert s["status"] == "complete" and read_json(out / "manifest.json")["status"] == "complete"
        # the syscall probes ran: each of the shell's echo is a write(2)
        assert s["categories"]["io_syscall"]["syscalls"]["write"]["calls"] > 10
        assert "jni_copy" not in s["categories"] or s["categories"]["jni_copy"]["calls"] == 0
    finally:
        sh.kill()
        sh.wait()


def attach_to_a_busy_jvm(out):
    """A JVM looping on writes, and `jvmos record --pid` attached to it for 600 s (the test
    ends it); returns once tracing has started."""
    jvm = subprocess.Popen(loop(2_000_000_000), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)
        rec = subprocess.Popen(JVMOS + ["record", "--pid", str(jvm.pid), "--duration", "600",
                                        "--out", str(out)],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
        wait_for_manifest(out, started=True)
    except BaseException:
        jvm.kill()
        jvm.wait()
        raise
    return jvm, rec


@needs_tracing
def test_pid_that_exits_mid_recording(platform_file, tmp_path):
    out = tmp_path / "gone"
    jvm, rec = attach_to_a_busy_jvm(out)
    try:
        time.sleep(2)
        jvm.kill()                              # the target dies long before --duration
        jvm.wait()
        o, e = rec.communicate(timeout=600)
        r = subprocess.CompletedProcess(rec.args, rec.returncode, o, e)
        line = one_error_line(r)
        assert "recording target_exited" in line and f"pid {jvm.pid} exited" in line
        s = read_json(out / "summary.json")
        assert s["status"] == "target_exited"
        assert read_json(out / "manifest.json")["status"] == "target_exited"
        assert any(f"pid {jvm.pid} exited" in w for w in s["warnings"])
        # the figures of the 2 s it was traced are kept
        assert s["categories"]["io_syscall"]["syscalls"]["write"]["calls"] > 1000
        assert s["categories"]["jni_copy"]["calls"] > 1000
        assert s["totals"]["wall_ns"] < 600e9
    finally:
        if jvm.poll() is None:
            jvm.kill()


@needs_tracing
def test_out_on_a_full_filesystem(platform_file, tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(mnt)]).returncode:
        pytest.skip("cannot mount tmpfs here")
    try:
        out = mnt / "run"
        rec = subprocess.Popen(JVMOS + ["record", "--out", str(out), "--"] + loop(300_000),
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
        wait_for_manifest(out, started=True)
        started = (out / "manifest.json").read_text()
        # fill what is left while the command runs: the results at the end find no room
        fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while True:
                os.write(fd, b"\0" * 4096)
        except OSError as e:
            assert e.errno == errno.ENOSPC
        finally:
            os.close(fd)
        o, e = rec.communicate(timeout=900)
        r = subprocess.CompletedProcess(rec.args, rec.returncode, o, e)
        line = one_error_line(r)
        assert "No space left on device" in line and str(out) in line
        # what was written before is intact: the manifest of the started run, the plan, the
        # engine's log
        assert (out / "manifest.json").read_text() == started
        assert read_json(out / "manifest.json")["status"] == "running"
        assert (out / "probes.plan.json").exists() and (out / "raw" / "engine.stderr").exists()
        assert not (out / "summary.json").exists()
        assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
    finally:
        subprocess.run(["umount", "-l", str(mnt)])


NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
# jvmos from this tree for a user who cannot read the virtualenv (it may live under /root):
# the package's folders map into it as the editable install maps them (pyproject.toml)
BOOT = ("import sys; sys.path.insert(0, {root!r}); import jvmos; jvmos.__path__.append({root!r}); "
        "from jvmos.cli import main; sys.exit(main(sys.argv[1:]))")


def python_for_nobody():
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        return None
    for py in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(py) and subprocess.run(NOBODY + [py, "-c", "import json"], cwd=ROOT,
                                                 capture_output=True).returncode == 0:
            return py
    return None


@pytest.mark.skipif(python_for_nobody() is None,
                    reason="needs root, setpriv and a python that user nobody can run")
@pytest.mark.parametrize("args", [
    ["--out", "/root/not-writable-by-nobody/run", "--", "/bin/true"],
    ["--pid", "1", "--duration", "1", "--platform", "/root/no-such/platform.json"],
    ["--layers", "io,jni", "--mode", "count", "--", "/bin/sh", "-c", "exit 0"],
])
def test_non_root_user_is_told_root_is_needed_first(args):
    """Said before anything else can fail: the output directory, the platform file and the
    JDKs are not looked at."""
    r = subprocess.run(NOBODY + [python_for_nobody(), "-c", BOOT.format(root=str(ROOT)), "record"]
                       + args, cwd=ROOT, capture_output=True, text=True, timeout=120)
    line = one_error_line(r)
    assert "needs root (or CAP_BPF with CAP_PERFMON)" in line, r.stderr
    assert r.stderr.strip() == line, "the one line is all that is said"


# ---- where a verb writes: refused before anything is measured (issue 45, item 5) ------------

FIXTURE_RUN = ROOT / "tests/fixtures/blocking-java17"
PROC = "/proc/1/nonexistent/x.json"
PROC_HINT = "/proc is the kernel's proc filesystem, where no file can be made"
SYS_HINT = "/sys is the kernel's sysfs filesystem, where no file can be made"


def listing(d: Path) -> dict:
    return {str(p.relative_to(d)): p.read_bytes() if p.is_file() else None
            for p in sorted(d.rglob("*"))}


@pytest.fixture
def places(tmp_path):
    """{tmp}: tmp_path; {file}: a regular file; {dir}: a directory; {run}: a finished
    recording; {ro}: a read-only tmpfs holding a finished recording (ro/run) and a platform
    file (ro/platform.json), or None when no tmpfs can be mounted."""
    (tmp_path / "file").write_text("a file\n")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "kept").write_text("kept\n")
    shutil.copytree(FIXTURE_RUN, tmp_path / "run")
    ro = tmp_path / "ro"
    ro.mkdir()
    mounted = os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(ro)],
        capture_output=True).returncode == 0
    if mounted:
        shutil.copytree(FIXTURE_RUN, ro / "run")
        (ro / "platform.json").write_text('{"schema": "jvmos.platform/1"}\n')
        mounted = subprocess.run(["mount", "-o", "remount,ro", str(ro)],
                                 capture_output=True).returncode == 0
    yield {"tmp": str(tmp_path), "file": str(tmp_path / "file"), "dir": str(tmp_path / "dir"),
           "run": str(tmp_path / "run"), "ro": str(ro) if mounted else None}
    subprocess.run(["umount", "-l", str(ro)], capture_output=True)


# (jvmos arguments, the one line's text); {name} is a place of the fixture above
WHERE_VERBS_WRITE = [
    # calibrate's platform file: was measured for minutes, then lost (2 min 46 s for the first)
    (["calibrate", "--platform", PROC],
     f"cannot write to platform file {PROC}: cannot create /proc/1/nonexistent: {PROC_HINT}"),
    (["calibrate", "--platform", "{file}/x.json"],
     "cannot write to platform file {file}/x.json: {file} is not a directory"),
    (["calibrate", "--platform", "{dir}"], "platform file {dir} is a directory"),
    (["calibrate", "--sampler", "--platform", "/sys/x.json"],
     f"cannot write to platform file /sys/x.json: cannot create a file in /sys: {SYS_HINT}"),
    (["calibrate", "--force", "--platform", "{ro}/platform.json"],
     "cannot write to platform file {ro}/platform.json: cannot create a file in {ro}: "
     "Read-only file system"),
    (["calibrate", "--in-situ", "--platform", "{tmp}/p.json", "--out", "/proc/x"],
     f"cannot write to output directory /proc/x: cannot create /proc/x: {PROC_HINT}"),
    (["calibrate", "--in-situ", "--platform", "{tmp}/p.json", "--out", "{file}"],
     "cannot write to output directory {file}: {file} exists and is not a directory"),
    # record's --out, --metrics-file and the platform file it calibrates when there is none
    (["record", "--out", "/proc/1/nonexistent/run", "--", "/bin/true"],
     f"cannot write to output directory /proc/1/nonexistent/run: cannot create "
     f"/proc/1/nonexistent: {PROC_HINT}"),
    (["record", "--out", "{file}/run", "--", "/bin/true"],
     "cannot write to output directory {file}/run: {file} is not a directory"),
    (["record", "--out", "{file}", "--", "/bin/true"],
     "cannot write to output directory {file}: {file} exists and is not a directory"),
    (["record", "--out", "/sys/x", "--", "/bin/true"],
     f"cannot write to output directory /sys/x: cannot create /sys/x: {SYS_HINT}"),
    (["record", "--out", "{ro}/new", "--", "/bin/true"],
     "cannot write to output directory {ro}/new: cannot create {ro}/new: Read-only file system"),
    (["record", "--mode", "sample", "--out", "{ro}/new", "--", "/bin/true"],
     "cannot write to output directory {ro}/new: cannot create {ro}/new: Read-only file system"),
    (["record", "--platform", PROC, "--out", "{tmp}/new", "--", "/bin/true"],
     f"cannot write to platform file {PROC}: cannot create /proc/1/nonexistent: {PROC_HINT}"),
    (["record", "--platform", "{dir}", "--out", "{tmp}/new", "--", "/bin/true"],
     "cannot write to platform file {dir}: {dir} is a directory"),
    (["record", "--interval", "1", "--metrics-file", "{dir}", "--out", "{tmp}/new", "--",
      "/bin/true"], "cannot write to --metrics-file {dir}: {dir} is a directory"),
    (["record", "--interval", "1", "--metrics-file", "/proc/x.prom", "--out", "{tmp}/new", "--",
      "/bin/true"],
     f"cannot write to --metrics-file /proc/x.prom: cannot create a file in /proc: {PROC_HINT}"),
    # an experiment's --out
    (["run", "blocking-io", "--out", "/proc/1/nonexistent/x"],
     f"cannot write to output directory /proc/1/nonexistent/x: cannot create "
     f"/proc/1/nonexistent: {PROC_HINT}"),
    (["run", "jni-census", "--out", "{file}/x"],
     "cannot write to output directory {file}/x: {file} is not a directory"),
    # the agent's state directory, and the platform file it calibrates when there is none
    (["agent", "--state-dir", "/proc/1/nonexistent/state"],
     f"cannot write to --state-dir /proc/1/nonexistent/state: cannot create "
     f"/proc/1/nonexistent: {PROC_HINT}"),
    (["agent", "--state-dir", "{file}"],
     "cannot write to --state-dir {file}: {file} exists and is not a directory"),
    (["agent", "--platform", PROC, "--state-dir", "{tmp}/state"],
     f"cannot write to platform file {PROC}: cannot create /proc/1/nonexistent: {PROC_HINT}"),
    # export's --out (its directory must exist), report --html, diff --out: nothing measured,
    # the cause said all the same
    (["export", "{run}", "--format", "openmetrics", "--out", "/proc/1/nonexistent/x.prom"],
     "cannot write to export file /proc/1/nonexistent/x.prom: /proc/1/nonexistent does not "
     "exist"),
    (["export", "{run}", "--format", "openmetrics", "--out", "/proc/x.prom"],
     f"cannot write to export file /proc/x.prom: cannot create a file in /proc: {PROC_HINT}"),
    (["export", "{run}", "--format", "openmetrics", "--out", "{dir}"],
     "cannot write to export file {dir}: {dir} is a directory"),
    (["export", "{ro}/run", "--format", "openmetrics"],
     "cannot write to export file {ro}/run/metrics.prom: cannot create a file in {ro}/run: "
     "Read-only file system"),
    (["report", "{ro}/run", "--html"],
     "cannot write to report page {ro}/run/report.html: cannot create a file in {ro}/run: "
     "Read-only file system"),
    (["diff", "{run}", "{run}", "--out", "{file}"],
     "cannot write to --out directory {file}: {file} exists and is not a directory"),
]


@pytest.mark.skipif(os.geteuid() != 0, reason="record, calibrate and agent need root first")
@pytest.mark.parametrize("args, says", WHERE_VERBS_WRITE,
                         ids=[" ".join(a[:2]) + f"-{i}" for i, (a, _) in
                              enumerate(WHERE_VERBS_WRITE)])
def test_where_a_verb_writes_is_checked_before_it_measures(places, tmp_path, args, says):
    text = " ".join(args) + says
    if "{ro}" in text and places["ro"] is None:
        pytest.skip("cannot mount a read-only tmpfs here")
    args = [a.format(**places) for a in args]
    says = says.format(**places)
    before = listing(tmp_path)
    t0 = time.monotonic()
    r = run_jvmos(args, timeout=120)
    elapsed = time.monotonic() - t0
    line = one_error_line(r)
    assert says in line, line
    assert r.stderr.strip() == line, "the one line is all that is said (nothing measured)"
    assert elapsed < 20, f"{elapsed:.1f} s: the path was checked only after measuring"
    assert listing(tmp_path) == before, "nothing is created, nothing kept is changed"


@pytest.mark.skipif(os.geteuid() != 0, reason="calibrate needs root first")
def test_a_platform_file_is_kept_when_the_in_situ_output_is_refused(tmp_path):
    good = tmp_path / "platform.json"
    text = '{"schema": "jvmos.platform/1", "copy": {}, "created": "before"}\n'
    good.write_text(text)
    line = one_error_line(run_jvmos(["calibrate", "--in-situ", "--platform", str(good),
                                     "--out", "/proc/x"], timeout=120))
    assert "cannot write to output directory /proc/x" in line
    assert good.read_text() == text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["platform.json"]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root")
def test_pid_whose_maps_root_cannot_read_names_the_cause(tmp_path):
    """Root refused /proc/PID/maps (pid 1 of a sandbox, a non-dumpable process) is not told
    to run as root: the errno, the process and the kernel's reason."""
    try:
        open("/proc/1/maps").close()
        pytest.skip("root can read pid 1's maps here")
    except PermissionError:
        pass
    out = tmp_path / "never"
    line = one_error_line(run_jvmos(["record", "--pid", "1", "--duration", "1", "--out",
                                     str(out)], timeout=120))
    assert "run jvmos as root" not in line
    assert "cannot read /proc/1/maps: Permission denied to root for pid 1" in line, line
    assert not out.exists()
