"""A tracing session: the one place where jvmos starts, watches and stops what it traces.

`jvmos record` (launch, attach and sample modes), the probe calibrations (jvmos/enginecost.py)
and the bpftrace tools that remain (the network counter, jvmos/netcount.py; the accuracy
experiment's kernel sampler) all go through it:

  * signals: from the start of a session, SIGINT and SIGTERM are a request to stop (kept in
    `interrupted`), not an exception in the middle of a recording;
  * the start gate: a launched command's process exists (its pid can be given to the engine)
    but waits on a pipe until the probes are attached; EOF instead of a byte means "do not
    start" (the command never runs);
  * the probe process (`bt`: the engine, or a bpftrace tool): killed with jvmos
    (PR_SET_PDEATHSIG); a bpftrace tool is ready when its script prints "jvmos-ready" and
    stopped by SIGINT (its own end-of-run output);
  * one wait loop for what ends a recording: a launched command exiting, a duration elapsing,
    an attached target exiting, a driven load finishing, the probe process dying, or a signal;
  * clean-up on every path: a command held at the gate gets EOF, a probe process left running
    is killed, the signal handlers are restored.
"""
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional

from jvmos import JvmosError
from jvmos import cputime
from jvmos.tools import bpftrace, interrupt_bpftrace

# the gate a launched command waits at (run with `python -c GATE GO_FD WAITING_FD CMD...`): it
# says it is waiting (one byte on WAITING_FD, which its exec then closes) before it blocks on
# GO_FD, so that the probes, attached after that byte, never see the interpreter's own start-up
GATE = ("import os, sys\n"
        "fd, waiting = int(sys.argv[1]), int(sys.argv[2])\n"
        "os.set_inheritable(waiting, False)\n"
        "os.write(waiting, b'w')\n"
        "go = os.read(fd, 1)\n"
        "os.close(fd)\n"
        "if not go: os._exit(125)\n"
        "try:\n"
        "    os.execvp(sys.argv[3], sys.argv[3:])\n"
        "except OSError as e:\n"
        "    sys.stderr.write('jvmos: cannot run %s: %s\\n' % (sys.argv[3], e.strerror))\n"
        "    os._exit(127)\n")

GATE_WAIT_S = 120              # how long a launched command's interpreter may take to reach the gate
READY = "jvmos-ready"           # a bpftrace tool's line once every probe is attached
ATTACH_TIMEOUT_S = 600
# Per-thread maps (context switches per thread) outgrow bpftrace's default of 4096 keys in a
# run that starts thousands of threads; updates beyond the limit would be lost silently.
MAP_KEYS_MAX = "16384"


def bpftrace_env() -> Dict[str, str]:
    env = dict(os.environ)
    env.setdefault("BPFTRACE_MAP_KEYS_MAX", MAP_KEYS_MAX)
    return env


def _die_with_parent() -> None:
    """In bpftrace's child before exec: SIGKILL when jvmos dies, so that no probe (and no hold
    of a child at its exec) outlives the recording that placed it."""
    import ctypes
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)       # PR_SET_PDEATHSIG


def _stderr_lines(text: str) -> List[str]:
    """bpftrace's stderr without the harmless RLIMIT_MEMLOCK warning and blank lines."""
    return [l for l in text.splitlines() if "RLIMIT_MEMLOCK" not in l and l.strip()]


def first_error(err_path: Path) -> str:
    """The line of bpftrace's stderr that says what went wrong: the first ERROR line, else
    the first line, else 'no output'."""
    try:
        lines = _stderr_lines(err_path.read_text(errors="replace"))
    except OSError:
        return "no output"
    return next((l for l in lines if "ERROR" in l), lines[0] if lines else "no output").strip()


class OutputTail:
    """The whole lines a growing output file has gained since the last read."""

    def __init__(self, path: Path):
        self.path, self.offset = path, 0

    def read(self) -> bytes:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except OSError:
            return b""
        end = chunk.rfind(b"\n") + 1          # whole lines only
        self.offset += end
        return chunk[:end]


def alive(pid: int) -> bool:
    """The process exists and has not exited (a zombie waiting for its parent has)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            st = f.read()
        return st[st.rindex(")") + 2:][:1] not in ("Z", "X")
    except (OSError, ValueError):
        return False


def run_command(script: str, cmd: str, what: str, timeout: float = 900,
                output: Optional[Path] = None, map_keys: Optional[str] = None,
                check: bool = True) -> subprocess.CompletedProcess:
    """A short run for a calibration or a check: bpftrace starts `cmd` itself (-c: the
    command is split at spaces) and traces it with `script` (text) to its end; its maps go
    to stdout beside the command's, or to `output`. check: JvmosError naming `what` when
    bpftrace exits non-zero or prints an ERROR line."""
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".bt", delete=False) as f:
        f.write(script)
        path = f.name
    # bpftrace's own map size unless asked: the probe-cost calibrations measure the probes
    # as they always have
    env = dict(os.environ)
    if map_keys:
        env["BPFTRACE_MAP_KEYS_MAX"] = map_keys
    try:
        r = subprocess.run([bpftrace(), "-f", "json"] + (["-o", str(output)] if output else [])
                           + [path, "-c", cmd], capture_output=True, text=True,
                           timeout=timeout, env=env)
    finally:
        Path(path).unlink(missing_ok=True)
    errs = [l for l in _stderr_lines(r.stderr) if "ERROR" in l]
    if check and (r.returncode or errs):
        raise JvmosError(f"bpftrace failed while {what}: {(errs or [r.stderr.strip()])[0]}")
    return r


class Session:
    """One tracing session (see the module docstring); a context manager.

    abort(msg, status, code) is called by the session when a start-up step fails: it must
    raise (the recorder writes its manifest there first); the default raises JvmosError."""

    def __init__(self, log: Callable[[str], None] = lambda m: None):
        self.log = log
        self.interrupted: Optional[int] = None
        self.child: Optional[subprocess.Popen] = None
        self.cmd: List[str] = []
        self.gate_w: Optional[int] = None
        self.bt: Optional[subprocess.Popen] = None
        self._old = {}

    # ---- signals and clean-up
    def __enter__(self):
        def on_signal(signum, _frame):
            self.interrupted = signum
        self._old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        return self

    def __exit__(self, *exc):
        for s, h in self._old.items():
            signal.signal(s, h)
        self.close_gate()
        if self.bt is not None and self.bt.poll() is None:
            self.let_die()          # an error on the way: never leave it running
        return False

    # ---- the launched command
    def launch(self, cmd: List[str], stdout=None, stderr=None, env=None,
               gated: bool = True) -> int:
        """Start cmd (held at the gate unless gated=False) with its output to the given paths;
        returns its pid."""
        self.cmd = list(cmd)
        out = open(stdout, "wb") if stdout else None
        err = open(stderr, "wb") if stderr else None
        if not gated:
            self.child = subprocess.Popen(list(cmd), stdout=out, stderr=err, env=env)
            return self.child.pid
        gate_r, self.gate_w = os.pipe()
        waiting_r, waiting_w = os.pipe()
        try:
            self.child = subprocess.Popen(
                [sys.executable, "-c", GATE, str(gate_r), str(waiting_w)] + list(cmd),
                pass_fds=(gate_r, waiting_w), stdout=out, stderr=err, env=env)
        finally:
            os.close(gate_r)
            os.close(waiting_w)
        # until the gate waits (or died: EOF): its start-up is over before any probe attaches
        try:
            import select
            if select.select([waiting_r], [], [], GATE_WAIT_S)[0]:
                os.read(waiting_r, 1)
        finally:
            os.close(waiting_r)
        return self.child.pid

    def release(self) -> None:
        """Let the command held at the gate run."""
        if self.gate_w is not None:
            os.write(self.gate_w, b"go\n")
            os.close(self.gate_w)
            self.gate_w = None

    def close_gate(self) -> None:
        """EOF at the gate: a command still held there never starts (and is reaped)."""
        if self.gate_w is not None:
            os.close(self.gate_w)
            self.gate_w = None
            if self.child is not None:
                self.child.wait()

    # ---- bpftrace
    def start_bpftrace(self, script: Path, args: List[str], raw_path: Path, err_path: Path,
                       unsafe: bool = False) -> subprocess.Popen:
        """bpftrace -f json on the script, its output to raw_path, in its own session (a
        Ctrl-C at the terminal reaches jvmos only), killed with jvmos. unsafe: the script
        may send signals (common.bt holds a traced child at exec)."""
        self.bt = subprocess.Popen([bpftrace(), "-f", "json"] + (["--unsafe"] if unsafe else [])
                                   + [str(script)] + [str(a) for a in args],
                                   stdout=open(raw_path, "wb"), stderr=open(err_path, "wb"),
                                   start_new_session=True, env=bpftrace_env(),
                                   preexec_fn=_die_with_parent)
        return self.bt

    def wait_ready(self, raw_path: Path, err_path: Path, abort, launched: bool,
                   timeout: float = ATTACH_TIMEOUT_S) -> None:
        """Until bpftrace says every probe is attached; abort(msg, status, code) on a signal,
        a bpftrace that exits, or the timeout."""
        never_ran = "; the command never ran" if launched else ""
        t0 = time.time()
        tail = OutputTail(raw_path)
        while True:
            if self.interrupted is not None:
                abort("interrupted before tracing started" + never_ran, "interrupted", 130)
            if self.bt.poll() is not None:
                abort(f"bpftrace failed before tracing started (exit status "
                      f"{self.bt.returncode}): {first_error(err_path)}" + never_ran,
                      "failed", 1)
            if READY.encode() in tail.read():
                return
            if time.time() - t0 > timeout:
                abort(f"bpftrace did not attach within {timeout:.0f}s", "failed", 1)
            time.sleep(0.05)

    def let_die(self) -> None:
        """SIGKILL the probe process, reaped in the background (a killed bpftrace still closes
        its uprobes, a grace period each, before it is gone)."""
        bt = self.bt
        try:
            bt.kill()
        except ProcessLookupError:
            pass
        threading.Thread(target=bt.wait, name="reap-probes", daemon=True).start()

    def interrupt(self, timeout: float = 300) -> int:
        """SIGINT bpftrace and wait for its own end-of-run output (tools.interrupt_bpftrace);
        returns how many times the signal was re-sent."""
        return interrupt_bpftrace(self.bt, timeout=timeout)

    # ---- the wait loop
    def run_load(self, workload: Optional[Callable[[], None]], errors: list):
        """A load driven while tracing, in a thread; an exception it raises is kept in
        `errors` (reported once the recording is written). None without a load."""
        if workload is None:
            return None

        def drive():
            try:
                workload()
            except Exception as e:
                errors.append(e)
        load = threading.Thread(target=drive, daemon=True)
        load.start()
        return load

    def wait_command(self, watch_bpftrace: bool = True, kill_after: Optional[float] = 10,
                     timeout: Optional[float] = None):
        """Launch mode: until the command exits (a signal stops it: SIGTERM, then SIGKILL
        after kill_after s, or no SIGKILL with None), or bpftrace dies. timeout: the command
        is killed and JvmosError raised after that many seconds. Returns cputime.reap's (exit
        code, CPU clock at the end, rusage CPU): the command is reaped only once its CPU time
        has been read."""
        child = self.child
        deadline = None if timeout is None else time.monotonic() + timeout
        while not cputime.exited(child.pid):   # not reaped yet: its CPU stays readable
            if self.interrupted is not None:
                try:
                    child.send_signal(signal.SIGTERM)
                except ProcessLookupError:
                    pass
                if not cputime.wait_exited(child.pid, timeout=kill_after):
                    child.kill()
                break
            if deadline is not None and time.monotonic() >= deadline:
                child.kill()
                cputime.reap(child)
                raise JvmosError(f"{' '.join(map(str, self.cmd))[:80]}: still running "
                                 f"after {timeout:.0f} s, killed")
            if watch_bpftrace and self.bt is not None and self.bt.poll() is not None:
                break
            time.sleep(0.02)
        return cputime.reap(child)

    def wait_attached(self, pid: int, duration: Optional[float], load) -> bool:
        """Attach mode: until a signal, the duration, the load's end, bpftrace dying, or the
        target exiting. Returns True when the target exited (before it was stopped)."""
        deadline = None if duration is None else time.monotonic() + duration
        while self.interrupted is None and (self.bt is None or self.bt.poll() is None):
            if deadline is not None and time.monotonic() >= deadline:
                return False
            if not alive(pid):
                return True
            if load is not None and not load.is_alive():
                return False
            time.sleep(0.05)
        return False
