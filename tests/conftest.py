import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
JVMOS = [sys.executable, "-m", "jvmos.cli"]


def can_trace() -> str:
    """Why the tests that record cannot run here ("" when they can): root, the compiled
    engine (built, a kernel with BTF), and bpftrace, the independent witness some tests run
    beside it."""
    if os.geteuid() != 0:
        return "needs root"
    from jvmos import engine
    why = engine.unavailable()
    if why:
        return f"needs the compiled engine: {why}"
    if not shutil.which("bpftrace"):
        return "needs bpftrace (the witness)"
    return ""


@pytest.fixture(scope="session")
def platform_file(tmp_path_factory):
    """One calibration per test session, shared by every recording (JVMOS_PLATFORM)."""
    reuse = os.environ.get("JVMOS_TEST_PLATFORM")
    if reuse and Path(reuse).is_file():
        # a developer's shortcut: reuse a calibration made by this conftest earlier
        os.environ["JVMOS_PLATFORM"] = reuse
        return Path(reuse)
    path = tmp_path_factory.mktemp("platform") / "platform.json"
    os.environ["JVMOS_PLATFORM"] = str(path)
    r = subprocess.run(JVMOS + ["calibrate", "--trials", "3", "--sampler"], capture_output=True,
                       text=True,
                       cwd=ROOT, timeout=900)
    assert r.returncode == 0, r.stderr
    return path


WITNESS_SYNCED = "jvmos-witness-synced"


def bpftrace_witness(out: Path, script: str, env=None, timeout: float = 300):
    """bpftrace running `script` as an independent witness, its output (-f json) to `out`,
    returned once its probes are really attached. bpftrace prints "Attaching N probes" before
    it attaches them, so that line alone is not enough on a loaded host (a witness then misses
    the start of a workload): a last probe on this test process's getppid(2) prints a marker,
    and the test calls getppid until the marker comes (bpftrace attaches a script's probes in
    their order, so the others are attached by then).

    It is stopped by stop_witness, through its own exit() (a probe on this process's
    getpgid(2) of a pid that cannot exist, unique to the witness), not by SIGINT: bpftrace
    0.17's signal handler only sets a flag, which its event loop reads only when epoll_wait
    returns EINTR, so a SIGINT that lands while it is between two waits (its 100 ms timeout
    ran out and it waits for a CPU: make test's workers on two cores) is lost and it runs on
    (seen here: 1 of 12 single SIGINTs lost beside three busy loops, 0 of 20 exit()s)."""
    key = _next_witness_key()
    text = (script + f'\ntracepoint:syscalls:sys_enter_getpgid /pid == {os.getpid()} && '
            f'args->pid == {key}/ {{ exit(); }}'
            f'\ntracepoint:syscalls:sys_enter_getppid /pid == {os.getpid()}/ '
            f'{{ printf("{WITNESS_SYNCED}\\n"); }}')
    # its stderr to a file, never a pipe nobody reads (a full pipe would stall bpftrace)
    err = out.with_name(out.name + ".stderr")
    with open(err, "w") as ef:
        p = subprocess.Popen(["bpftrace", "-f", "json", "-o", str(out), "-e", text],
                             stderr=ef, text=True, start_new_session=True,
                             env=dict(os.environ, **(env or {})))
    p.jvmos_exit_key, p.jvmos_stderr = key, err
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert p.poll() is None, err.read_text()
        os.getppid()
        if out.exists() and WITNESS_SYNCED in out.read_text():
            return p
        time.sleep(0.02)
    p.kill()
    raise AssertionError(f"the bpftrace witness did not attach within {timeout:.0f} s")


_witness_keys = iter(range(2_000_000_001, 2_100_000_000))


def _next_witness_key() -> int:
    """a pid above any pid_max (2^22): getpgid(key) only fails with ESRCH"""
    return next(_witness_keys)


# how long a witness may take to print its maps and exit after its exit() (about 0.4 s
# alone; longer on a loaded host, for a witness with large maps)
WITNESS_STOP_S = 60


def stop_witness(p: subprocess.Popen, grace: float = WITNESS_STOP_S) -> None:
    """Stop a bpftrace_witness through its exit() probe and wait for it to print its maps and
    exit. One that has not exited after `grace` s is killed and the test fails saying so
    (never a silent partial count, never a 300 s wait)."""
    if p.poll() is None:
        try:
            os.getpgid(p.jvmos_exit_key)          # the witness's exit() fires on this call
        except ProcessLookupError:
            pass
    try:
        p.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        try:
            wchan = Path(f"/proc/{p.pid}/wchan").read_text()
        except OSError:
            wchan = "?"
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        raise AssertionError(f"the bpftrace witness (pid {p.pid}) did not exit within "
                             f"{grace:.0f} s of its exit() (waiting in {wchan}): killed; "
                             f"its stderr: {p.jvmos_stderr.read_text()[-500:]}")
    assert p.returncode == 0, (f"the bpftrace witness exited with {p.returncode}: "
                               f"{p.jvmos_stderr.read_text()[-500:]}")


def run_jvmos(args, timeout=900, env=None, **kw):
    e = dict(os.environ)
    if env:
        e.update(env)
    return subprocess.run(JVMOS + list(args), capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout, env=e, **kw)


def one_error_line(r):
    """A bad input's answer: a non-zero exit, no traceback, exactly one 'jvmos: error:' line
    (returned)."""
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    errors = [l for l in r.stderr.splitlines() if l.startswith("jvmos: error:")]
    assert len(errors) == 1, r.stderr
    return errors[0]


# as long as a recording itself may take to attach (jvmos.session.ATTACH_TIMEOUT_S): on a
# loaded host the uprobes of concurrent tests queue on one kernel lock (README, make test)
ATTACH_WAIT_S = 600


def wait_for_manifest(out: Path, started: bool, timeout: float = ATTACH_WAIT_S) -> None:
    """Wait until out/manifest.json exists and, if started, until counting has begun
    (start_time set); fails the test, saying which, when it does not come in time."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = out / "manifest.json"
        if m.exists():
            try:
                if not started or json.loads(m.read_text()).get("start_time"):
                    return
            except json.JSONDecodeError:      # caught between a write and its rename
                pass
        time.sleep(0.05)
    raise AssertionError(f"no manifest{' with start_time' if started else ''} in {out} "
                         f"after {timeout:.0f} s")


def wait_for(path: Path, proc, timeout: float = 120) -> None:
    """Wait until a program under test writes the marker file `path`; fails if it exits."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, f"the JVM exited ({proc.returncode}) before {path.name}"
        assert time.monotonic() < deadline, f"no {path.name} after {timeout:.0f} s"
        time.sleep(0.05)


def record_between_markers(d: Path, jvm, record_args: list) -> tuple:
    """(summary, manifest) of a `jvmos record --pid` of a live JVM program that writes d/ready,
    waits for d/go, does its counted work, writes d/done and stays alive: counting covers that
    work only, and the JVM still lives when the recording stops (the JVM is killed after)."""
    out = d / "rec"
    rec = None
    try:
        wait_for(d / "ready", jvm)
        rec = subprocess.Popen(JVMOS + ["record", "--pid", str(jvm.pid), *record_args,
                                        "--duration", "600", "--out", str(out)],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
        wait_for_manifest(out, started=True)
        (d / "go").write_text("")
        wait_for(d / "done", jvm)
        rec.send_signal(signal.SIGINT)
        _, err = rec.communicate(timeout=300)
        assert rec.returncode == 0, err
        assert jvm.poll() is None
    finally:
        if rec is not None and rec.poll() is None:
            rec.kill()
            rec.wait()
        jvm.kill()
        jvm.wait()
    s = json.loads((out / "summary.json").read_text())
    m = json.loads((out / "manifest.json").read_text())
    assert s["status"] == "complete", s.get("status_reason")
    return s, m


# ---- a headless browser, for the HTML pages (Debian package chromium)

CHROMIUM = "/usr/bin/chromium"


def chromium() -> str:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"needs headless Chromium: {CHROMIUM} is missing "
                    "(apt-get install chromium)")
    return CHROMIUM


def run_chromium(tmp_path: Path, page: Path, *args) -> subprocess.CompletedProcess:
    """One headless Chromium run on a file:// page, its console sent to stderr: every
    console message is a line `...:CONSOLE:N] "message", source: ...`."""
    home = tmp_path / "chromium-home"
    home.mkdir(exist_ok=True)
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-extensions", "--disable-sync", f"--user-data-dir={home / 'profile'}",
           "--enable-logging=stderr", "--v=0", *args, page.resolve().as_uri()]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=180,
                       env={**os.environ, "HOME": str(home)})
    assert r.returncode == 0, r.stderr[-3000:]
    return r


def console_messages(stderr: str) -> list:
    """The page's console output and uncaught errors, out of Chromium's log on stderr (the
    rest of that log is Chromium's own: D-Bus, GPU, ...)."""
    return [l for l in stderr.splitlines() if ":CONSOLE" in l or "Uncaught" in l]


def dump_dom(tmp_path: Path, page: Path) -> tuple:
    r = run_chromium(tmp_path, page, "--dump-dom")
    return r.stdout, console_messages(r.stderr)


def flame_graph_stand_ins(run_dir: Path) -> None:
    """The flame graphs that sampling writes beside each profile-<pid>.collapsed are not kept
    with the reference results (.gitignore): a copied run gets a small stand-in page per
    profile, so that a report's link to it has a file to point at."""
    for prof in run_dir.glob("profile-*.collapsed"):
        pid = prof.stem.split("-", 1)[1]
        page = run_dir / f"flamegraph-{pid}.html"
        if not page.exists():
            page.write_text("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>flame "
                            f"graph {pid}</title></head><body><p>stand-in</p></body></html>\n")


@pytest.fixture
def own_platform(platform_file, tmp_path) -> dict:
    """A copy of the session's calibration, as an environment for run_jvmos: a new JDK's NIO
    copy is calibrated into it on its first recording, and the shared file is not written by
    a test running beside others."""
    copy = tmp_path / "own-platform.json"
    shutil.copy(platform_file, copy)
    return {"JVMOS_PLATFORM": str(copy)}


def start_prometheus(prom: str, where: Path, target_port: int, port: int) -> subprocess.Popen:
    """Debian's Prometheus on 127.0.0.1:port, scraping 127.0.0.1:target_port every second, its
    configuration, data and log in `where` (the agent's tests, host and container alike)."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: jvmos\n    static_configs:\n"
        f"      - targets: ['127.0.0.1:{target_port}']\n")
    return subprocess.Popen(
        [prom, f"--config.file={where / 'prometheus.yml'}", f"--storage.tsdb.path={where / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
        stdout=subprocess.DEVNULL, stderr=open(where / "prometheus.log", "w"))


# ---------------------------------------------------------------------- the suite's order
# make test runs the integration tests on TEST_WORKERS xdist workers with --dist worksteal,
# which hands each worker an equal count of consecutive tests and lets an idle worker take the
# tail of another's queue. In file order the longest tests (minutes each) fall where they
# fall, often into one queue's end: the suite then waits on one worker. So the tests are dealt
# longest first, in turn, into one queue per worker (each queue longest first, its short tests
# at its end for the others to take), by the durations of an earlier run kept in
# DURATIONS (setup, call and teardown per test; a test not in it counts as the median).
# JVMOS_STORE_DURATIONS=FILE writes this run's durations there (to refresh DURATIONS:
# JVMOS_STORE_DURATIONS=$PWD/tests/integration/durations.json make test).
DURATIONS = Path(__file__).resolve().parent / "integration" / "durations.json"


def _workers(config) -> int:
    wi = getattr(config, "workerinput", None)
    if wi:
        return int(wi.get("workercount") or 1)
    n = config.getoption("numprocesses", default=None) if config.pluginmanager.hasplugin(
        "xdist") else None
    return int(n) if isinstance(n, int) and n > 0 else 1


def pytest_collection_modifyitems(session, config, items):
    if not items or not all(Path(str(it.fspath)).parent.name in ("integration", "container")
                            for it in items):
        return
    try:
        seconds = json.loads(DURATIONS.read_text())
    except (OSError, ValueError):
        return
    by_id = {it.nodeid: it for it in items}
    from suiteorder import deal
    items[:] = [by_id[i] for i in deal(list(by_id), seconds, _workers(config))]


_durations: dict = {}


def pytest_runtest_logreport(report):
    if os.environ.get("JVMOS_STORE_DURATIONS"):
        _durations[report.nodeid] = _durations.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("JVMOS_STORE_DURATIONS")
    if path and _durations and not hasattr(session.config, "workerinput"):
        Path(path).write_text(json.dumps({k: round(v, 1) for k, v in sorted(_durations.items())},
                                         indent=0) + "\n")
