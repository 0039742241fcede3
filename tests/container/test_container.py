"""The container image, run for real (make container-test builds it first with
scripts/container-build.sh; JVMOS_IMAGE names it). Every docker line is the README's "In a
container" one, with a real pid, without -it (no terminal here), in its SYS_ADMIN form (the
narrowest this machine's Docker 20.10 can name: it knows no CAP_BPF or CAP_PERFMON).

  * doctor passes in the container;
  * a bounded host program (GatedWrites: exactly N writes once told to) recorded from inside
    the container has the exact counts of a recording of the same program from the host;
  * the agent in the container is scraped by a real Prometheus (Debian's) on the host's
    loopback, re-reads its configuration on `docker kill --signal HUP`, and `docker stop`
    leaves none of its BPF links behind (bpftool on the host).
"""
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import JVMOS, ROOT, start_prometheus

HERE = Path(__file__).parent
IMAGE = os.environ.get("JVMOS_IMAGE", "jvmos:test")
# the README's SYS_ADMIN form (Docker before 23 knows no BPF or PERFMON capability names),
# with Docker's default seccomp profile (it lets bpf(2) and perf_event_open(2) through for a
# container given CAP_SYS_ADMIN)
CAPS = ["--cap-add", "SYS_ADMIN", "--cap-add", "SYS_PTRACE", "--cap-add", "DAC_READ_SEARCH"]
TRACEFS = ["-v", "/sys/kernel/tracing:/sys/kernel/tracing",
           "-v", "/sys/kernel/debug:/sys/kernel/debug"]
WRITES = 20_000


def _why_not() -> str:
    if os.geteuid() != 0:
        return "needs root"
    if not shutil.which("docker"):
        return "needs docker (make container-test installs it)"
    r = subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True)
    if r.returncode != 0:
        return f"needs the image {IMAGE} (make container-test builds it)"
    return ""


pytestmark = pytest.mark.skipif(bool(_why_not()), reason=_why_not() or "ok")


def docker(*args, timeout=600, check=True) -> subprocess.CompletedProcess:
    r = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if check:
        assert r.returncode == 0, f"docker {' '.join(args[:3])}: {r.stderr[-2000:]}"
    return r


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def gated(tmp_path_factory):
    """GatedWrites compiled with the host's JDK: (java, classes dir)."""
    from jvmos.jdk import discover_jdks
    j = next((j for j in discover_jdks() if (j.home / "bin" / "javac").exists()), None)
    if j is None:
        pytest.skip("needs a JDK with javac")
    d = tmp_path_factory.mktemp("gated")
    subprocess.run([str(j.home / "bin" / "javac"), "--release", "11", "-d", str(d),
                    str(HERE / "java" / "GatedWrites.java")], check=True, timeout=300)
    return str(j.home / "bin" / "java"), d


def start_gated(gated) -> subprocess.Popen:
    java, d = gated
    p = subprocess.Popen([java, "-Xmx64m", "-cp", str(d), "GatedWrites", str(WRITES)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    return p


def record_gated(gated, cmd, out_dir: Path, log: Path) -> dict:
    """One GatedWrites, recorded by cmd (a record --pid line with {pid}) from the moment it
    is attached: told to write once the recording says it traces the pid, released after
    its "done"; the recording's summary. The recordings last 15 s: the container's "tracing
    pid" line reaches the log through docker's output stream, and on a loaded machine a 6 s
    recording once missed one JNI copy of the container's side (20,000 against 20,001; which
    one was not kept)."""
    p = start_gated(gated)
    rec = None
    # the host side calibrates into make test's platform file (JVMOS_TEST_PLATFORM) when it
    # is given, the container into its own, empty one: either may measure first (a minute)
    env = dict(os.environ)
    if os.environ.get("JVMOS_TEST_PLATFORM"):
        env["JVMOS_PLATFORM"] = os.environ["JVMOS_TEST_PLATFORM"]
    try:
        with open(log, "w") as lf:
            rec = subprocess.Popen([c.replace("{pid}", str(p.pid)) for c in cmd], cwd=ROOT,
                                   stdout=lf, stderr=subprocess.STDOUT, text=True, env=env)
        deadline = time.monotonic() + 300
        while "tracing pid" not in log.read_text():
            assert rec.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        p.stdin.write("go\n")
        p.stdin.flush()
        assert p.stdout.readline().strip() == "done"
        assert rec.wait(timeout=300) == 0, log.read_text()
    finally:
        if rec is not None and rec.poll() is None:
            rec.kill()
        try:
            p.stdin.write("end\n")
            p.stdin.flush()
        except OSError:
            pass
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
    return json.loads((out_dir / "summary.json").read_text())


def test_doctor_passes_in_the_container():
    r = docker("run", "--rm", *CAPS, "--pid=host", *TRACEFS, IMAGE, "doctor", timeout=300,
               check=False)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "engine" in r.stdout


def test_a_host_jvm_recorded_from_the_container_has_the_hosts_exact_counts(gated, tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    host = record_gated(gated, JVMOS + ["record", "--pid", "{pid}", "--mode", "count",
                                        "--layers", "io", "--duration", "15", "--out",
                                        str(tmp_path / "host")],
                        tmp_path / "host", tmp_path / "host.log")
    inside = record_gated(gated, ["docker", "run", "--rm", *CAPS, "--pid=host", *TRACEFS,
                                  "-v", f"{runs}:/opt/jvmos/results/runs", IMAGE, "record",
                                  "--pid", "{pid}", "--mode", "count", "--layers", "io",
                                  "--duration", "15", "--out", "/opt/jvmos/results/runs/c"],
                          runs / "c", tmp_path / "container.log")
    for s in (host, inside):
        assert s["status"] == "complete", s.get("status_detail")
    copies = [s["categories"]["jni_copy"]["functions"]["GetByteArrayRegion"]["calls"]
              for s in (host, inside)]
    writes = [s["categories"]["io_syscall"]["syscalls"]["write"]["calls"] for s in (host, inside)]
    # the gate's writes, and the "done" line's, each counted once on both sides (the bytes
    # say which is missing where they differ: 10 a gated write, 5 the "done" line)
    nbytes = [s["categories"]["jni_copy"]["functions"]["GetByteArrayRegion"].get("bytes")
              for s in (host, inside)]
    assert copies[0] == copies[1] and copies[0] >= WRITES, (copies, nbytes, writes,
                                                           [s["totals"] for s in (host, inside)])
    assert writes[0] == writes[1] and writes[0] >= WRITES, writes


def _prom_up(pport: int, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{pport}/-/ready", timeout=5)
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("Prometheus not ready")


def _prom(pport: int, q: str) -> list:
    from urllib.parse import quote
    with urllib.request.urlopen(f"http://127.0.0.1:{pport}/api/v1/query?query={quote(q)}",
                                timeout=10) as r:
        return json.loads(r.read())["data"]["result"]


def _link_ids_of(pid: int) -> set:
    out = set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            for line in Path(f"/proc/{pid}/fdinfo/{fd}").read_text().splitlines():
                if line.startswith("link_id:"):
                    out.add(int(line.split(":")[1]))
        except OSError:
            pass
    return out


def _kernel_links() -> set:
    r = subprocess.run(["bpftool", "-j", "link", "show"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return {x["id"] for x in json.loads(r.stdout or "[]")}


def test_the_agent_in_the_container_is_scraped_reloads_and_stops_clean(gated, tmp_path):
    prom = shutil.which("prometheus")
    if not prom or not shutil.which("bpftool"):
        pytest.skip("needs Prometheus and bpftool (make test installs them)")
    port, pport = free_port(), free_port()
    name = f"jvmos-agent-test-{os.getpid()}"
    conf = tmp_path / "etc"
    conf.mkdir()
    # the agent's defaults (io, a 2% limit) but for its JVMs and its interval; the platform
    # volume starts empty: the agent measures its probes' cost into it first
    conf_text = 'match = ["main=GatedWrites"]\ninterval = {}\n'

    (conf / "agent.toml").write_text(conf_text.format(1))
    platform = tmp_path / "platform"
    platform.mkdir()
    p = start_gated(gated)
    pserver = None
    try:
        # the README's agent line: host PID namespace and network, tracefs, a platform volume
        docker("run", "-d", "--name", name, *CAPS, "--pid=host", "--network=host", *TRACEFS,
               "-v", f"{platform}:/root/.local/share/jvmos", "-v", f"{conf}:/etc/jvmos",
               IMAGE, "agent", "--listen", f"127.0.0.1:{port}", "--config",
               "/etc/jvmos/agent.toml")
        pserver = start_prometheus(prom, tmp_path / "prometheus", port, pport)
        _prom_up(pport)
        deadline = time.monotonic() + 180
        got = []
        while time.monotonic() < deadline:
            got = _prom(pport, f'jvmos_jvm_intervals_total{{pid="{p.pid}"}}')
            if got and float(got[0]["value"][1]) >= 2:
                break
            time.sleep(0.5)
        logs = docker("logs", name, check=False)
        assert got and float(got[0]["value"][1]) >= 2, logs.stdout + logs.stderr
        # the engine is the agent's child in the container, a host process all the same
        agent_pid = int(docker("inspect", "-f", "{{.State.Pid}}", name).stdout.strip())
        engines = [int(x) for x in subprocess.run(
            ["pgrep", "-P", str(agent_pid), "-f", "jvmos-engine"], capture_output=True,
            text=True).stdout.split()]
        links = set().union(*(_link_ids_of(e) for e in engines)) if engines else set()
        assert links and links <= _kernel_links(), (engines, links)
        # SIGHUP: the configuration read again (a 2 s interval; the JVM stays watched)
        (conf / "agent.toml").write_text(conf_text.format(2))
        docker("kill", "--signal", "HUP", name)
        deadline = time.monotonic() + 30
        while not any("configuration reloaded: " in line and "interval 2 s," in line
                      for line in docker("logs", name).stderr.splitlines()):
            assert time.monotonic() < deadline, docker("logs", name).stderr
            time.sleep(0.3)
        links = set().union(*(_link_ids_of(e) for e in engines))
        assert links and links <= _kernel_links()
        docker("stop", name, timeout=120)
        assert not links & _kernel_links(), "BPF links outlived docker stop"
        assert "stopped (SIGTERM)" in docker("logs", name).stderr
    finally:
        docker("rm", "-f", name, check=False)
        if pserver is not None:
            pserver.terminate()
            pserver.wait(timeout=60)
        p.kill()
        p.wait(timeout=30)
