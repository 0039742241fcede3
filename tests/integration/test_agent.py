"""`jvmos agent` on real JVMs: discovery of a JVM started after it, the series of one that
exits, SIGHUP, a JVM that execs, shedding under --max-overhead, SIGKILL (no link or program
left in the kernel) and a restart, the capabilities of the systemd unit, and a real
Prometheus server scraping it, checked against one-off `jvmos record` runs of the same JVMs."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import types
import uuid
import zipfile
import urllib.parse
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import JVMOS, ROOT, one_error_line, run_jvmos, start_prometheus
from jvmos.jdk import discover_jdks

HERE = Path(__file__).resolve().parent
UNIT = ROOT / "deploy" / "jvmos-agent.service"


def _why_not() -> str:
    if os.geteuid() != 0:
        return "needs root"
    from jvmos import engine
    return engine.unavailable() or ""


needs_engine = pytest.mark.skipif(bool(_why_not()), reason=_why_not() or "ok")
pytestmark = [pytest.mark.integration]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def jdk(min_feature: int = 0, max_feature: int = 99):
    for j in discover_jdks():
        try:
            f = int(j.version.split(".")[0])
        except ValueError:
            continue
        if min_feature <= f <= max_feature and (j.home / "bin" / "javac").exists():
            return j
    return None


@pytest.fixture(scope="module")
def classes(tmp_path_factory):
    """The test JVMs' classes, compiled with the first JDK found (PacedWrites), in a
    directory every user can read (a JVM of another user runs them too)."""
    j = jdk()
    if j is None:
        pytest.skip("needs a JDK with javac")
    d = Path(tempfile.mkdtemp(prefix="jvmos-agent-classes-"))
    os.chmod(d, 0o755)
    subprocess.run([str(j.home / "bin" / "javac"), "--release", "11", "-d", str(d),
                    str(HERE / "java" / "PacedWrites.java")], check=True, timeout=300)
    for p in d.rglob("*"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    yield str(j.home / "bin" / "java"), d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def app(classes, request):
    """PacedWrites in a jar of this test's own (a unique name): the test's agent selects its
    JVMs with --match app.match and leaves every other JVM alone, those of the tests that run
    beside it among them."""
    java, d = classes
    jar = d / f"paced-{request.node.name[:40].replace('[', '-').strip(']')}-{uuid.uuid4().hex[:8]}.jar"
    with zipfile.ZipFile(jar, "w") as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\nMain-Class: PacedWrites\r\n\r\n")
        z.write(d / "PacedWrites.class", "PacedWrites.class")
    os.chmod(jar, 0o644)
    yield types.SimpleNamespace(java=java, jar=jar, match=f"jar=*/{jar.name}")
    jar.unlink(missing_ok=True)


def paced(app, out: Path, seconds: int, size: int, writes: int, spin_us: int,
          burst_s: int = 0, user=None, nice: int = 0) -> subprocess.Popen:
    """PacedWrites: `writes` writes and a spin of spin_us every 10 ms. nice < 0 gives it the
    CPU first on a loaded host (the suite's three workers on two cores): a paced JVM that
    waits for a CPU falls behind its ticks and its rate then follows the host's load."""
    cmd = [app.java, "-Xmx64m", "-jar", str(app.jar), str(out), str(seconds), str(size),
           str(writes), str(spin_us), str(burst_s)]
    if user is not None:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"] + cmd
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            preexec_fn=(lambda: os.nice(nice)) if nice else None)


class Agent:
    """`jvmos agent` on a free port, its log in tmp_path; stopped (SIGTERM) at the end."""

    def __init__(self, tmp_path: Path, args, prefix=(), name="agent"):
        self.port = free_port()
        self.log_path = tmp_path / f"{name}.log"
        self.proc = subprocess.Popen(list(prefix) + JVMOS + [
            "agent", "--listen", f"127.0.0.1:{self.port}",
            "--state-dir", str(tmp_path / f"{name}-state")] + [str(a) for a in args],
            stdout=subprocess.DEVNULL, stderr=open(self.log_path, "w"), cwd=ROOT)

    def log(self) -> str:
        return self.log_path.read_text()

    def status(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/status", timeout=10) as r:
            return json.loads(r.read())

    def wait_log(self, text: str, timeout: float = 10) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log():
                return self.log()
            time.sleep(0.1)
        raise AssertionError(f"no {text!r} in the agent's log:\n{self.log()}")

    def text(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as r:
            return r.read().decode()

    def samples(self) -> list:
        return [s for f in text_string_to_metric_families(self.text()) for s in f.samples]

    def wait_up(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log()
            try:
                return self.samples()
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"no metrics within {timeout} s: {self.log()}")

    def wait_for(self, pred, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log()
            try:
                got = self.samples()
            except OSError:          # not listening yet
                time.sleep(0.1)
                continue
            if pred(got):
                return got
            time.sleep(0.1)
        raise AssertionError(f"{what}: not within {timeout} s\n{self.log()}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


def value(samples, name, **labels):
    """The one sample of `name` with these labels (None when there is none)."""
    got = [s.value for s in samples if s.name == name
           and all(s.labels.get(k) == str(v) for k, v in labels.items())]
    assert len(got) <= 1, (name, labels, got)
    return got[0] if got else None


def watched(samples) -> set:
    return {int(s.labels["pid"]) for s in samples if s.name == "jvmos_jvm_info"}


def stop_jvm(p: subprocess.Popen):
    if p.poll() is None:
        p.kill()
    p.wait(timeout=60)


# ---------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("argv, needle", [
    (["--match", "class=Foo"], "each condition is KEY=PATTERN"),
    (["--match", "main="], "main= needs a pattern"),
    (["--max-overhead", "0"], "above 0% and below 100%"),
    (["--max-overhead", "2x"], "give a percentage"),
    (["--listen", "9377"], "give HOST:PORT"),
    (["--interval", "-1"], "--interval -1.0: give a positive number of seconds"),
    (["--layers", "io,disk"], "unknown layer 'disk'"),
    (["--max-jvms", "0"], "--max-jvms '0': give a positive whole number"),
    (["--otlp-endpoint", "127.0.0.1:4318"], "give the collector's OTLP/HTTP base URL"),
    (["--config", "/nonexistent/agent.toml"], "--config /nonexistent/agent.toml"),
])
def test_agent_bad_input_is_one_line(argv, needle):
    line = one_error_line(run_jvmos(["agent"] + argv, timeout=60))
    assert needle in line, line


def test_agent_bad_config_file_is_one_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("layers = [io\n")
    assert "not valid TOML" in one_error_line(run_jvmos(["agent", "--config", str(bad)]))
    bad.write_text('interval = 1\nfrobnicate = true\n')
    assert "unknown key(s) frobnicate" in one_error_line(
        run_jvmos(["agent", "--config", str(bad)]))


@needs_engine
def test_agent_port_in_use_is_one_line(platform_file):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = run_jvmos(["agent", "--listen", f"127.0.0.1:{port}", "--match", "main=NoSuch"],
                      timeout=60)
    assert "--listen 127.0.0.1:" in one_error_line(r)


# ---------------------------------------------------------------------------- discovery

@needs_engine
def test_discovery_exit_and_sighup(platform_file, app, tmp_path):
    """A JVM started after the agent is found within 5 s and counted; one that exits leaves
    the metrics; SIGHUP applies a new --match, and keeps the running one when the file is
    bad."""
    cfg = tmp_path / "agent.toml"
    cfg.write_text(f'match = ["{app.match}"]\ninterval = 1\nscan = 1\n')
    with Agent(tmp_path, ["--config", cfg]) as ag:
        ag.wait_up()
        t0 = time.monotonic()
        j1 = paced(app, tmp_path / "f1", seconds=6, size=512, writes=5, spin_us=2000)
        try:
            ag.wait_for(lambda s: j1.pid in watched(s), 5, "the new JVM in the metrics")
            found_s = time.monotonic() - t0
            got = ag.wait_for(lambda s: (value(s, "jvmos_category_calls_total", pid=j1.pid,
                                               category="jni_copy") or 0) > 0, 15,
                              "its JNI copies counted")
            info = [s for s in got if s.name == "jvmos_jvm_info" and
                    s.labels["pid"] == str(j1.pid)][0]
            assert info.labels["main_class"] == "PacedWrites" and info.labels["jdk_version"]
            assert j1.wait(timeout=60) == 0
            t_exit = time.monotonic()
            ag.wait_for(lambda s: j1.pid not in watched(s), 10, "the exited JVM gone")
            gone_s = time.monotonic() - t_exit
        finally:
            stop_jvm(j1)
        assert found_s < 5 and gone_s < 5, (found_s, gone_s)
        ag.wait_log(f"pid {j1.pid} (PacedWrites, JDK {info.labels['jdk_version']}, user root): "
                    "exited; its series are dropped")

        # SIGHUP with a match that selects nothing: a new JVM is left alone
        cfg.write_text('match = ["main=NoSuchMain"]\ninterval = 1\nscan = 1\n')
        ag.proc.send_signal(signal.SIGHUP)
        ag.wait_for(lambda s: value(s, "jvmos_agent_config_reloads_total", result="ok") == 1,
                    10, "the reload")
        j2 = paced(app, tmp_path / "f2", seconds=30, size=512, writes=5, spin_us=2000)
        try:
            time.sleep(3)
            assert j2.pid not in watched(ag.samples())
            cfg.write_text(f'match = ["user=root,main=Paced*,{app.match}"]\ninterval = 1\n'
                           'scan = 1\n')
            ag.proc.send_signal(signal.SIGHUP)
            ag.wait_for(lambda s: j2.pid in watched(s), 10, "the JVM the new --match selects")
            cfg.write_text("match = [\n")
            ag.proc.send_signal(signal.SIGHUP)
            got = ag.wait_for(lambda s: value(s, "jvmos_agent_config_reloads_total",
                                              result="failed") == 1, 10, "the failed reload")
            assert j2.pid in watched(got)
            ag.wait_log("SIGHUP: configuration not reloaded, the running one is kept")
            # new layers: the JVM's engine is replaced by one with them
            cfg.write_text(f'match = ["{app.match}"]\nlayers = ["io", "links"]\ninterval = 1\n')
            ag.proc.send_signal(signal.SIGHUP)
            ag.wait_for(lambda s: value(s, "jvmos_probes_shed", pid=j2.pid, layer="links")
                        == 0, 10, "the links layer on the JVM")
            ag.wait_log(f"pid {j2.pid} (PacedWrites, JDK {info.labels['jdk_version']}, user "
                        "root): attached io,links")
        finally:
            stop_jvm(j2)


@needs_engine
def test_max_jvms_leaves_the_rest_listed_with_the_reason(platform_file, app, tmp_path):
    """--max-jvms 1 with two JVMs selected: one is watched, the other is listed in
    jvmos_jvm_unwatched{reason="max_jvms"} and in /status, and is watched once the first is
    gone."""
    import json
    with Agent(tmp_path, ["--match", app.match, "--interval", "1", "--scan", "1",
                          "--max-jvms", "1"]) as ag:
        ag.wait_up()
        j1 = paced(app, tmp_path / "f1", seconds=8, size=512, writes=5, spin_us=2000)
        ag.wait_for(lambda s: j1.pid in watched(s), 10, "the first JVM watched")
        j2 = paced(app, tmp_path / "f2", seconds=30, size=512, writes=5, spin_us=2000)
        try:
            got = ag.wait_for(lambda s: value(s, "jvmos_jvm_unwatched", pid=j2.pid,
                                              reason="max_jvms") == 1, 10,
                              "the second JVM listed as unwatched")
            assert watched(got) == {j1.pid}
            with urllib.request.urlopen(f"http://127.0.0.1:{ag.port}/status", timeout=10) as r:
                st = json.loads(r.read())
            assert [w["pid"] for w in st["watched"]] == [j1.pid]
            assert {u["pid"]: u["reason"] for u in st["unwatched"]} == {j2.pid: "max_jvms"}
            assert j1.wait(timeout=60) == 0
            ag.wait_for(lambda s: j2.pid in watched(s) and value(
                s, "jvmos_jvm_unwatched", pid=j2.pid, reason="max_jvms") is None, 15,
                "the second JVM watched once the first is gone")
            ag.wait_log("--max-jvms 1 reached: not watched pid")
        finally:
            stop_jvm(j1)
            stop_jvm(j2)


@needs_engine
def test_a_jvm_that_execs_is_watched_as_its_new_program(platform_file, app, tmp_path):
    new = jdk(min_feature=22)
    if new is None:
        pytest.skip("needs a JDK 22+ (the foreign function API calls execv)")
    d = tmp_path / "exec"
    subprocess.run([str(new.home / "bin" / "javac"), "-d", str(d),
                    str(HERE / "java" / "ExecSelf.java")], check=True, timeout=300)
    with Agent(tmp_path, ["--match", "main=ExecSelf", "--match", app.match,
                          "--interval", "1"]) as ag:
        ag.wait_up()
        p = subprocess.Popen([str(new.home / "bin" / "java"), "--enable-native-access=ALL-UNNAMED",
                              "-cp", str(d), "ExecSelf", "3", app.java, "-jar", str(app.jar),
                              str(tmp_path / "f"), "4", "256", "5", "500"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            got = ag.wait_for(lambda s: value(s, "jvmos_jvm_watch_start_time_seconds",
                                              pid=p.pid, main_class="ExecSelf"), 10,
                              "the JVM before its exec")
            first = value(got, "jvmos_jvm_watch_start_time_seconds", pid=p.pid)
            got = ag.wait_for(lambda s: (value(s, "jvmos_category_calls_total", pid=p.pid,
                                               main_class="PacedWrites",
                                               category="jni_copy") or 0) > 0, 20,
                              "the program it exec'd, counted")
            assert value(got, "jvmos_jvm_watch_start_time_seconds", pid=p.pid,
                         main_class="ExecSelf") is None
            assert value(got, "jvmos_jvm_watch_start_time_seconds", pid=p.pid) > first
            info = [s for s in got if s.name == "jvmos_jvm_info"][0].labels
            assert info["jdk_version"].startswith("17") or info["jdk_version"] != new.version
            assert p.wait(timeout=60) == 0, p.stderr.read()
        finally:
            stop_jvm(p)
        ag.wait_log(f"pid {p.pid} (ExecSelf")
        assert "exec'd" in ag.log()


# ---------------------------------------------------------------------------- the limit

@needs_engine
def test_probes_are_shed_over_the_limit_and_come_back(platform_file, app, tmp_path):
    """A JVM writing in a tight loop (probe effect far above 2% of its CPU) has its io
    probes shed; after the back-off they come back, are shed again while the loop lasts, and
    stay once its rate falls (the paced phase: well under 2%).

    The interval is 0.5 s: io is counted in windows, and a layer is shed only when even the
    shortest window (0.1 s) would pass the limit, i.e. when its probes cost over 10% of the
    JVM's CPU while on here. The loop's cost 54-68% while on; at a 1 s interval (20%) a
    loaded CI machine once kept it windowed: the JIT's CPU in the loop's first seconds is
    in the denominator too."""
    with Agent(tmp_path, ["--match", app.match, "--interval", "0.5",
                          "--shed-backoff", "2", "--max-overhead", "2%"]) as ag:
        ag.wait_up()
        j = paced(app, tmp_path / "f", seconds=25, size=64, writes=2, spin_us=2000,
                  burst_s=4)
        try:
            ag.wait_for(lambda s: (value(s, "jvmos_probe_sheds_total", pid=j.pid,
                                         layer="io") or 0) >= 1, 15, "io shed")
            assert j.stdout.readline().strip() == "paced"      # the tight loop is over
            # the loop's last interval judged (three --interval 0.5): io may have come back
            # inside the loop and been shed again by its tail (the agent adds a JVM to its
            # engine sooner after the JVM starts than it started an engine of its own, so its
            # first shed, and the end of the back-off after it, come earlier in the loop)
            time.sleep(1.5)
            got = ag.wait_for(lambda s: value(s, "jvmos_probes_shed", pid=j.pid,
                                              layer="io") == 0
                              and (value(s, "jvmos_probe_returns_total", pid=j.pid,
                                         layer="io") or 0) >= 1, 20, "io back")
            calls0 = value(got, "jvmos_category_calls_total", pid=j.pid, category="jni_copy")
            time.sleep(3)
            got = ag.samples()
            assert value(got, "jvmos_probes_shed", pid=j.pid, layer="io") == 0
            assert value(got, "jvmos_category_calls_total", pid=j.pid,
                         category="jni_copy") > calls0
            ratio = value(got, "jvmos_probe_effect_of_cpu_ratio", pid=j.pid)
            assert ratio is not None and ratio < 0.02, ratio
        finally:
            stop_jvm(j)
    log = ag.log()
    assert "> --max-overhead 2%: shed io" in log and "putting back io" in log, log


@needs_engine
def test_duty_cycling_counts_a_busy_jvm_in_every_period(platform_file, app, tmp_path):
    """A JVM whose io probes cost about a fifth of its CPU while on (200 writes of 64 B and a 2
    ms spin every 10 ms) under the default 2% limit and a 2 s --interval: io is counted in a
    window of every period (its exact counter rises between any two scrapes a period apart,
    its coverage is between 0 and 1, it is never shed), the estimated probe effect of six
    intervals after the first three windows stays under the limit on average (and within
    1.5 times it in each: a window overruns when the agent is scheduled late), and the
    extrapolated rate
    is within 10% of the rate the JVM counted itself (its own writes / the length of its
    paced phase)."""
    with Agent(tmp_path, ["--match", app.match, "--interval", "2", "--layers", "io"]) as ag:
        ag.wait_up()
        j = paced(app, tmp_path / "f", seconds=30, size=64, writes=200, spin_us=2000)
        try:
            assert j.stdout.readline().strip() == "paced"
            got = ag.wait_for(lambda s: (value(s, "jvmos_category_rate_windows", pid=j.pid,
                                               category="jni_copy") or 0) >= 3, 30,
                              "three windows")
            calls, covs, ratios, ticks = [], [], [], []
            for _ in range(6):
                calls.append(value(got, "jvmos_category_calls_total", pid=j.pid,
                                   category="jni_copy"))
                ticks.append(value(got, "jvmos_jvm_intervals_total", pid=j.pid))
                covs.append(value(got, "jvmos_coverage_ratio", pid=j.pid, layer="io"))
                ratios.append(value(got, "jvmos_probe_effect_of_cpu_ratio", pid=j.pid))
                assert value(got, "jvmos_probes_shed", pid=j.pid, layer="io") == 0
                time.sleep(2.2)
                got = ag.samples()
            rate = {b: value(got, "jvmos_category_call_rate_estimated", pid=j.pid,
                             category="jni_copy", bound=b)
                    for b in ("estimate", "lower95", "upper95")}
            est = value(got, "jvmos_category_calls_estimated_total", pid=j.pid,
                        category="jni_copy")
            exact = value(got, "jvmos_category_calls_total", pid=j.pid, category="jni_copy")
            done = j.stdout.readline().split()
        finally:
            stop_jvm(j)
    report = {"calls": calls, "intervals": ticks, "coverage": covs, "probe_ratio": ratios,
              "rate": rate, "estimated": est, "exact": exact, "jvm": done}
    print(json.dumps(report, indent=1))
    # every interval that ended between two scrapes (2.2 s apart; the agent's own count of
    # intervals says which did: on a loaded machine one may end late) brought new counts
    steps = list(zip(zip(calls, ticks), zip(calls[1:], ticks[1:])))
    assert all(c1 > c0 for (c0, t0), (c1, t1) in steps if t1 > t0), report
    assert sum(1 for (_, t0), (_, t1) in steps if t1 > t0) >= 3, report
    assert all(0 < c < 1 for c in covs), report
    # the windows are sized to 80% of the limit; a window can overrun when the agent is not
    # scheduled in time (the suite's load: one interval at 2.14% of 2% once): the limit holds
    # on average, and no interval passes it by half (the README's stated limit)
    assert all(r is not None for r in ratios), report
    assert sum(ratios) / len(ratios) <= 0.02 and max(ratios) <= 1.5 * 0.02, report
    assert est > 2 * exact, report            # most of each period is extrapolated
    assert done[0] == "done", report
    truth = int(done[1]) / (int(done[2]) / 1e9)
    assert abs(rate["estimate"] / truth - 1) <= 0.10, (truth, report)
    log = ag.log()
    assert "shed io" not in log, log


@needs_engine
def test_sample_serves_a_cpu_profile_as_pprof(platform_file, app, tmp_path):
    """--sample: async-profiler samples the JVM for a 1 s window of every 3 s (loaded by
    jattach; the JVM writes its JFR in its own /tmp); the endpoint serves the last window as
    gzipped pprof, which Go's own pprof reads, whose duration is the window's, and in which
    the JVM's main method is on the stack; the metrics count the windows; the JVM's exit is
    survived and no JFR is left in its /tmp."""
    if not shutil.which("jattach"):
        pytest.skip("needs jattach (apt-get install jattach; make test installs it)")
    with Agent(tmp_path, ["--match", app.match, "--sample", "--sample-every", "3",
                          "--sample-window", "1", "--max-overhead", "none"]) as ag:
        ag.wait_up()
        j = paced(app, tmp_path / "f", seconds=40, size=64, writes=20, spin_us=5000)
        try:
            ag.wait_for(lambda s: (value(s, "jvmos_profile_windows_total", pid=j.pid) or 0)
                        >= 1, 30, "a profile window")
            url = f"http://127.0.0.1:{ag.port}/debug/pprof/profile?pid={j.pid}"
            with urllib.request.urlopen(url, timeout=60) as r:
                body = r.read()
                start = float(r.headers["X-Jvmos-Window-Start"])
                end = float(r.headers["X-Jvmos-Window-End"])
            assert body[:2] == b"\x1f\x8b" and end > start
            prof = tmp_path / "cpu.pb.gz"
            prof.write_bytes(body)
            top = subprocess.run([str(ROOT / "scripts" / "go.sh"), "tool", "pprof", "-top",
                                  "-show", "PacedWrites", str(prof)],
                                 cwd=ROOT / "probes" / "engine", capture_output=True, text=True,
                                 timeout=300)
            assert top.returncode == 0, top.stderr
            assert "PacedWrites.main" in top.stdout, top.stdout
            # the profile's own duration (async-profiler's JFR), not the agent's headers
            dur = re.search(r"Duration: ([0-9.]+)(ms|s)", top.stdout)
            assert dur, top.stdout
            secs = float(dur.group(1)) / (1000 if dur.group(2) == "ms" else 1)
            assert 0.5 <= secs <= 2.0, top.stdout
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(url.replace(f"pid={j.pid}", "pid=1"), timeout=30)
            assert e.value.code == 404
            lived = ag.log()              # the log while the JVM lived
        finally:
            stop_jvm(j)
        ag.wait_for(lambda s: j.pid not in watched(s), 15, "the JVM gone")
        assert ag.proc.poll() is None
    # no window failed while the JVM lived (one that starts as it is killed may)
    assert "could not start" not in lived, lived
    assert not list(Path("/tmp").glob(f"jvmos-profile-{j.pid}-*.jfr"))


def _sampler_model(platform_file) -> dict:
    model = json.loads(Path(platform_file).read_text()).get("sampler")
    assert model, f"{platform_file} has no sampler cost (jvmos calibrate --sampler)"
    return model


@needs_engine
def test_the_sampler_calibration_is_the_agents_engine_with_its_intervals(platform_file):
    """The platform file's sampler price (made by jvmos calibrate --sampler on a real JVM and
    async-profiler): the agent's engine (itimer), each constant with a 95% interval and its
    n, every arm of the design measured, the sampled segments with samples, and never more
    samples than a sample per interval of the loop's CPU (itimer fires at the kernel's tick:
    fewer when the interval is below it): on a kernel that does not say its tick rate, the
    rate is checked against the interval alone)."""
    from jvmos import samplercost
    m = _sampler_model(platform_file)
    assert m["event"] == samplercost.EVENT == "itimer"
    assert samplercost.validate(m) is None
    for k in ("ns_per_sample", "ns_per_window", "ns_per_window_s"):
        assert m[k]["n"] >= 2 and len(m[k]["ci95"]) == 2, m[k]
    # a sample and a window's start and stop cost the sampled JVM some CPU: the price the
    # agent uses (each interval's upper end) must be above 0 (two blocks do not resolve a
    # sample's mean from 0 here: -8.3 us once, the loop's own spread about 1% of its CPU)
    c, f, _ = samplercost.constants(m)
    assert c > 0 and f > 0, m
    assert c == m["ns_per_sample"]["ci95"][1] and f == m["ns_per_window"]["ci95"][1]
    # never more than a sample per interval of the CPU; at least 0.85 of one per interval, or
    # per tick where the interval is shorter than the kernel's tick (itimer's signal comes at
    # a tick; 247-306 a CPU second were seen at 250 Hz and a 1 ms interval: more than one per
    # tick at times, not explained), where the kernel says its tick
    per_s = 1e9 / m["interval_ns"]
    rate = m["samples_per_cpu_s"]["mean"]
    assert 0 < rate <= 1.05 * per_s, m["samples_per_cpu_s"]
    if m.get("tick_hz"):
        assert rate >= 0.85 * min(per_s, m["tick_hz"]), (m["samples_per_cpu_s"], m["tick_hz"])
    elif 1e9 / m["interval_ns"] <= 100:        # at 10 ms and above no tick (>= 100 Hz) limits it
        assert rate >= 0.85 * per_s, m["samples_per_cpu_s"]
    assert "Student's t 95%" in m["method"]
    assert {r["arm"] for r in m["segments"]} == set(samplercost.ORDER)
    assert all(r["samples"] > 0 for r in m["segments"] if r["arm"] == "sampled")


@needs_engine
def test_sample_windows_are_sized_within_max_overhead(platform_file, app, tmp_path):
    """--sample with --max-overhead on a busy JVM (about 0.8 of a core, its CPU measured
    first): at a limit that a window without a sample passes 4 times, with --sample-every
    too short to lengthen it, windows are skipped, counted and said why, and none runs; at a
    limit at which an empty window fits half the sampler's share only once 4 s long, the
    window is lengthened to that (the gauge), its interval is what the price leaves for the
    samples at the CPU the agent planned by, and its estimated cost is at least its start,
    stop and seconds."""
    if not shutil.which("jattach"):
        pytest.skip("needs jattach (apt-get install jattach; make test installs it)")
    from jvmos import cputime, dutycycle as dc
    m = _sampler_model(platform_file)
    from jvmos import samplercost
    c, f, g = samplercost.constants(m)          # the prices the agent sizes windows with
    window = 2                                   # s (a whole number: async-profiler's timeout)
    j = paced(app, tmp_path / "f", seconds=90, size=64, writes=5, spin_us=8000)
    try:
        assert j.stdout.readline().strip() == "paced"
        c0, t0 = cputime.process_cpu_ns(j.pid), time.monotonic()
        time.sleep(3)
        cpu = (cputime.process_cpu_ns(j.pid) - c0) / (time.monotonic() - t0)    # ns per s
        share = dc.SAMPLER_SHARE * dc.TARGET / 100.0 * cpu       # ns/s per % of limit
        empty = f / window + g          # a window without a sample, per second (ns)
        tight = empty / 4 / share       # that is 4 x the share, and no room to lengthen it
        args = ["--match", app.match, "--layers", "io", "--sample", "--sample-window",
                str(window)]
        with Agent(tmp_path, args + ["--sample-every", "3", "--max-overhead", f"{tight:.6f}"],
                   name="tight") as ag:
            got = ag.wait_for(lambda s: (value(s, "jvmos_profile_skipped_total", pid=j.pid)
                                         or 0) >= 2, 40, "two windows skipped")
            assert (value(got, "jvmos_profile_windows_total", pid=j.pid) or 0) == 0
            prof = next(w for w in ag.status()["watched"] if w["pid"] == j.pid)["profiles"]
            assert "without a sample" in prof["last_skip"], prof
            ag.wait_log("window skipped")
        # a limit whose share fits a window's start and stop only once it is 4 s long (at
        # the CPU measured here): --sample-every 10 lets it grow to 5 s
        # (as the agent reads it: the command line's 6 decimals)
        lengthen = float(f"{(g + 1.1 * f / 4 + c * cpu / 10e6) / share:.6f}")
        with Agent(tmp_path, args + ["--sample-every", "10", "--max-overhead",
                                     f"{lengthen:.6f}"], name="lengthen") as ag:
            ag.wait_for(lambda s: (value(s, "jvmos_profile_windows_total", pid=j.pid)
                                   or 0) >= 1, 60, "a profile window")

            def plan():
                return next(w for w in ag.status()["watched"] if w["pid"] == j.pid)["profiles"]
            # the metrics and the plan they came from: a window planned between the scrape
            # and /status (every 10 s) would pair one window's gauges with the next's CPU
            # (the limit on the command line has 6 decimals: lengthen is that value above)
            for _ in range(10):
                before = plan()
                got = ag.samples()
                prof = plan()
                if before["planned_cpu_per_s"] == prof["planned_cpu_per_s"]:
                    break
            basis = prof["planned_cpu_per_s"]          # the JVM's CPU the agent planned by
            # the plan for that CPU (dutycycle's rule, unit-tested with numbers by hand)
            want, length, _ = dc.sampler_window(c, f, g, basis, window, 5, lengthen, 10**7)
            assert value(got, "jvmos_profile_window_seconds", pid=j.pid) == length, \
                (length, basis, cpu)
            assert value(got, "jvmos_profile_interval_seconds", pid=j.pid) == \
                pytest.approx(want / 1e9, rel=1e-6)
            # at the CPU measured here the design is a 4 s window
            assert length > window or basis > 1.3 * cpu, (length, basis, cpu)
            cost = value(got, "jvmos_profile_estimated_cost_seconds_total", pid=j.pid)
            n = value(got, "jvmos_profile_windows_total", pid=j.pid)
            # each window its start, stop and seconds, and its samples
            assert cost >= n * (f + g * length) / 1e9 * (1 - 1e-9), (cost, n)
            # the budget: a window's estimated cost within the sampler's share of the limit
            # over its length, at the CPU the agent planned by (a quarter of slack: the
            # samples follow the JVM's CPU during the window, which may be above the plan's)
            allowed = dc.SAMPLER_SHARE * dc.TARGET * lengthen / 100.0 * basis     # ns per s
            assert cost / n <= 1.25 * allowed * length / 1e9, (cost, n, allowed, length)
            # a window may have been skipped at a moment the JVM's CPU (as the agent read it,
            # on a busy machine) fell: only ever for the sampler's share, and said so
            assert prof["skipped"] == 0 or "the sampler's share" in prof["last_skip"], prof
    finally:
        stop_jvm(j)


# ---------------------------------------------------------------------------- restarts

def _engines_of(agent_pid: int) -> list:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                st = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            comm = st[st.index("(") + 1:st.rindex(")")]
            if int(st[st.rindex(")") + 2:].split()[1]) == agent_pid and comm == "jvmos-engine":
                out.append(int(d))
    return out


def _bpf_ids(pid: int) -> tuple:
    """(link ids, program ids) the process holds, from its fds' fdinfo."""
    links, progs = set(), set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            text = Path(f"/proc/{pid}/fdinfo/{fd}").read_text()
        except OSError:
            continue
        for line in text.splitlines():
            k, _, v = line.partition(":")
            if k == "link_id":
                links.add(int(v))
            elif k == "prog_id":
                progs.add(int(v))
    return links, progs


def _running(pid: int) -> bool:
    try:
        st = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return st[st.rindex(")") + 2] not in "ZX"


def _kernel_ids(what: str) -> set:
    r = subprocess.run(["bpftool", "-j", what, "show"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return {x["id"] for x in json.loads(r.stdout or "[]")}


@needs_engine
def test_sigkill_leaves_no_probe_and_a_restart_starts_at_zero(platform_file, app, tmp_path):
    if not shutil.which("bpftool"):
        pytest.skip("needs bpftool")
    j = paced(app, tmp_path / "f", seconds=60, size=512, writes=5, spin_us=2000)
    ag = None
    try:
        # no limit: nothing is shed, the one engine stays attached until the kill
        ag = Agent(tmp_path, ["--match", app.match, "--interval", "1", "--max-overhead", "none"])
        got = ag.wait_for(lambda s: (value(s, "jvmos_jvm_intervals_total", pid=j.pid) or 0)
                          >= 2, 20, "two intervals")
        first_start = value(got, "jvmos_jvm_watch_start_time_seconds", pid=j.pid)
        engines = _engines_of(ag.proc.pid)
        assert len(engines) == 1, engines
        links, progs = _bpf_ids(engines[0])
        # the kernel lists what the engine holds (the check below could fail)
        assert links and links <= _kernel_ids("link"), links
        assert progs and progs <= _kernel_ids("prog"), progs
        ag.proc.kill()
        ag.proc.wait(timeout=30)
        t_kill = time.time()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and ((links & _kernel_ids("link"))
                                               or (progs & _kernel_ids("prog"))):
            time.sleep(0.2)
        assert not links & _kernel_ids("link"), "links outlived the killed agent"
        assert not progs & _kernel_ids("prog"), "programs outlived the killed agent"
        # the engine died with the agent (PR_SET_PDEATHSIG): gone, or a zombie until its
        # new parent reaps it
        assert not [p for p in engines if _running(p)], engines
        assert j.poll() is None, "the JVM must outlive the agent"

        with Agent(tmp_path, ["--match", app.match, "--interval", "1"],
                   name="agent2") as ag2:
            got = ag2.wait_for(lambda s: (value(s, "jvmos_jvm_intervals_total", pid=j.pid)
                                          or 0) >= 1, 20, "the JVM watched again")
            again = value(got, "jvmos_jvm_watch_start_time_seconds", pid=j.pid)
            assert again > t_kill > first_start
            assert value(got, "jvmos_agent_start_time_seconds") > t_kill
            created = value(got, "jvmos_category_calls_created", pid=j.pid,
                            category="jni_copy")
            assert created is not None and created > t_kill
            # counting from zero: two 10 ms ticks of 5 writes a second since the restart
            assert value(got, "jvmos_category_calls_total", pid=j.pid,
                         category="jni_copy") < 500 * (time.time() - t_kill + 2)
    finally:
        if ag is not None:
            ag.stop()
        stop_jvm(j)


@needs_engine
def test_the_units_capabilities_are_enough(platform_file, app, tmp_path):
    """The agent with only the capabilities of deploy/jvmos-agent.service (a root process
    whose bounding set is those, in a mount namespace of its own, as systemd runs it with
    ProtectSystem=) attaches to a JVM of another user and estimates its guaranteed overhead
    (the JDK's calibration found through /proc/PID/root)."""
    if not shutil.which("setpriv"):
        pytest.skip("needs setpriv (util-linux)")
    caps = next(l.split("=", 1)[1].split() for l in UNIT.read_text().splitlines()
                if l.startswith("CapabilityBoundingSet="))
    bset = "-all," + ",".join("+" + c.lower().removeprefix("cap_") for c in caps)
    j = paced(app, "/dev/null", seconds=30, size=512, writes=5, spin_us=2000,
              user="65534")
    try:
        with Agent(tmp_path, ["--match", f"user=65534,{app.match}", "--match",
                              f"user=nobody,{app.match}", "--interval", "1"],
                   prefix=["unshare", "--mount", "--propagation", "private", "setpriv",
                           f"--bounding-set={bset}", "--inh-caps=-all"]) as ag:
            got = ag.wait_for(lambda s: (value(s, "jvmos_category_calls_total", pid=j.pid,
                                               category="jni_copy") or 0) > 0, 20,
                              "the other user's JVM counted")
            status = Path(f"/proc/{ag.proc.pid}/status").read_text()
            eff = int(next(l.split()[1] for l in status.splitlines()
                           if l.startswith("CapEff:")), 16)
            assert eff != (1 << 41) - 1 and not eff >> 21 & 1, hex(eff)  # no CAP_SYS_ADMIN
            assert value(got, "jvmos_agent_attach_failures_total") == 0
            got = ag.wait_for(lambda s: value(s, "jvmos_guaranteed_overhead_estimated_seconds_total",
                                              pid=j.pid, resource="io"), 20,
                              "its guaranteed overhead")
            assert not value(got, "jvmos_guaranteed_overhead_unknown_intervals_total",
                             pid=j.pid, resource="io")
            info = [s for s in got if s.name == "jvmos_jvm_info"][0].labels
            assert not info["jvm_home"].startswith("/proc/") and info["user"] == "nobody"
    finally:
        stop_jvm(j)


# ---------------------------------------------------------------------------- Prometheus

def _prom_query(port: int, query: str, at: float) -> dict:
    url = (f"http://127.0.0.1:{port}/api/v1/query?"
           + urllib.parse.urlencode({"query": query, "time": f"{at:.3f}"}))
    with urllib.request.urlopen(url, timeout=30) as r:
        doc = json.loads(r.read())
    assert doc["status"] == "success", doc
    return {int(x["metric"]["pid"]): float(x["value"][1]) for x in doc["data"]["result"]}


# the agent's and a recording's per-second guaranteed overhead of the same JVM over the
# same seconds may differ by at most this factor (see the test's docstring)
AGREE_FACTOR = 1.25


@needs_engine
def test_prometheus_scrapes_the_agent_and_agrees_with_record(platform_file, app, tmp_path):
    """A real Prometheus (Debian's package) scrapes the agent every second; two JVMs with
    different loads run under it. For each, a one-off `jvmos record --mode count --layers io
    --duration 8` measures its guaranteed overhead while the agent keeps watching; the agent's
    counter per second (PromQL, the same 8 s) must be within AGREE_FACTOR of the
    recording's guaranteed overhead per second of its wall time.

    Why a factor, and this one: the two apply the same calibrated per-call and per-byte models
    (io's guaranteed overhead is jni_copy + nio_copy + kernel_copy, estimated from counted calls
    and bytes in --mode count) to calls the probes counted, so they can differ only where the
    windows' edges fall (the agent's 1 s intervals, Prometheus's 1 s scrapes and the
    extrapolation to the window's ends; up to about 1 s of each 8 s window) and in how steady
    the paced load is across them. A load that stays within +-10% per second stays well
    within 1.25; a mixed-up JVM (the two loads differ by more than 5x) does not. The agent's
    side is per second of the time its counters cover (increase over
    jvmos_jvm_counted_seconds_total's increase), not PromQL's rate(): on a loaded machine a
    snapshot comes late and rate() then puts seconds of counts from before the window into it
    (once 1.38x the recording's, with the CPU share, a ratio of two counters read together,
    agreeing within 4%).

    A third JVM, busy enough that the agent counts its io in windows (duty cycling): the
    per-second increase of its extrapolated count of JNI copies must be within 10% of the recording's
    (which counts them all), and Prometheus holds its coverage below 1 while the two paced
    JVMs' is 1."""
    prom = shutil.which("prometheus")
    if not prom:
        pytest.skip("needs Prometheus (apt-get install prometheus; make test installs it)")
    with Agent(tmp_path, ["--match", app.match, "--interval", "1", "--layers", "io"]) as ag:
        ag.wait_up()
        ppath = tmp_path / "prometheus"
        pport = free_port()
        pserver = start_prometheus(prom, ppath, ag.port, pport)
        heavy = paced(app, tmp_path / "heavy", seconds=90, size=8192, writes=10,
                      spin_us=3000)
        light = paced(app, tmp_path / "light", seconds=90, size=64, writes=2,
                      spin_us=2000)
        # the busy JVM's windows sample its rate: it must keep its pace under the suite's
        # load (it fell behind its ticks, to 5,000-6,800 writes a second of its 10,000, and
        # its windows then sampled the host's load: 0.81-1.20 of the recording's rate)
        busy = paced(app, tmp_path / "busy", seconds=90, size=64, writes=100,
                     spin_us=2000, nice=-10)
        jvms = {"heavy": heavy, "light": light, "busy": busy}
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                assert pserver.poll() is None, (ppath / "prometheus.log").read_text()
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{pport}/-/ready", timeout=5)
                    break
                except OSError:
                    time.sleep(0.2)
            ag.wait_for(lambda s: all((value(s, "jvmos_jvm_intervals_total", pid=p.pid)
                                       or 0) >= 3 for p in jvms.values()), 30, "both watched")
            rec = {}
            for name, p in jvms.items():
                out = tmp_path / f"rec-{name}"
                r = run_jvmos(["record", "--pid", str(p.pid), "--mode", "count", "--layers",
                               "io", "--duration", "8", "--out", str(out)], timeout=300)
                t_end = time.time()
                assert r.returncode == 0, r.stderr
                s = json.loads((out / "summary.json").read_text())
                tot = s["totals"]
                assert tot["guaranteed_overhead_ns"] is not None, s["warnings"]
                rec[name] = {"rate": tot["guaranteed_overhead_ns"] / tot["wall_ns"],
                             "jni_per_s": s["categories"]["jni_copy"]["calls"]
                             / (tot["wall_ns"] / 1e9),
                             "share": tot["guaranteed_overhead_pct_of_cpu"] / 100.0,
                             "wall_s": tot["wall_ns"] / 1e9, "t_end": t_end}
            time.sleep(2)      # the last interval and scrape of the second recording's window
            got = {}
            for name, p in jvms.items():
                w = round(rec[name]["wall_s"])
                at = rec[name]["t_end"] + 1
                sel = f'{{pid="{p.pid}",resource="io"}}'
                secs = f'jvmos_jvm_counted_seconds_total{{pid="{p.pid}"}}[{w}s]'
                counted = f"increase({secs})"
                rate = _prom_query(pport, "sum by (pid) (increase("
                                   f"jvmos_guaranteed_overhead_estimated_seconds_total"
                                   f"{sel}[{w}s])) / sum by (pid) ({counted})", at)
                share = _prom_query(
                    pport, f"sum by (pid) (rate(jvmos_guaranteed_overhead_estimated_seconds_total"
                    f"{sel}[{w}s])) / sum by (pid) (rate(jvmos_jvm_cpu_seconds_total"
                    f'{{pid="{p.pid}"}}[{w}s]))', at)
                calls = _prom_query(
                    pport, "sum by (pid) (increase(jvmos_category_calls_estimated_total"
                    f'{{pid="{p.pid}",category="jni_copy"}}[{w}s])) / sum by (pid) ({counted})',
                    at)
                # the counters' seconds per second of the window: below 1 where snapshots lag
                covered = _prom_query(pport, f"sum by (pid) (rate({secs}))", at)
                cov = _prom_query(pport, "avg_over_time(jvmos_coverage_ratio"
                                  f'{{pid="{p.pid}",layer="io"}}[{w}s])', at)
                got[name] = {"rate": rate.get(p.pid), "share": share.get(p.pid),
                             "jni_per_s": calls.get(p.pid), "coverage": cov.get(p.pid),
                             "counted_s_per_s": covered.get(p.pid)}
        finally:
            for p in jvms.values():
                stop_jvm(p)
            pserver.terminate()
            try:
                pserver.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pserver.kill()
                pserver.wait()
    report = {n: {"agent": got[n], "record": rec[n]} for n in jvms}
    (tmp_path / "comparison.json").write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))
    for name in ("heavy", "light"):
        assert got[name]["coverage"] == 1.0, report
        a, r = got[name]["rate"], rec[name]["rate"]
        assert a is not None and r > 0, report
        assert r / AGREE_FACTOR <= a <= r * AGREE_FACTOR, (name, report)
        # the same as a share of the JVM's CPU time over those seconds
        a, r = got[name]["share"], rec[name]["share"]
        assert a is not None and r / AGREE_FACTOR <= a <= r * AGREE_FACTOR, (name, report)
    # the loads differ: a label mix-up would not pass the checks above
    assert rec["heavy"]["rate"] > 5 * rec["light"]["rate"], report
    # the busy JVM: counted in windows, its extrapolated rate within 10% of the recording's
    assert 0 < got["busy"]["coverage"] < 1, report
    a, r = got["busy"]["jni_per_s"], rec["busy"]["jni_per_s"]
    assert a is not None and abs(a / r - 1) <= 0.10, report


OTELCOL = ROOT / "build" / "otelcol" / "src" / "otelcol-jvmos-test"


def _pushed(path: Path, name: str, **labels) -> list:
    """(time_unix_nano, start_time_unix_nano, value, unit, resource) of every data point of
    metric `name` with these attributes the collector's file exporter wrote (OTLP JSON)."""
    out = []
    text = path.read_text() if path.exists() else ""
    for line in text.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:          # a line being written
            continue
        for rm in doc.get("resourceMetrics", []):
            res = {a["key"]: a["value"].get("stringValue")
                   for a in rm.get("resource", {}).get("attributes", [])}
            for sm in rm.get("scopeMetrics", []):
                for m in sm.get("metrics", []):
                    if m["name"] != name:
                        continue
                    data = m.get("sum") or m.get("gauge") or {}
                    for p in data.get("dataPoints", []):
                        a = {x["key"]: x["value"].get("stringValue")
                             for x in p.get("attributes", [])}
                        if all(a.get(k) == str(v) for k, v in labels.items()):
                            out.append((int(p["timeUnixNano"]),
                                        int(p.get("startTimeUnixNano", 0)),
                                        float(p.get("asDouble", p.get("asInt", 0))),
                                        m.get("unit", ""), res))
    return sorted(out)


@needs_engine
def test_otlp_push_reaches_a_real_collector(app, tmp_path):
    """`--otlp-endpoint`: an OpenTelemetry collector (the collector's own OTLP receiver and
    file exporter, built by scripts/build-otelcol.sh) receives the agent's series. With the
    JVM stopped (SIGSTOP) its counters stand still: the JNI copies the collector got in a push
    after a scrape equal the scrape's exactly, as a cumulative sum that starts at the JVM's
    watch start; the agent counts its pushes."""
    if not OTELCOL.exists():
        pytest.skip(f"needs {OTELCOL.relative_to(ROOT)} (scripts/build-otelcol.sh; make test "
                    "builds it)")
    port, got = free_port(), tmp_path / "otlp.json"
    conf = tmp_path / "otelcol.yaml"
    conf.write_text(
        "receivers:\n  otlp:\n    protocols:\n      http:\n"
        f"        endpoint: 127.0.0.1:{port}\n"
        f"exporters:\n  file:\n    path: {got}\n    flush_interval: 100ms\n"
        "service:\n  telemetry:\n    metrics:\n      level: none\n"
        "  pipelines:\n    metrics:\n      receivers: [otlp]\n      exporters: [file]\n")
    with open(tmp_path / "otelcol.log", "w") as clog:
        col = subprocess.Popen([str(OTELCOL), "--config", str(conf)], stdout=clog,
                               stderr=subprocess.STDOUT)
    j = paced(app, tmp_path / "j", seconds=60, size=64, writes=2, spin_us=2000)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert col.poll() is None, (tmp_path / "otelcol.log").read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, (tmp_path / "otelcol.log").read_text()
                time.sleep(0.2)
        with Agent(tmp_path, ["--match", app.match, "--interval", "1", "--layers", "io",
                              "--otlp-endpoint", f"http://127.0.0.1:{port}",
                              "--otlp-every", "1"]) as ag:
            ag.wait_for(lambda s: (value(s, "jvmos_category_calls_total", pid=j.pid,
                                         category="jni_copy") or 0) > 0, 60, "its copies")
            os.kill(j.pid, signal.SIGSTOP)
            try:
                time.sleep(3)                    # two intervals: its counters stand still
                s = ag.samples()
                counted = value(s, "jvmos_category_calls_total", pid=j.pid,
                                category="jni_copy")
                start = value(s, "jvmos_jvm_watch_start_time_seconds", pid=j.pid)
                t_scrape = time.time_ns()
                deadline = time.monotonic() + 20
                while True:
                    after = [p for p in _pushed(got, "jvmos_category_calls", pid=j.pid,
                                                category="jni_copy") if p[0] > t_scrape]
                    if after or time.monotonic() > deadline:
                        break
                    time.sleep(0.2)
                pushes = ag.samples()
                # SIGTERM: a last push before the engine detaches, the JVM still stopped
                t_stop = time.time_ns()
                ag.stop()
                assert ag.proc.returncode == 0, ag.log()
            finally:
                os.kill(j.pid, signal.SIGCONT)
    finally:
        stop_jvm(j)
        col.terminate()
        col.wait(timeout=30)
    assert after, (counted, _pushed(got, "jvmos_category_calls"), ag.log())
    t, start_ns, v, unit, res = after[0]
    assert v == counted and counted > 0, (after, counted)
    assert start_ns == int(start * 1e9), (start_ns, start)
    assert res["service.name"] == "jvmos-agent" and res["host.name"] == socket.gethostname()
    cpu = _pushed(got, "jvmos_jvm_cpu_seconds", pid=j.pid)
    assert cpu and cpu[-1][3] == "s" and cpu[-1][2] > 0
    # a counter is a cumulative monotonic sum, a gauge a gauge
    kinds = {m["name"]: m for line in got.read_text().splitlines() if line.strip()
             for rm in json.loads(line)["resourceMetrics"] for sm in rm["scopeMetrics"]
             for m in sm["metrics"]}
    calls = kinds["jvmos_category_calls"]["sum"]
    assert calls["isMonotonic"] and calls["aggregationTemporality"] == 2, calls.keys()
    assert "gauge" in kinds["jvmos_coverage_ratio"]
    # the last push, made at SIGTERM (the agent says so), has the same count
    assert f"OTLP: last push to http://127.0.0.1:{port}: ok" in ag.log(), ag.log()
    last = [p for p in _pushed(got, "jvmos_category_calls", pid=j.pid, category="jni_copy")
            if p[0] > t_stop]
    assert last and last[-1][2] == counted, (last, counted, ag.log())
    assert (value(pushes, "jvmos_agent_otlp_pushes_total", result="ok") or 0) >= 2
    assert value(pushes, "jvmos_agent_otlp_pushes_total", result="failed") == 0
    assert f"OTLP push to http://127.0.0.1:{port}/v1/metrics every 1 s" in ag.log()


def _calls(maps: dict, plan, category: str) -> int:
    """A category's calls in one host-engine snapshot of one JVM (its rows only)."""
    from jvmos import engine as engine_mod
    raw = engine_mod.decode(maps, plan)
    return sum(v for k, v in raw.keyed("calls").items() if k[1] == category)


def _switches(maps: dict, plan) -> int:
    """The context switches the threads layer's scheduler handler counted in a snapshot."""
    from jvmos import engine as engine_mod
    return sum(engine_mod.decode(maps, plan).keyed("csw").values())


@needs_engine
def test_one_engine_counts_jvms_apart_and_drops_one_without_a_trace(app, tmp_path):
    """The agent's host engine (jvmos/hostengine.py) with two JVMs: A writes 1 array a tick
    with the io layer only, B 3 a tick with io and threads. Each snapshot holds its JVM's
    rows alone (B's JNI copy rate about 3 times A's); the threads layer's scheduler handler
    (a BTF tracepoint program, which runs for every task: only the layer's bit in the traced
    map keeps it off a JVM) counts B's context switches and none of A's, which sleeps as
    often; dropping A closes A's links (the kernel lists none of them), deletes its rows,
    and leaves B counting on without a reset."""
    from jvmos import jdk
    from jvmos.hostengine import HostEngine
    a = paced(app, tmp_path / "a", seconds=40, size=64, writes=1, spin_us=200)
    b = paced(app, tmp_path / "b", seconds=40, size=64, writes=3, spin_us=200)
    host = None
    try:
        for j in (a, b):
            assert j.stdout.readline().strip() == "paced"
        host = HostEngine(("io", "threads"), tmp_path, 60)
        att = {}
        for name, j, layers in (("b", b, ("io", "threads")), ("a", a, ("io",))):
            jvm = jdk.jvm_of_pid(j.pid)
            libs = {"LIBJVM": [jvm.libjvm], "LIBNIO": [jvm.libnio] if jvm.libnio else [],
                    "LIBC": [jdk.libc_of(j.pid)]}
            if name == "a":
                before_a = _bpf_ids(host.proc.pid)[0]
            att[name] = host.attach(j.pid, layers, libs, jdk.symbols, tmp_path / name, 60)
            assert att[name].ready["uprobes"] > 0
        # both from the same libraries: one slot of probe ids
        assert len(host.slots) == 1 and list(host.slots.values())[0][1] == 2
        links_a = _bpf_ids(host.proc.pid)[0] - before_a
        assert links_a and links_a <= _kernel_ids("link")
        s0 = {n: x.snapshot() for n, x in att.items()}
        time.sleep(3)
        s1 = {n: x.snapshot() for n, x in att.items()}
        for n in att:
            assert {r[0] for r in s1[n]["stats"]} == {att[n].pid}, "another JVM's rows"
        rate = {n: _calls(s1[n], att[n].plan, "jni_copy")
                - _calls(s0[n], att[n].plan, "jni_copy") for n in att}
        assert rate["a"] > 0 and 2.7 <= rate["b"] / rate["a"] <= 3.3, rate
        assert _switches(s1["b"], att["b"].plan) > _switches(s0["b"], att["b"].plan) > 0
        assert _switches(s1["a"], att["a"].plan) == 0, "threads counted where it is off"
        b_before = _calls(s1["b"], att["b"].plan, "jni_copy")
        final = att["a"].stop()
        assert final is not None and final["final"]
        assert att["a"].closed and att["a"].closed["rows"] > 0
        assert not links_a & _kernel_ids("link"), "A's links outlived its drop"
        assert _bpf_ids(host.proc.pid)[0] == before_a
        assert att["a"].snapshot() is None            # dropped: asked for no more
        raw = host.eng
        assert raw._send(f"snapshot {a.pid}")
        ev = raw._wait(("maps",), 30, pid=a.pid)
        assert ev and not ev["stats"] and not ev["counts"], "A's rows left in the maps"
        time.sleep(1)
        assert _calls(att["b"].snapshot(), att["b"].plan, "jni_copy") > b_before
        assert len(host.slots) == 1 and list(host.slots.values())[0][1] == 1
    finally:
        if host is not None:
            host.stop()
            if host.alive():
                host.eng.kill()
        for j in (a, b):
            stop_jvm(j)
