"""The compiled engine: jvmos's BPF programs (probes/*.bpf.c), loaded and attached by
build/jvmos-engine (probes/engine, Go on github.com/cilium/ebpf), driven from here.

`jvmos record` writes a plan (which object, which constants, which function of
which library goes to which program with which cookie, which tracepoints), starts the engine,
waits for its ready line, asks for snapshots and stops it, all over one JSON line protocol
(probes/engine/main.go). Nothing is parsed from text a program printed for people: the engine
hands over its maps as numbers, and this module turns them into the maps the analyzers read
(bpftrace's names and key layouts: @calls[pid, category, probe], ...), so every table, figure
and summary field means what it meant under bpftrace.

The catalogue of the compiled maps: the ids below mirror probes/jvmos.h, each layer's those
of its header (jvmos/enginelayers/), and tests/unit/test_engine_catalogue.py keeps them equal.
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
from jvmos.analyzers.records import Records

BUILD = ROOT / "build"
ENGINE = BUILD / "jvmos-engine"
OBJECTS = BUILD / "probes"
HEADER = ROOT / "probes" / "jvmos.h"

# ---- the catalogue: the ids common to every layer (probes/jvmos.h); each layer's own are
# in jvmos/enginelayers/<layer>.py, mirroring probes/<layer>.h ----
NAMED = 0x8000
WHAT_IDS = {"missed": 1, "hits": 2, "lost": 3, "calib": 4}
HIT_IDS = {"common:task_newtask": 1, "common:sched_process_exec": 2,
           "common:sched_process_exit": 3}
LOST_IDS = {"proc_event": 1, "thread_state": 2, "stats_entry": 3}
# what a lost kind means, for the status line
LOST_MEANS = {
    "proc_event": "fork/exec event(s) of traced processes lost (ring buffer full): a child may "
                  "not have had its uprobes opened",
    "thread_state": "span(s) not followed (a per-thread state map was full): their time and "
                    "path attribution are missing",
    "stats_entry": "sum(s) not kept (the stats map was full): figures are missing",
    "recursion": "program run(s) the kernel skipped because another BPF program was running "
                 "on that CPU (bpf_prog_info.recursion_misses): their events are not counted",
}


def _modules():
    from jvmos.enginelayers import MODULES
    return MODULES


def compiled_layers() -> tuple:
    return tuple(_modules())


def __getattr__(name):
    """LAYERS: the layers with a module in jvmos/enginelayers, read when asked for (a layer
    module being imported may import this module before the package has found them all)."""
    if name == "LAYERS":
        return compiled_layers()
    raise AttributeError(name)


class Catalogue:
    """Every id of every compiled layer, merged: id -> what it becomes for the analyzers."""

    def __init__(self):
        self.categories, self.names, self.whats = {}, {}, {}
        self.missed = {}
        self.hits = {v: k for k, v in HIT_IDS.items()}
        for m in _modules().values():
            for table, src in ((self.categories, {v: k for k, v in m.CATEGORIES.items()}),
                               (self.names, m.NAMES), (self.whats, m.WHATS),
                               (self.missed, {v: k for k, v in m.MISSED.items()}),
                               (self.hits, {v: k for k, v in m.HITS.items()})):
                dup = set(table) & set(src)
                if dup:
                    raise JvmosError(f"engine catalogue: layer {m.NAME} reuses ids {sorted(dup)}")
                table.update(src)


# ---- the plan ----

@dataclass
class Plan:
    """What the engine is asked to do, and how to read what it hands back."""
    doc: dict                                   # the JSON the engine reads
    names: Dict[int, str] = field(default_factory=dict)   # probe id -> bpftrace-style name
    bytes_ids: set = field(default_factory=set)  # probe ids whose bytes are a figure
    script: object = None                       # probelist.ProbeList for the manifest/analyzers


def unavailable() -> Optional[str]:
    """None when the compiled engine can run here, else why not (a missing build, a kernel
    without BTF): recordings then refuse in one line (jvmos doctor says it too)."""
    if not Path("/sys/kernel/btf/vmlinux").exists():
        return "this kernel has no BTF (/sys/kernel/btf/vmlinux): the compiled probes cannot load"
    if not ENGINE.exists():
        return f"the compiled engine is not built ({ENGINE}; make build)"
    missing = [p for p in objects_for(compiled_layers()).values() if not p.exists()]
    if missing:
        return f"the compiled probes are not built ({missing[0]}; make build)"
    return None


def check_env() -> None:
    """JVMOS_ENGINE once chose between bpftrace's probe scripts and this engine: only the
    compiled engine records now, and a script that still asks for bpftrace is told so."""
    env = os.environ.get("JVMOS_ENGINE")
    if env and env != "bpf":
        raise JvmosError(f"JVMOS_ENGINE={env}: jvmos records with its compiled engine only "
                         "(the bpftrace probe scripts were retired); unset JVMOS_ENGINE")


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
    """One clear error when the kernel cannot load the probes, or the engine or an object is
    missing."""
    if not Path("/sys/kernel/btf/vmlinux").exists():
        raise JvmosError("this kernel has no BTF (/sys/kernel/btf/vmlinux): the compiled "
                         "probes cannot load (jvmos doctor); --mode sample still records")
    if not ENGINE.exists():
        raise JvmosError(f"the compiled engine is not built ({ENGINE}): run 'make build'")
    for name, p in objects_for(layers).items():
        if not p.exists():
            raise JvmosError(f"the {name} probes are not built ({p}): run 'make build'")


class PlanBuilder:
    """What a layer module's plan() adds its probes through."""

    def __init__(self, libs, symbols_of, mode, scope, object_name="io", usdt_of=None,
                 layers=(), first_id=1):
        from jvmos.probelist import ProbeList
        self.libs, self.symbols_of, self.mode, self.scope = libs, symbols_of, mode, scope
        # usdt_of(path) -> {(provider, name): [jdk.UsdtProbe]}: the USDT probes a library
        # carries (jdk.usdt_probes); layers: every layer of the plan (a layer leaves to
        # another what that one probes itself)
        self.usdt_of = usdt_of or (lambda p: {})
        self.layers = tuple(layers)
        self.object = object_name
        self.script = ProbeList(text="")
        self.uprobes: List[dict] = []
        self.tps: List[dict] = []
        self.names: Dict[int, str] = {}
        self.bytes_ids = set()
        self._next = first_id
        self._seen: Dict[Tuple[str, int, str], str] = {}

    def _id(self) -> int:
        i = self._next
        self._next += 1
        if i >= NAMED:
            raise JvmosError("too many probes for the engine's 15-bit probe ids")
        return i

    def uprobe(self, ph: str, sym: str, prog: str, ret: Optional[str] = None, value: int = 0,
               has_bytes: bool = False) -> None:
        """prog (and ret, the return program) on sym in every library of placeholder ph
        (LIBJVM, LIBNIO, LIBC, LIBZ). A symbol the library lacks is named in script.missing; two
        names at one address are probed once."""
        paths = self.libs.get(ph, [])
        if not paths:
            self.script.missing.append(f"@{ph}@:{sym} (library not found)")
            return
        for p in paths:
            self.uprobe_in(p, sym, prog, ret, value, has_bytes)

    def uprobe_in(self, p, sym: str, prog: str, ret: Optional[str] = None, value: int = 0,
                  has_bytes: bool = False) -> None:
        """uprobe() on one library path."""
        defined = self.symbols_of(p)
        if sym not in defined:
            self.script.missing.append(f"{p}:{sym}")
            return
        # per layer: two layers may probe one function (the threads and mem layers' mmap),
        # each with its own programs
        where = (str(p), defined[sym], self.object)
        if where in self._seen:
            self.script.aliases[f"{p}:{sym}"] = self._seen[where]
            return
        self._seen[where] = sym
        self.add_uprobe(str(p), sym, prog, ret, value, has_bytes)

    def usdt(self, path, provider: str, name: str, prog: str, stands_for: str,
             value: int = 0, has_bytes: bool = False, ret_name: Optional[str] = None,
             ret_prog: Optional[str] = None, args: bool = False) -> int:
        """prog on every site of USDT probe provider:name of the library at path, and ret_prog
        on every site of its return probe ret_name (a USDT return is a plain probe before the
        function returns), all with one probe id, whose figures are named
        usdt:<path>:<provider>:<name>, read by the analyzers as stands_for (the symbol it
        stands for). args: the entry sites' argument specs go to the engine (their program
        reads arguments), and must be the same at every site. Returns the id, 0 when not
        attached (named in script.missing, and why)."""
        notes = self.usdt_of(path)
        sites = notes.get((provider, name)) or []
        rets = notes.get((provider, ret_name)) or [] if ret_name else []
        spelled = f"{path}:{provider}:{name}"
        if not sites:
            self.script.missing.append(spelled)
            return 0
        if ret_name and not rets:
            self.script.missing.append(f"{path}:{provider}:{ret_name}")
            return 0
        specs = None
        if args:
            from jvmos.usdtargs import parse_all
            if len({s.args for s in sites}) != 1:
                self.script.missing.append(f"{spelled} (its sites pass their arguments "
                                           "differently)")
                return 0
            try:
                specs = parse_all(sites[0].args)
            except JvmosError as e:
                self.script.missing.append(f"{spelled} ({e})")
                return 0
        pid = self._id()
        for s, program in [(s, prog) for s in sites] + [(s, ret_prog) for s in rets]:
            u = {"id": pid, "path": str(path), "kind": "usdt", "address": s.pc,
                 "note_base": s.base, "object": self.object, "program": program,
                 "value": value,
                 "symbol": f"{provider}:{name if program == prog else ret_name}"}
            if s.semaphore:
                u["semaphore"] = s.semaphore
            if specs and program == prog:
                u["args"] = specs
            self.uprobes.append(u)
        self.names[pid] = f"usdt:{spelled}"
        if has_bytes:
            self.bytes_ids.add(pid)
        for ap in [spelled] + ([f"{path}:{provider}:{ret_name}"] if ret_name else []):
            self.script.attached.append(f"usdt:{ap}")
            self.script.kinds[f"usdt:{ap}"] = "usdt"
            self.script.addresses[ap] = stands_for
        return pid

    def add_uprobe(self, path: str, sym: str, prog: str, ret: Optional[str] = None,
                   value: int = 0, has_bytes: bool = False, obj: Optional[str] = None) -> int:
        pid = self._id()
        u = {"id": pid, "path": path, "symbol": sym, "object": obj or self.object,
             "program": prog, "value": value}
        if ret:
            u["ret_program"] = ret
        self.uprobes.append(u)
        self.names[pid] = f"uprobe:{path}:{sym}"
        if has_bytes:
            self.bytes_ids.add(pid)
        for kind in ("uprobe", "uretprobe") if ret else ("uprobe",):
            self.script.attached.append(f"{kind}:{path}:{sym}")
            self.script.kinds[f"{kind}:{path}:{sym}"] = kind
        return pid

    def tracepoint(self, group: str, name: str, prog: str, named: bool = False,
                   has_bytes: bool = False, obj: Optional[str] = None) -> int:
        """prog on group:name; named: it gets a probe id (its figures are keyed by it)."""
        pid = self._id() if named else 0
        self.tps.append({"id": pid, "object": obj or self.object, "group": group,
                         "name": name, "program": prog})
        t = f"tracepoint:{group}:{name}"
        if named:
            self.names[pid] = t
            if has_bytes:
                self.bytes_ids.add(pid)
        if t not in self.script.kinds:
            self.script.attached.append(t)
            self.script.kinds[t] = "tracepoint"
        return pid


def build_plan(layers: Sequence[str], libs: Dict[str, List[Path]],
               symbols_of: Callable[[Path], Dict[str, int]], *, mode: str = "time",
               scope: str = "process", root: int, counting: bool, follow: bool = True,
               place: bool = True, classic: bool = False,
               objects: Optional[Dict[str, Path]] = None, extra_uprobes: Sequence[dict] = (),
               extra_tps: Sequence[dict] = (),
               usdt_of: Optional[Callable[[Path], Dict]] = None, first_id: int = 1) -> Plan:
    """The engine's plan for these layers on these libraries (libs: LIBJVM/LIBNIO/LIBC/LIBZ ->
    paths). symbols_of(path) -> {symbol: address} (jdk.symbols); usdt_of(path) -> the USDT
    probes a library carries (None: jdk.usdt_probes); first_id: the plan's first probe id
    (the host engine gives the plans of different libraries ids apart: jvmos/hostengine.py)."""
    mods = _modules()
    bad = [layer for layer in layers if layer not in mods]
    if bad:
        raise JvmosError(f"unknown layer '{bad[0]}' (known: {', '.join(mods)})")
    if usdt_of is None:
        from jvmos.jdk import usdt_probes as usdt_of
    ctx = PlanBuilder(libs, symbols_of, mode, scope, usdt_of=usdt_of, layers=layers,
                      first_id=first_id)
    constants = {"common": {"root_tgid": root, "hold_exec": 1 if follow else 0,
                            "follow": 1 if follow else 0}}
    jvm_paths = [str(x) for x in libs.get("LIBJVM", [])]
    unattached: Dict[str, List[str]] = {}

    def on_libjvm():
        """(uprobes placed in any library, probes missing from libjvm) so far"""
        missed = [m for m in ctx.script.missing
                  if any(m.startswith(jp + ":") for jp in jvm_paths)]
        return len(ctx.uprobes), missed
    for layer in layers:
        ctx.object = mods[layer].OBJECT
        placed0, missed0 = on_libjvm()
        mods[layer].plan(ctx)
        constants[mods[layer].OBJECT] = mods[layer].constants(ctx)
        # BTF tracepoint programs with nothing to do in this mode: not attached at all (each
        # attached one runs for every task on the host)
        idle = getattr(mods[layer], "idle_programs", lambda c: [])(ctx)
        if idle:
            unattached[mods[layer].OBJECT] = list(idle)
        placed1, missed1 = on_libjvm()
        if placed1 == placed0 and len(missed1) > len(missed0):
            # a layer that has no probe left anywhere because libjvm lacks them all (stripped
            # of its symbol table and of HotSpot's USDT notes) would record nothing: refused.
            # A layer that keeps some (io keeps libc's wrappers, threads JVM_StartThread)
            # records as partial, naming what it lost.
            names = [m.rsplit(":", 1)[-1] for m in missed1[len(missed0):]]
            raise JvmosError(
                f"--layers {layer}: {', '.join(jvm_paths)} has none of the symbols or HotSpot "
                f"USDT probes the layer needs ({len(names)} missing: {', '.join(names[:3])}"
                + (", ..." if len(names) > 3 else "") + "); record the other layers, or a JDK "
                "whose libjvm.so keeps its symbol table or its USDT notes")
    for u in extra_uprobes:     # calibration: a program on a function of its own target
        ctx.add_uprobe(u["path"], u["symbol"], u["program"], u.get("ret_program"),
                       u.get("value", 0), u.get("has_bytes", False), obj=u["object"])
    for t in extra_tps:
        ctx.tracepoint(t["group"], t["name"], t["program"], named=True, obj=t["object"])
    script = ctx.script
    for t in ["sched_process_fork", "sched_process_exec", "task_newtask", "sched_process_exit"]:
        script.kinds["tp_btf:" + t] = "tp_btf"
    script.uprobe_count = sum(1 for a in script.attached if a.startswith(("uprobe", "uretprobe")))
    script.tracepoint_count = sum(1 for a in script.attached if a.startswith("tracepoint"))
    script.usdt_count = sum(1 for a in script.attached if a.startswith("usdt:"))
    # a symbol counted through its USDT probe is not missing either
    present = {a.rsplit(":", 1)[-1] for a in script.attached} | set(script.addresses.values())
    script.missing = sorted({m for m in script.missing if m.rsplit(":", 1)[-1] not in present})
    order = ["common"] + [mods[layer].OBJECT for layer in layers]
    wanted = {u["object"] for u in ctx.uprobes} | {t["object"] for t in ctx.tps}
    order += sorted(wanted - set(order))
    objs = objects or objects_for(order[1:])
    # JVMOS_ENGINE_CLASSIC=1: classic per-pid uprobes even where uprobe_multi exists (what a
    # kernel before 6.6 gets), to exercise and measure that path
    classic = classic or os.environ.get("JVMOS_ENGINE_CLASSIC") == "1"
    doc = {"objects": {k: str(v) for k, v in objs.items() if k in order}, "order": order,
           "constants": constants, "unattached": unattached, "root_pid": root,
           "counting": counting,
           "uprobes": ctx.uprobes, "tracepoints": ctx.tps, "place": place, "follow": follow,
           "classic": classic,
           # for the analyzers, not the engine: how each probe id reads back (plan_of_file
           # rebuilds the Plan from a run directory's probes.plan.json)
           "analysis": {"names": {str(k): v for k, v in sorted(ctx.names.items())},
                        "bytes_ids": sorted(ctx.bytes_ids)}}
    script.text = json.dumps(doc, indent=1)
    return Plan(doc=doc, names=ctx.names, bytes_ids=ctx.bytes_ids, script=script)


def plan_of_file(path: Path) -> Plan:
    """The Plan of a finished recording, from its probes.plan.json: enough for decode to read
    the recording's raw/engine.json again (scripts/reanalyse.py), without the libraries."""
    from jvmos.probelist import ProbeList
    try:
        doc = json.loads(Path(path).read_text())
        a = doc["analysis"]
        return Plan(doc=doc, names={int(k): v for k, v in a["names"].items()},
                    bytes_ids=set(a["bytes_ids"]), script=ProbeList(text=json.dumps(doc)))
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise JvmosError(f"{path}: not an engine plan jvmos can read back ({e})")


# ---- from the engine's maps to the analyzers' ----

_WRAP = 1 << 64

# The columns of the stats and counts rows of a maps event. The engine names them in the
# event's schema, in the order of probes/jvmos.h (its Go types are generated from the common
# object: probes/engine/records.go); a recording made before the engine sent a schema has them
# in this order, which is how its raw/engine.json is read again.
LEGACY_COLUMNS = {
    "stats": ("tgid", "cat", "probe", "calls", "bytes", "time_ns", "wall_ns", "untimed"),
    "counts": ("tgid", "what", "sub", "value", "x"),
}
# what jvmos reads of each row: a schema without one of these is an engine jvmos cannot read
NEEDED_COLUMNS = {
    "stats": ("tgid", "cat", "probe", "calls", "bytes", "time_ns", "wall_ns", "untimed"),
    "counts": ("tgid", "what", "sub", "x", "value"),
}


def records(maps: dict, name: str) -> List[Dict[str, int]]:
    """The rows of a maps event's stats or counts, each a dict by the C field names. A column
    an older engine did not send reads as 0; a schema lacking a needed column is an error."""
    schema = (maps.get("schema") or {}).get(name)
    cols = tuple(schema) if schema else LEGACY_COLUMNS[name]
    missing = [c for c in NEEDED_COLUMNS[name] if c not in cols and schema]
    if missing:
        raise JvmosError(f"the engine's {name} rows have no {', '.join(missing)} column: "
                         "this jvmos and its engine disagree (make build)")
    out = []
    for row in maps.get(name) or []:
        d = dict.fromkeys(NEEDED_COLUMNS[name], 0)
        d.update(zip(cols, row))
        out.append(d)
    return out


LOST_NAMES = {v: k for k, v in LOST_IDS.items()}


def decode(maps: dict, plan: Plan) -> Records:
    """The engine's maps event as the analyzers' Records: each sum named after what it counts
    and keyed by its record's fields, ids turned into names by the catalogue and the plan. An
    id this jvmos does not know is an error of the records (rec.errors): the objects and this
    module disagree, and the status says so. Sums of signed values that came out negative
    (two's complement) are turned back into negative numbers and noted in rec.negative."""
    rec = Records()
    cat = Catalogue()
    _decode_stats(rec, maps, plan, cat)
    lost = _decode_counts(rec, maps, cat)
    for p in maps.get("procs") or []:
        pid = (str(p["pid"]),)
        if p.get("exec_ns"):
            rec.maps.setdefault("exec", {})[pid] = p.get("exec") or ""
        if p.get("exit_ns"):
            rec.maps.setdefault("exit_ns", {})[pid] = p["exit_ns"]
        if p.get("held"):
            rec.maps.setdefault("held", {})[pid] = 1
    ctl = maps.get("control") or {}
    if ctl.get("start_ns"):
        rec.maps["start_ns"] = ctl["start_ns"]
    if ctl.get("stop_ns"):
        rec.maps["stop_ns"] = ctl["stop_ns"]
    if maps.get("error"):
        rec.errors.append(f"the engine could not read a map: {maps['error']}")
    rec.final = bool(maps.get("final"))
    rec.prog_stats = maps.get("prog_stats") or {}
    for idx, n in (maps.get("lost") or {}).items():
        name = LOST_NAMES.get(int(idx), f"lost kind {idx}")
        lost[name] = lost.get(name, 0) + int(n)
    # runs the kernel skipped (another BPF program was running on that CPU): events lost
    misses = maps.get("recursion_misses") or {}
    if misses:
        lost["recursion"] = lost.get("recursion", 0) + sum(misses.values())
    rec.engine_lost = lost
    # the total the summary and the exports report as lost events (status events_lost)
    rec.lost_events = sum(lost.values())
    return rec


def _put(rec: Records, name: str, key: tuple, value: int) -> None:
    if value >= _WRAP >> 1:
        value -= _WRAP
        rec.negative.append((name, key, value))
    rec.put(name, key, value)


def _decode_stats(rec: Records, maps: dict, plan: Plan, cat: "Catalogue") -> None:
    """The stats rows: calls, bytes, time, wall and untimed by (pid, category, probe), or a
    named sum's calls and time (a probe id with the NAMED bit)."""
    for r in records(maps, "stats"):
        tgid, c, probe, calls, t = str(r["tgid"]), r["cat"], r["probe"], r["calls"], r["time_ns"]
        cname = cat.categories.get(c)
        if cname is None:
            rec.errors.append(f"stats entry with unknown category {c}")
            continue
        if probe & NAMED:
            named = cat.names.get(probe & ~NAMED)
            if named is None:
                rec.errors.append(f"stats entry with unknown name id {probe & ~NAMED}")
                continue
            name, calls_map, time_map = named
            if calls and calls_map:
                _put(rec, calls_map, (tgid, cname, name), calls)
            if t and time_map:
                _put(rec, time_map, (tgid, cname, name), t)
            continue
        pname = plan.names.get(probe)
        if pname is None:
            rec.errors.append(f"stats entry with unknown probe id {probe}")
            continue
        key = (tgid, cname, pname)
        for name, value, keep in (("calls", calls, calls), ("bytes", r["bytes"],
                                                             probe in plan.bytes_ids),
                                  ("time", t, t), ("wall", r["wall_ns"], r["wall_ns"]),
                                  ("untimed", r["untimed"], r["untimed"])):
            if keep:
                _put(rec, name, key, value)


def _decode_counts(rec: Records, maps: dict, cat: "Catalogue") -> Dict[str, int]:
    """The counts rows: missed events, probe hits, calibration runs and each layer's own sums
    (its WHATS: a name and the key its sub and x make); returns the events lost by reason."""
    lost: Dict[str, int] = {}
    for r in records(maps, "counts"):
        tgid, what, sub, v, x = str(r["tgid"]), r["what"], r["sub"], r["value"], r["x"]
        if what == WHAT_IDS["missed"] and sub in cat.missed:
            _put(rec, "missed", (tgid, cat.missed[sub]), v)
        elif what == WHAT_IDS["hits"] and sub in cat.hits:
            _put(rec, "hits", (tgid, cat.hits[sub]), v)
        elif what == WHAT_IDS["lost"] and sub in LOST_NAMES:
            lost[LOST_NAMES[sub]] = lost.get(LOST_NAMES[sub], 0) + v
        elif what == WHAT_IDS["calib"]:
            _put(rec, "calib", (tgid, str(sub)), v)      # calibration runs only (calib.bpf.c)
        elif what in cat.whats:
            mapname, keyfn = cat.whats[what]
            rest = keyfn(sub, x)
            if rest is None:
                rec.errors.append(f"counts entry {mapname} with unknown sub {sub}")
                continue
            _put(rec, mapname, (tgid, *rest), v)
        else:
            rec.errors.append(f"counts entry with unknown what {what}/sub {sub}")
    return lost


def lost_reasons(raw: Records) -> List[str]:
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
              stop_if: Callable[[], bool] = lambda: False,
              pid: Optional[int] = None) -> Optional[dict]:
        """The next event of these kinds (of this pid, when given: the host engine's answers
        name theirs, and a late answer to an earlier command is passed over), or an error or
        the end; None on a timeout or a stop request."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if stop_if():
                return None
            try:
                ev = self.events.get(timeout=0.05)
            except queue.Empty:
                continue
            if ev.get("event") in ("error", "eof"):
                return ev
            if ev.get("event") in kinds and (pid is None or ev.get("pid") == pid):
                return ev
        return None

    def ask(self, cmd: str, kind: str, timeout: float,
            pid: Optional[int] = None) -> Optional[dict]:
        """cmd sent, and its answer: the next event of that kind (of that pid), or an error or
        the end; None when the engine is gone or did not answer in time."""
        if not self._send(cmd):
            return None
        return self._wait((kind,), timeout, pid=pid)

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

    def window(self, verb: str, pid: int, objects: Sequence[str],
               timeout: float = 30) -> dict:
        """verb "off": pid's uprobes of these objects closed; "on": opened again (a window of
        duty cycling). The engine's answer ({'uprobes', 'ms', 'ktime_ns'}); JvmosError when it
        failed or did not answer."""
        if not self._send(f"{verb} {pid} {','.join(objects)}"):
            raise JvmosError(f"the engine is gone ({verb} {','.join(objects)})")
        ev = self._wait((verb,), timeout, pid=pid)
        if ev is None or ev.get("event") != verb:
            why = ("no answer" if ev is None else self.first_error())
            raise JvmosError(f"the engine did not turn {','.join(objects)} {verb}: {why}")
        if ev.get("error"):
            raise JvmosError(f"the engine could not turn {','.join(objects)} {verb}: "
                             f"{ev['error']}")
        return ev

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
