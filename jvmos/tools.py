"""Locating the project's built workloads and the external tools jvmos drives."""
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from jvmos import ROOT, JvmosError

C_BUILD = ROOT / "workloads" / "c" / "build"
IO_JAR = ROOT / "workloads" / "java" / "io" / "target" / "jvmos-io.jar"
TOMCAT_JAR = ROOT / "workloads" / "java" / "tomcat" / "target" / "jvmos-tomcat.jar"
DACAPO_JAR = ROOT / "workloads" / "java" / "dacapo" / "target" / "jvmos-dacapo.jar"
SHOP_JAR = ROOT / "workloads" / "java" / "shop" / "target" / "jvmos-shop.jar"
CHAT_JAR = ROOT / "workloads" / "java" / "chat" / "target" / "jvmos-chat.jar"
IPC_JAR = ROOT / "workloads" / "java" / "ipc" / "target" / "jvmos-ipc.jar"
MATMUL_JAR = ROOT / "workloads" / "java" / "matmul" / "target" / "jvmos-matmul.jar"


def c_program(name: str) -> Path:
    p = C_BUILD / name
    if not p.exists():
        raise JvmosError(f"{p} is not built: run 'make build' in {ROOT}")
    return p


def jar(path: Path) -> Path:
    if not path.exists():
        raise JvmosError(f"{path} is not built: run 'make build' in {ROOT}")
    return path


def bpftrace() -> str:
    p = shutil.which("bpftrace")
    if not p:
        raise JvmosError("bpftrace not found on PATH: install it ('make deps' does, "
                         "or apt-get install bpftrace)")
    return p


def ensure_tracefs() -> None:
    """Mount tracefs (and debugfs) when they are not: tracepoints are found through them."""
    if os.path.exists("/sys/kernel/tracing/events") or \
            os.path.exists("/sys/kernel/debug/tracing/events"):
        return
    if os.geteuid() != 0:
        raise JvmosError("tracefs is not mounted and jvmos is not root: run as root")
    subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"],
                   capture_output=True)
    subprocess.run(["mount", "-t", "debugfs", "nodev", "/sys/kernel/debug"], capture_output=True)
    if not os.path.exists("/sys/kernel/tracing/events"):
        raise JvmosError("could not mount tracefs at /sys/kernel/tracing: "
                         "mount -t tracefs nodev /sys/kernel/tracing")


def host_info() -> dict:
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    u = os.uname()
    return {"hostname": u.nodename, "kernel": u.release, "machine": u.machine, "cpu_model": cpu,
            "cpus": os.cpu_count()}


def interrupt_bpftrace(bt: subprocess.Popen, timeout: float) -> int:
    """SIGINT bpftrace and wait for it to print its maps and exit; killed after `timeout` s.

    bpftrace 0.17 sometimes stays in its event loop (epoll_wait) after a SIGINT, as if it had
    not seen it (seen here at the end of 1 of 3 loops of 10^6 probed writes; a second SIGINT
    ended it normally, with complete output). So while it still waits in that loop, the signal
    is sent again every 15 s. Returns how many times it was re-sent (kept in the manifest)."""
    deadline = time.monotonic() + timeout
    resent = 0
    bt.send_signal(signal.SIGINT)
    while True:
        try:
            bt.wait(timeout=max(0.0, min(15.0, deadline - time.monotonic())))
            return resent
        except subprocess.TimeoutExpired:
            pass
        if time.monotonic() >= deadline:
            bt.kill()
            bt.wait()
            return resent
        try:
            waiting = open(f"/proc/{bt.pid}/wchan").read().strip() == "do_epoll_wait"
        except OSError:
            waiting = False
        if waiting:
            bt.send_signal(signal.SIGINT)
            resent += 1


def program_id(jar_path: Path, main: str) -> dict:
    """A program's identity (the no-leak rule of jvmos's held-out tests): its jar's sha256 and
    its main class."""
    import hashlib
    return {"main": main, "jar": jar_path.name,
            "jar_sha256": hashlib.sha256(jar_path.read_bytes()).hexdigest()}
