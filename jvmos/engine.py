"""The compiled engine: jvmos's BPF programs (probes/*.bpf.c), loaded and attached by
build/jvmos-engine (probes/engine, Go on github.com/cilium/ebpf), driven from here.

`jvmos record --engine bpf` writes a plan (which object, which constants, which function of
which library goes to which program with which cookie, which tracepoints), starts the engine,
waits for its ready line, asks for snapshots and stops it, all over one JSON line protocol
(probes/engine/main.go). Nothing is parsed from text a program printed for people: the engine
hands over its maps as numbers, and this module turns them into the maps the analyzers read
(bpftrace's names and key layouts: @calls[pid, category, probe], ...), so every table, figure
and summary field means what it meant under bpftrace.

The catalogue of the compiled maps: the ids below mirror probes/jvmos.h, and
tests/unit/test_engine_catalogue.py keeps the two equal.
"""
import hashlib
import json
import os
import queue
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from jvmos import ROOT, JvmosError
from jvmos.analyzers.rawparse import Raw
from jvmos.catalogue import (IO_LIBC_WRAPPERS, IO_SYSCALLS, JNI_COPY_FUNCTIONS, NIO_NATIVES,
                             PRIMITIVES)

BUILD = ROOT / "build"
ENGINE = BUILD / "jvmos-engine"
OBJECTS = BUILD / "probes"
HEADER = ROOT / "probes" / "jvmos.h"

# ---- the catalogue (probes/jvmos.h) ----
CATEGORY_IDS = {"jni_copy": 1, "unsafe_copy_out": 2, "unsafe_copy_etc": 3, "nio_native": 4,
                "io_syscall": 5}
WHAT_IDS = {"path_bytes": 1, "path_calls": 2, "nio_confirmed": 3, "missed": 4, "hits": 5,
            "lost": 6, "calib": 7}
PATH_IDS = {("jni", "in"): 1, ("jni", "out"): 2, ("nio", "any"): 3}
MISSED_IDS = {"jni_copy_no_entry": 1, "syscall_no_entry": 2}
HIT_IDS = {"common:task_newtask": 1, "common:sched_process_exec": 2,
           "common:sched_process_exit": 3}
LOST_IDS = {"proc_event": 1, "thread_state": 2, "stats_entry": 3}
# what a lost kind means, for the status line
LOST_MEANS = {
    "proc_event": "fork/exec event(s) of traced processes lost (ring buffer full): a child may "
                  "not have had its uprobes opened",
    "thread_state": "span(s) not followed (the per-thread state map was full): their time and "
                    "path attribution are missing",
    "stats_entry": "sum(s) not kept (the stats map was full): figures are missing",
}

# layers compiled so far (the others still run on bpftrace: `--engine bpftrace`)
LAYERS = ("io",)
ENGINES = ("bpftrace", "bpf")


def _region_size(fn: str) -> int:
    if fn == "GetStringRegion":
        return 2
    if fn == "GetStringUTFRegion":
        return 1            # a lower bound, as in io.bt: len counts UTF-16 chars
    for t, size in PRIMITIVES.items():
        if fn in (f"Get{t}ArrayRegion", f"Set{t}ArrayRegion"):
            return size
    raise ValueError(fn)


# ---- the plan ----

@dataclass
class Plan:
    """What the engine is asked to do, and how to read what it hands back."""
    doc: dict                                   # the JSON the engine reads
    names: Dict[int, str] = field(default_factory=dict)   # probe id -> bpftrace-style name
    bytes_ids: set = field(default_factory=set)  # probe ids whose bytes are a figure
    script: object = None                       # probegen.Script for the manifest/analyzers


def objects_dir() -> Path:
    """build/probes, or JVMOS_ENGINE_OBJECTS (a developer's modified probes, and the tests')."""
    return Path(os.environ.get("JVMOS_ENGINE_OBJECTS") or OBJECTS)


def objects_for(layers: Sequence[str]) -> Dict[str, Path]:
    d = objects_dir()
    objs = {"common": d / "common.bpf.o"}
    for layer in layers:
        objs[layer] = d / f"{layer}.bpf.o"
    return objs


def check_built(layers: Sequence[str]) -> None:
    """One clear error when the engine or an object is missing."""
    if not ENGINE.exists():
        raise JvmosError(f"the compiled engine is not built ({ENGINE}): run 'make build'")
    for name, p in objects_for(layers).items():
        if not p.exists():
            raise JvmosError(f"the {name} probes are not built ({p}): run 'make build'")


def unsupported(layers: Sequence[str]) -> List[str]:
    return [layer for layer in layers if layer not in LAYERS]


def build_plan(layers: Sequence[str], libs: Dict[str, List[Path]],
               symbols_of: Callable[[Path], Dict[str, int]], *, mode: str = "time",
               scope: str = "process", root: int, counting: bool, follow: bool = True,
               place: bool = True, classic: bool = False,
               objects: Optional[Dict[str, Path]] = None, extra_uprobes: Sequence[dict] = (),
               extra_tps: Sequence[dict] = ()) -> Plan:
    """The engine's plan for these layers on these libraries (libs: LIBJVM/LIBNIO/LIBC ->
    paths). symbols_of(path) -> {symbol: address} (jdk.symbols). A symbol the library lacks
    is left out and named in script.missing; two names at one address are probed once."""
    from jvmos.probegen import Script
    bad = unsupported(layers)
    if bad:
        raise JvmosError(f"--engine bpf has no compiled {', '.join(bad)} layer yet (compiled: "
                         f"{', '.join(LAYERS)}); use --engine bpftrace for it")
    objs = objects or objects_for(list(layers) + sorted({u["object"] for u in extra_uprobes}
                                                         | {t["object"] for t in extra_tps}))
    script = Script(text="")
    uprobes: List[dict] = []
    tps: List[dict] = []
    names: Dict[int, str] = {}
    bytes_ids = set()
    next_id = [1]
    seen: Dict[Tuple[str, int], str] = {}

    def uprobe(ph: str, sym: str, prog: str, ret: Optional[str], value: int = 0,
               has_bytes: bool = False, obj: str = "io"):
        paths = libs.get(ph, [])
        if not paths:
            script.missing.append(f"@{ph}@:{sym} (library not found)")
            return
        for p in paths:
            defined = symbols_of(p)
            if sym not in defined:
                script.missing.append(f"{p}:{sym}")
                continue
            where = (str(p), defined[sym])
            if where in seen:
                script.aliases[f"{p}:{sym}"] = seen[where]
                continue
            seen[where] = sym
            pid = next_id[0]
            next_id[0] += 1
            u = {"id": pid, "path": str(p), "symbol": sym, "object": obj, "program": prog,
                 "value": value}
            if ret:
                u["ret_program"] = ret
            uprobes.append(u)
            names[pid] = f"uprobe:{p}:{sym}"
            if has_bytes:
                bytes_ids.add(pid)
            script.attached.append(f"uprobe:{p}:{sym}")
            script.kinds[f"uprobe:{p}:{sym}"] = "uprobe"
            if ret:
                script.attached.append(f"uretprobe:{p}:{sym}")
                script.kinds[f"uretprobe:{p}:{sym}"] = "uretprobe"

    if "io" in layers:
        jni_ret = "jni_ret" if mode == "time" else None
        for fn in JNI_COPY_FUNCTIONS:
            if fn.endswith("Region"):
                prog = "jni_set_region" if fn.startswith("Set") else "jni_get_region"
                uprobe("LIBJVM", f"jni_{fn}", prog, jni_ret, _region_size(fn), has_bytes=True)
            else:
                uprobe("LIBJVM", f"jni_{fn}", "jni_other", jni_ret)
        uprobe("LIBJVM", "Unsafe_CopyMemory0", "unsafe_copy", None, has_bytes=True)
        for sym in NIO_NATIVES:
            uprobe("LIBNIO", sym, "nio_native", None)
        if scope == "process":
            for sym in IO_LIBC_WRAPPERS:
                prog = ("libc_write" if sym in ("write", "pwrite64") else
                        "libc_read" if sym in ("read", "pread64") else "libc_other")
                uprobe("LIBC", sym, prog, "libc_ret", has_bytes=True)
        else:
            for sc in IO_SYSCALLS:
                prog = ("sys_write" if sc in ("write", "pwrite64") else
                        "sys_read" if sc in ("read", "pread64") else "sys_other")
                tps.append({"id": 0, "object": "io", "group": "syscalls",
                            "name": f"sys_enter_{sc}", "program": prog})
                pid = next_id[0]
                next_id[0] += 1
                tps.append({"id": pid, "object": "io", "group": "syscalls",
                            "name": f"sys_exit_{sc}", "program": "sys_io_exit"})
                names[pid] = f"tracepoint:syscalls:sys_exit_{sc}"
                bytes_ids.add(pid)
                for t in (f"tracepoint:syscalls:sys_enter_{sc}",
                          f"tracepoint:syscalls:sys_exit_{sc}"):
                    script.attached.append(t)
                    script.kinds[t] = "tracepoint"
    for u in extra_uprobes:     # calibration: a program on a function of its own target
        pid = next_id[0]
        next_id[0] += 1
        u = dict(u, id=pid)
        uprobes.append(u)
        names[pid] = f"uprobe:{u['path']}:{u['symbol']}"
        if u.get("has_bytes"):
            bytes_ids.add(pid)
    for t in extra_tps:
        pid = next_id[0]
        next_id[0] += 1
        tps.append(dict(t, id=pid))
        names[pid] = f"tracepoint:{t['group']}:{t['name']}"
    if next_id[0] > 0xffff:
        raise JvmosError("too many probes for the engine's 16-bit probe ids")
    for t in ["common:sched_process_fork", "common:sched_process_exec", "common:task_newtask",
              "common:sched_process_exit"]:
        script.kinds["tp_btf:" + t.split(":")[1]] = "tp_btf"
    script.uprobe_count = sum(1 for a in script.attached if a.startswith(("uprobe", "uretprobe")))
    script.tracepoint_count = sum(1 for a in script.attached if a.startswith("tracepoint"))
    present = {a.rsplit(":", 1)[-1] for a in script.attached}
    script.missing = sorted({m for m in script.missing if m.rsplit(":", 1)[-1] not in present})
    order = ["common"] + [layer for layer in layers if layer in objs and layer != "common"]
    wanted = {u["object"] for u in uprobes} | {t["object"] for t in tps}
    order += sorted(wanted - set(order))
    constants = {"common": {"root_tgid": root, "hold_exec": 1 if follow else 0,
                            "follow": 1 if follow else 0}}
    if "io" in order:
        constants["io"] = {"timing": 1 if mode == "time" else 0}
    doc = {"objects": {k: str(v) for k, v in objs.items() if k in order}, "order": order,
           "constants": constants, "root_pid": root, "counting": counting,
           "uprobes": [{k: v for k, v in u.items() if k != "has_bytes"} for u in uprobes],
           "tracepoints": tps, "place": place, "follow": follow, "classic": classic}
    script.text = json.dumps(doc, indent=1)
    return Plan(doc=doc, names=names, bytes_ids=bytes_ids, script=script)


# ---- from the engine's maps to the analyzers' ----

def _inverse(d: dict) -> dict:
    return {v: k for k, v in d.items()}


_CATS, _PATHS, _MISSED, _HITS, _LOST = (_inverse(CATEGORY_IDS), _inverse(PATH_IDS),
                                        _inverse(MISSED_IDS), _inverse(HIT_IDS),
                                        _inverse(LOST_IDS))


def to_raw(maps: dict, plan: Plan) -> Raw:
    """The engine's maps event as the analyzers' Raw (bpftrace's map names and keys). A
    category or id this jvmos does not know is an error of the raw output (raw.errors): it
    means the objects and this module disagree, and the status says so."""
    raw = Raw()
    m: Dict[str, object] = {}

    def put(name: str, key: str, value: int):
        d = m.setdefault(name, {})
        d[key] = d.get(key, 0) + value

    for tgid, cat, probe, calls, nbytes, t in maps.get("stats") or []:
        cname = _CATS.get(cat)
        pname = plan.names.get(probe)
        if cname is None or pname is None:
            raw.errors.append(f"stats entry with unknown category {cat} or probe id {probe}")
            continue
        key = f"{tgid},{cname},{pname}"
        put("@calls", key, calls)
        if probe in plan.bytes_ids:
            put("@bytes", key, nbytes)
        if t:
            put("@time", key, t)
    lost: Dict[str, int] = {}
    for tgid, what, sub, v in maps.get("counts") or []:
        if what == WHAT_IDS["path_bytes"] and sub in _PATHS:
            put("@path_bytes", f"{tgid},{_PATHS[sub][0]},{_PATHS[sub][1]}", v)
        elif what == WHAT_IDS["path_calls"] and sub in _PATHS:
            put("@path_calls", f"{tgid},{_PATHS[sub][0]},{_PATHS[sub][1]}", v)
        elif what == WHAT_IDS["nio_confirmed"]:
            put("@nio_confirmed", str(tgid), v)
        elif what == WHAT_IDS["missed"] and sub in _MISSED:
            put("@missed", f"{tgid},{_MISSED[sub]}", v)
        elif what == WHAT_IDS["hits"] and sub in _HITS:
            put("@hits", f"{tgid},{_HITS[sub]}", v)
        elif what == WHAT_IDS["lost"] and sub in _LOST:
            lost[_LOST[sub]] = lost.get(_LOST[sub], 0) + v
        elif what == WHAT_IDS["calib"]:
            put("@calib", f"{tgid},{sub}", v)      # calibration runs only (calib.bpf.c)
        else:
            raw.errors.append(f"counts entry with unknown what {what}/sub {sub}")
    for p in maps.get("procs") or []:
        if p.get("exec_ns"):
            m.setdefault("@exec", {})[str(p["pid"])] = p.get("exec") or ""
        if p.get("exit_ns"):
            m.setdefault("@exit_ns", {})[str(p["pid"])] = p["exit_ns"]
        if p.get("held"):
            m.setdefault("@held", {})[str(p["pid"])] = 1
    ctl = maps.get("control") or {}
    if ctl.get("start_ns"):
        m["@start_ns"] = ctl["start_ns"]
    if ctl.get("stop_ns"):
        m["@stop_ns"] = ctl["stop_ns"]
    if maps.get("error"):
        raw.errors.append(f"the engine could not read a map: {maps['error']}")
    raw.maps = m
    raw.maps_printed = bool(maps.get("final"))
    raw.engine_lost = lost          # type: ignore[attr-defined]
    return raw


def lost_reasons(raw: Raw) -> List[str]:
    return [f"{n:,} {LOST_MEANS.get(k, k)}" for k, n in sorted(
        (getattr(raw, "engine_lost", None) or {}).items()) if n]


# ---- the engine process ----

def _die_with_parent() -> None:
    import ctypes
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)       # PR_SET_PDEATHSIG


class Engine:
    """One running jvmos-engine: started on a plan, then start/snapshot/stop over its
    stdin, its JSON lines read by a thread (proc events kept in `procs`)."""

    def __init__(self, plan: Plan, plan_path: Path, err_path: Path, log=lambda m: None):
        self.plan, self.log = plan, log
        plan_path.write_text(json.dumps(plan.doc, indent=1))
        self.err_path = err_path
        self.proc = subprocess.Popen([str(ENGINE), str(plan_path)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=open(err_path, "wb"),
                                     start_new_session=True, preexec_fn=_die_with_parent)
        self.events: "queue.Queue[dict]" = queue.Queue()
        self.procs: List[dict] = []
        self.warnings: List[str] = []
        self.ready: Optional[dict] = None
        self.closed: Optional[dict] = None
        self.error: Optional[str] = None
        self._reader = threading.Thread(target=self._read, name="jvmos-engine", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                self.warnings.append(f"engine printed a line that is not JSON: {line[:80]!r}")
                continue
            kind = ev.get("event")
            if kind == "proc":
                self.procs.append(ev)
                if ev.get("error"):
                    self.log(f"warning: pid {ev['pid']}: its uprobes could not be opened: "
                             f"{ev['error']}")
            elif kind == "error":
                self.error = ev.get("message")
            elif kind == "warning":
                self.warnings.append(ev.get("message", ""))
            self.events.put(ev)
        self.events.put({"event": "eof"})

    def _send(self, cmd: str) -> bool:
        try:
            self.proc.stdin.write((cmd + "\n").encode())
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError, ValueError):
            return False

    def _wait(self, kinds: Tuple[str, ...], timeout: float,
              stop_if: Callable[[], bool] = lambda: False) -> Optional[dict]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if stop_if():
                return None
            try:
                ev = self.events.get(timeout=0.05)
            except queue.Empty:
                continue
            if ev.get("event") in kinds or ev.get("event") in ("error", "eof"):
                return ev
        return None

    def first_error(self) -> str:
        if self.error:
            return self.error
        try:
            lines = [l for l in self.err_path.read_text(errors="replace").splitlines() if l.strip()]
        except OSError:
            lines = []
        return lines[-1].strip() if lines else "no output"

    def wait_ready(self, timeout: float, stop_if: Callable[[], bool]) -> Optional[dict]:
        """The ready event; None on a stop request or timeout; JvmosError-worthy failures are
        returned as {'event': 'error'|'eof'}."""
        ev = self._wait(("ready",), timeout, stop_if)
        if ev is not None and ev.get("event") == "ready":
            self.ready = ev
        return ev

    def start(self) -> bool:
        if not self._send("start"):
            return False
        ev = self._wait(("started",), 30)
        return ev is not None and ev.get("event") == "started"

    def snapshot(self, timeout: float = 30) -> Optional[dict]:
        if not self._send("snapshot"):
            return None
        ev = self._wait(("maps",), timeout)
        return ev if ev is not None and ev.get("event") == "maps" else None

    def stop(self, timeout: float = 60) -> Optional[dict]:
        """Counting ends; the final maps (None if the engine died first), then every link
        closed (self.closed['detach_s'])."""
        if not self._send("stop"):
            return None
        ev = self._wait(("maps",), timeout)
        if ev is None or ev.get("event") != "maps":
            return None
        done = self._wait(("closed",), timeout)
        if done is not None and done.get("event") == "closed":
            self.closed = done
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        return ev

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        try:
            self.proc.kill()
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass


def object_hashes(plan: Plan) -> Dict[str, str]:
    out = {}
    for name, p in plan.doc["objects"].items():
        try:
            out[name] = hashlib.sha256(Path(p).read_bytes()).hexdigest()
        except OSError:
            out[name] = None
    return out


def version() -> str:
    try:
        h = hashlib.sha256(ENGINE.read_bytes()).hexdigest()[:12]
    except OSError:
        return "not built"
    return f"jvmos-engine (cilium/ebpf v0.22.0) sha256:{h}"


def uprobe_multi_available() -> Optional[str]:
    """None when the kernel has uprobe_multi links (6.6+), else why not (from the kernel
    release: the engine itself probes the feature when it starts)."""
    m = re.match(r"(\d+)\.(\d+)", os.uname().release)
    if m and (int(m.group(1)), int(m.group(2))) >= (6, 6):
        return None
    return (f"kernel {os.uname().release} predates uprobe_multi links (6.6): the engine opens "
            "classic per-pid uprobes, slower to detach")
