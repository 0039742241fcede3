"""One engine for the host: `jvmos agent`'s JVMs share one jvmos-engine process.

An engine per JVM cost 36 MB of RSS each (results/agent-overhead: 1,091 MB of engines for 30
idle JVMs) and ran every BTF tracepoint program once per JVM on every task of the host. The
host engine (probes/engine/host.go) loads the agent's layers once, with no root process, and
is told which JVMs to count: `add PID FILE` with that JVM's own plan (its libraries' uprobes,
its layers), `snapshot PID` for its rows alone, `drop PID` when it is no longer watched. Its
stats and counts are keyed by tgid, so the JVMs' figures never mix, and a layer's bit in the
traced map turns it on or off for one JVM (a layer shed for one JVM is off for that JVM alone).

Probe ids: each JVM's plan numbers its probes from its own first id. The plans of JVMs with
the same libraries (the same files, whatever path reaches them: a JVM in a container is seen
through /proc/PID/root) are the same plan and share ids; plans of other libraries get ids
apart (a slot of SLOT ids each), so that a USDT argument record, which the engine keys by
probe id, is never claimed by two libraries at once. A slot is freed when its last JVM is
dropped, and the engine then forgets its records (probes/engine/host.go forgetUnused).

`Attachment` is what the agent holds per JVM: the interface of jvmos.engine.Engine
(snapshot, window, stop, kill, alive, first_error, proc), on the shared process.
"""
import json
import os
import time
from pathlib import Path
from typing import Callable, Dict, Optional, Sequence, Tuple

from jvmos import JvmosError
from jvmos import engine as engine_mod

SLOT = 1024                       # probe ids per distinct set of libraries
SLOTS = (engine_mod.NAMED - 1) // SLOT      # 15-bit ids, below the NAMED bit: 31


def file_identity(path) -> tuple:
    """A library as a file (device, inode, size, mtime), whichever path reaches it; its path
    when it cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return (str(path),)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def host_plan(layers: Sequence[str]) -> engine_mod.Plan:
    """The host engine's plan: the layers' objects, constants and tracepoints, no root, no
    uprobes (each JVM brings its own), --mode count at --scope process as the agent counts."""
    plan = engine_mod.build_plan(list(layers), {}, lambda p: {}, mode="count",
                                 scope="process", root=0, counting=False, follow=False,
                                 usdt_of=lambda p: {})
    plan.doc["host"] = True
    plan.doc["uprobes"] = []
    return plan


def mismatch(host: dict, mine: dict) -> str:
    """What a JVM's plan needs that the host engine's plan did not set up: for each of its
    objects, the same constants (the root's aside) and no tracepoint or idle program of its
    own (the host engine set and attached those once for all); "" when nothing."""
    for obj in mine["order"]:
        if obj not in host["order"]:
            return f"layer object {obj} is not loaded"
        a = dict(host["constants"].get(obj) or {})
        b = dict(mine["constants"].get(obj) or {})
        if obj == "common":
            a.pop("root_tgid", None)
            b.pop("root_tgid", None)
        if a != b:
            return f"{obj}'s constants differ ({b} against {a})"
        if sorted((host.get("unattached") or {}).get(obj) or []) != \
                sorted((mine.get("unattached") or {}).get(obj) or []):
            return f"{obj}'s idle programs differ"
    tps = {(t["object"], t["group"], t["name"], t["program"]) for t in host["tracepoints"]}
    extra = [t for t in mine["tracepoints"]
             if (t["object"], t["group"], t["name"], t["program"]) not in tps]
    if extra:
        return f"tracepoint {extra[0]['group']}:{extra[0]['name']} is not attached"
    return ""


class HostEngine:
    """The agent's one engine process: started on the agent's layers, counting at once."""

    def __init__(self, layers: Sequence[str], state_dir: Path, ready_timeout: float,
                 stop_if: Callable[[], bool] = lambda: False):
        self.layers = tuple(layers)
        self.state_dir = state_dir
        self.plan = host_plan(self.layers)
        self.slots: Dict[tuple, list] = {}       # libraries -> [first id, JVMs using it]
        self.death_counted = False
        t0 = time.monotonic()
        self.eng = engine_mod.Engine(self.plan, state_dir / "host-engine.plan.json",
                                     state_dir / "host-engine.stderr")
        try:
            ev = self.eng.wait_ready(ready_timeout, stop_if)
            if ev is None or ev.get("event") != "ready":
                why = (f"not ready within {ready_timeout:.0f} s" if ev is None else
                       self.eng.first_error())
                raise JvmosError(f"the host engine failed: {why}")
            if not self.eng.start():
                raise JvmosError(f"the host engine did not start counting: "
                                 f"{self.eng.first_error()}")
        except BaseException:
            self.eng.kill()
            raise
        self.start_s = time.monotonic() - t0

    @property
    def proc(self):
        return self.eng.proc

    def alive(self) -> bool:
        return self.eng.alive()

    # ---- probe ids
    def first_id(self, libs: Dict[str, list]) -> Tuple[int, tuple]:
        """The first probe id of the plans of these libraries (a new slot for new ones)."""
        key = tuple(sorted((k, tuple(file_identity(p) for p in v)) for k, v in libs.items()))
        if key in self.slots:
            return self.slots[key][0], key
        used = {s[0] for s in self.slots.values()}
        for i in range(SLOTS):
            first = 1 + i * SLOT
            if first not in used:
                self.slots[key] = [first, 0]
                return first, key
        raise JvmosError(f"the host engine counts JVMs of {SLOTS} different sets of "
                         "libraries already: no probe ids left for another")

    def _release(self, key: tuple) -> None:
        s = self.slots.get(key)
        if s is not None:
            s[1] -= 1
            if s[1] <= 0:
                del self.slots[key]

    # ---- one JVM
    def attach(self, pid: int, layers: Sequence[str], libs: Dict[str, list],
               symbols_of, base: Path, timeout: float) -> "Attachment":
        """pid counted in these layers (a subset of the host engine's) with its libraries'
        uprobes. JvmosError with the reason when it cannot be."""
        missing = [x for x in layers if x not in self.layers]
        if missing:
            raise JvmosError(f"the host engine has no {', '.join(missing)} layer loaded")
        first, key = self.first_id(libs)
        self.slots[key][1] += 1
        try:
            plan = engine_mod.build_plan(list(layers), libs, symbols_of, mode="count",
                                         scope="process", root=pid, counting=False,
                                         follow=False, first_id=first)
            top = max((u["id"] for u in plan.doc["uprobes"]), default=first)
            if top >= first + SLOT:
                raise JvmosError(f"the plan of pid {pid} has {top - first + 1} probe ids, "
                                 f"more than the host engine's {SLOT} per library set")
            why = mismatch(self.plan.doc, plan.doc)
            if why:
                raise JvmosError(f"the plan of pid {pid} does not fit the host engine: {why}")
            path = Path(f"{base}.add.json")
            path.write_text(json.dumps({"objects": plan.doc["order"],
                                        "uprobes": plan.doc["uprobes"]}))
            try:
                ev = self.eng.ask(f"add {pid} {path}", "added", timeout, pid=pid)
            finally:
                path.unlink(missing_ok=True)
            if ev is None:
                # it may still finish the add: dropped, so that no link is left unowned
                self.eng.ask(f"drop {pid}", "dropped", timeout, pid=pid)
                raise JvmosError(f"the host engine did not add pid {pid} within "
                                 f"{timeout:.0f} s")
            if ev.get("event") != "added":
                raise JvmosError(f"the host engine failed: {self.eng.first_error()}")
            if ev.get("error"):
                raise JvmosError(f"the host engine could not add pid {pid}: {ev['error']}")
        except BaseException:
            self._release(key)
            raise
        return Attachment(self, pid, plan, ev, key)

    def stop(self, timeout: float = 60) -> Optional[dict]:
        """Every JVM dropped, every link and program closed; the engine's final maps."""
        if not self.eng.alive():
            return None
        return self.eng.stop(timeout=timeout)


class Attachment:
    """One JVM on the host engine, with the engine's interface (jvmos.engine.Engine) the
    agent drives: its snapshots are its own rows, its stop is its drop."""

    def __init__(self, host: HostEngine, pid: int, plan, added: dict, key: tuple):
        self.host, self.pid, self.plan, self.ready, self.key = host, pid, plan, added, key
        self.closed: Optional[dict] = None
        self.dropped = False

    @property
    def proc(self):
        return self.host.proc

    def alive(self) -> bool:
        return not self.dropped and self.host.alive()

    def first_error(self) -> str:
        return self.host.eng.first_error()

    def snapshot(self, timeout: float = 30) -> Optional[dict]:
        if self.dropped:
            return None
        ev = self.host.eng.ask(f"snapshot {self.pid}", "maps", timeout, pid=self.pid)
        return ev if ev is not None and ev.get("event") == "maps" else None

    def window(self, verb: str, pid: int, objects: Sequence[str], timeout: float = 30) -> dict:
        return self.host.eng.window(verb, pid, objects, timeout)

    def _drop(self, timeout: float) -> None:
        if self.dropped:
            return
        self.dropped = True
        self.host._release(self.key)
        ev = self.host.eng.ask(f"drop {self.pid}", "dropped", timeout, pid=self.pid)
        if ev is not None and ev.get("event") == "dropped":
            self.closed = ev

    def stop(self, timeout: float = 60) -> Optional[dict]:
        """The JVM's final rows, then dropped (its links closed, its rows deleted)."""
        maps = self.snapshot(timeout)
        if maps is not None:
            maps["final"] = True
        self._drop(timeout)
        return maps

    def kill(self) -> None:
        """Dropped without its final rows (the shared engine keeps running)."""
        if self.host.alive():
            self._drop(30)
        else:
            self.dropped = True
            self.host._release(self.key)
