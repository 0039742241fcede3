"""The compiled engine's catalogue: probes/jvmos.h (what the BPF programs write) and
jvmos/engine.py (how jvmos reads it) must say the same, every program a plan names must exist
in the C, and the engine's maps must become the maps the analyzers read."""
import json
import re
from pathlib import Path

import pytest

from jvmos import JvmosError
from jvmos import engine as eng
from jvmos.catalogue import IO_LIBC_WRAPPERS, IO_SYSCALLS, JNI_COPY_FUNCTIONS, NIO_NATIVES
from jvmos.enginelayers import MODULES
from jvmos.enginelayers import io as io_layer

PROBES = Path(eng.ROOT) / "probes"
DEFINE = re.compile(r"^#define\s+JVMOS_(\w+)\s+(.+?)\s*(?:/\*.*)?$", re.M)
SEC = re.compile(r'SEC\("([^"]+)"\)\s*\n\s*int\s+(?:BPF_PROG\()?(\w+)')


def header(name):
    """The #defines of a probes/ header with numeric values, JVMOS_BASE_* resolved."""
    bases = {}
    for k, v in DEFINE.findall((PROBES / "jvmos.h").read_text()):
        if k.startswith("BASE_"):
            bases["JVMOS_" + k] = int(v)
    out = {}
    for k, v in DEFINE.findall((PROBES / name).read_text()):
        expr = v.strip()
        for b, n in bases.items():
            expr = expr.replace(b, str(n))
        if re.fullmatch(r"[\d\s()+]+", expr):
            out[k] = eval(expr)     # only digits, spaces, parentheses and +
    return out


def programs(name):
    return {prog: sec for sec, prog in SEC.findall((PROBES / f"{name}.bpf.c").read_text())}


def test_common_ids_match_the_header():
    h = header("jvmos.h")
    assert {f"WHAT_{k.upper()}": v for k, v in eng.WHAT_IDS.items()} == \
        {k: v for k, v in h.items() if k.startswith("WHAT_")}
    assert {"HIT_" + k.split(":")[1].replace("sched_", "").upper(): v
            for k, v in eng.HIT_IDS.items()} == {k: v for k, v in h.items() if k.startswith("HIT_")}
    assert {f"LOST_{k.upper()}": v for k, v in eng.LOST_IDS.items()} == \
        {k: v for k, v in h.items() if k.startswith("LOST_")}


@pytest.mark.parametrize("layer", sorted(MODULES))
def test_layer_ids_match_its_header(layer):
    mod = MODULES[layer]
    h = header(mod.HEADER)
    assert mod.HEADER_NAMES == {k: v for k, v in h.items() if not k.startswith("BASE_")}
    base = header("jvmos.h")[f"BASE_{layer.upper()}"]
    assert base == mod.BASE
    # every id in the layer's block
    for table in (mod.CATEGORIES, mod.MISSED, mod.HITS):
        assert all(base < v < base + 64 for v in table.values()), table
    assert all(base < v < base + 64 for v in list(mod.NAMES) + list(mod.WHATS))


def test_catalogue_merges_without_collisions():
    c = eng.Catalogue()
    assert set(eng.LAYERS) == set(MODULES) == set(eng.compiled_layers())
    assert len(c.categories) == sum(len(m.CATEGORIES) for m in MODULES.values())


def fake_libs():
    libs = {"LIBJVM": [Path("/jdk/lib/server/libjvm.so")], "LIBNIO": [Path("/jdk/lib/libnio.so")],
            "LIBC": [Path("/lib/libc.so.6")]}
    defined = {"libjvm.so": {f"jni_{f}": 0x1000 + i * 16 for i, f in enumerate(JNI_COPY_FUNCTIONS)}
               | {"Unsafe_CopyMemory0": 0x9000},
               "libnio.so": {s: 0x100 + i for i, s in enumerate(NIO_NATIVES)
                             if "UnixFileDispatcherImpl" not in s},
               "libc.so.6": {s: 0x500 + i for i, s in enumerate(IO_LIBC_WRAPPERS)}}
    # glibc: __write and write are one function: probed once
    defined["libc.so.6"]["__write"] = defined["libc.so.6"]["write"]
    return libs, lambda p: defined[Path(p).name]


@pytest.mark.parametrize("scope", ["process", "host"])
@pytest.mark.parametrize("mode", ["time", "count"])
def test_plan_names_programs_that_exist(scope, mode):
    libs, syms = fake_libs()
    plan = eng.build_plan(["io"], libs, syms, mode=mode, scope=scope, root=42, counting=True)
    progs = {"io": programs("io"), "common": programs("common")}
    assert {t["program"] for t in plan.doc["tracepoints"]} <= set(progs["io"])
    for u in plan.doc["uprobes"]:
        assert progs[u["object"]][u["program"]] == "uprobe.multi", u
        if "ret_program" in u:
            assert progs[u["object"]][u["ret_program"]] == "uretprobe.multi", u
    for t in plan.doc["tracepoints"]:
        assert progs[t["object"]][t["program"]] == "tracepoint", t
    ids = [u["id"] for u in plan.doc["uprobes"]] + [t["id"] for t in plan.doc["tracepoints"]
                                                   if t["id"]]
    assert len(ids) == len(set(ids)) and all(0 < i < 0x10000 for i in ids)
    jni = [u for u in plan.doc["uprobes"] if u["symbol"].startswith("jni_")]
    assert len(jni) == len(JNI_COPY_FUNCTIONS)
    # JNI copies are timed in --mode time only; libc's wrappers keep their return probe
    assert all(("ret_program" in u) == (mode == "time") for u in jni)
    sizes = {u["symbol"]: u["value"] for u in jni if u["program"] == "jni_get_region"}
    assert sizes["jni_GetDoubleArrayRegion"] == 8 and sizes["jni_GetStringRegion"] == 2
    libc = [u for u in plan.doc["uprobes"] if u["path"].endswith("libc.so.6")]
    if scope == "process":
        assert {u["symbol"] for u in libc} == set(IO_LIBC_WRAPPERS)
        assert all(u["ret_program"] == "libc_ret" for u in libc)
        assert not plan.doc["tracepoints"]
    else:
        assert not libc
        exits = {t["name"] for t in plan.doc["tracepoints"] if t["program"] == "sys_io_exit"}
        assert exits == {f"sys_exit_{s}" for s in IO_SYSCALLS}
    # the JDK's other spelling of the libnio natives is missing, not a lost probe
    assert any("UnixFileDispatcherImpl" in m for m in plan.script.missing)
    assert plan.doc["constants"]["io"]["timing"] == (1 if mode == "time" else 0)


def test_a_layer_without_a_module_is_refused_in_one_line(monkeypatch):
    """A layer the engine has no compiled module for (here: one taken away) is refused with
    one line naming it, before anything is attached."""
    libs, syms = fake_libs()
    monkeypatch.delitem(MODULES, "threads", raising=False)
    with pytest.raises(JvmosError, match="unknown layer .threads."):
        eng.build_plan(["io", "threads"], libs, syms, root=1, counting=True)


def test_maps_become_the_analyzers_maps():
    libs, syms = fake_libs()
    plan = eng.build_plan(["io"], libs, syms, mode="time", scope="process", root=7,
                          counting=True)
    by_sym = {u["symbol"]: u["id"] for u in plan.doc["uprobes"]}
    c = io_layer.CATEGORIES
    w = eng.WHAT_IDS
    path = {v: k for k, v in io_layer.PATHS.items()}
    maps = {"event": "maps", "final": True,
            "stats": [[7, c["jni_copy"], by_sym["jni_GetByteArrayRegion"], 10, 100, 5000, 0, 0],
                      [7, c["io_syscall"], by_sym["write"], 10, 100, 9000, 0, 0],
                      [7, c["jni_copy"], by_sym["jni_GetPrimitiveArrayCritical"], 3, 0, 0, 0,
                       0]],
            "counts": [[7, io_layer.BASE + 1, path[("jni", "out")], 100, 0],
                       [7, io_layer.BASE + 2, path[("jni", "out")], 10],
                       [7, w["missed"], io_layer.MISSED["syscall_no_entry"], 1],
                       [7, w["hits"], eng.HIT_IDS["common:task_newtask"], 2],
                       [0, w["lost"], eng.LOST_IDS["thread_state"], 4]],
            "procs": [{"pid": 7, "exec": "/usr/bin/java", "exec_ns": 1, "exit_ns": 0, "held": 0}],
            "control": {"counting": 0, "start_ns": 5, "stop_ns": 9}}
    raw = eng.decode(maps, plan)
    assert raw.final and not raw.errors
    key = ("7", "jni_copy", "uprobe:/jdk/lib/server/libjvm.so:jni_GetByteArrayRegion")
    assert raw.maps["calls"][key] == 10 and raw.maps["bytes"][key] == 100
    assert raw.maps["time"][key] == 5000
    # a function whose arguments give no size has no bytes, and no time when none was summed
    crit = ("7", "jni_copy", "uprobe:/jdk/lib/server/libjvm.so:jni_GetPrimitiveArrayCritical")
    assert crit not in raw.maps["bytes"] and crit not in raw.maps["time"]
    assert raw.keyed("path_bytes") == {("7", "jni", "out"): 100}
    assert raw.keyed("missed") == {("7", "syscall_no_entry"): 1}
    assert raw.keyed("hits") == {("7", "common:task_newtask"): 2}
    assert raw.keyed("exec") == {("7",): "/usr/bin/java"}
    assert eng.lost_reasons(raw) == [f"4 {eng.LOST_MEANS['thread_state']}"]
    # a category this jvmos does not know is an error, never a silent zero
    bad = dict(maps, stats=[[7, 999, 1, 1, 1, 1, 0, 0]])
    assert eng.decode(bad, plan).errors
    # a negative sum (two's complement) is kept as the negative number it is, and noted
    neg = dict(maps, stats=[[7, c["io_syscall"], by_sym["write"], 1, 0, (1 << 64) - 5, 0, 0]])
    r = eng.decode(neg, plan)
    assert r.negative and list(r.maps["time"].values()) == [-5]


def test_rows_are_read_by_the_names_the_engine_sends():
    """The engine names its row columns (the schema of a maps event, in probes/jvmos.h's
    order): the same figures in another column order give the same Records, an event without a
    schema (a recording made before it) reads in the old order, and a schema without a column
    jvmos needs is refused in one line."""
    libs, syms = fake_libs()
    plan = eng.build_plan(["io"], libs, syms, mode="time", scope="process", root=7,
                          counting=True)
    jni = next(u["id"] for u in plan.doc["uprobes"] if u["symbol"] == "jni_GetByteArrayRegion")
    c = io_layer.CATEGORIES
    path = {v: k for k, v in io_layer.PATHS.items()}
    old = {"stats": [[7, c["jni_copy"], jni, 10, 100, 5000, 0, 0]],
           "counts": [[7, io_layer.BASE + 1, path[("jni", "out")], 100, 0]],
           "procs": [], "control": {}}
    stats_cols = ["untimed", "wall_ns", "time_ns", "bytes", "calls", "probe", "cat", "tgid"]
    counts_cols = ["value", "x", "sub", "what", "tgid"]
    new = {"schema": {"stats": stats_cols, "counts": counts_cols},
           "stats": [[0, 0, 5000, 100, 10, jni, c["jni_copy"], 7]],
           "counts": [[100, 0, path[("jni", "out")], io_layer.BASE + 1, 7]],
           "procs": [], "control": {}}
    a, b = eng.decode(old, plan), eng.decode(new, plan)
    assert not a.errors and not b.errors and a.maps == b.maps
    assert b.keyed("path_bytes") == {("7", "jni", "out"): 100}
    assert eng.records(new, "stats") == [{"tgid": 7, "cat": c["jni_copy"], "probe": jni,
                                          "calls": 10, "bytes": 100, "time_ns": 5000,
                                          "wall_ns": 0, "untimed": 0}]
    lacking = dict(new, schema={"stats": stats_cols[1:], "counts": counts_cols})
    with pytest.raises(JvmosError, match="no untimed column"):
        eng.decode(lacking, plan)


def test_a_finished_recordings_maps_read_back_from_its_plan_file(tmp_path):
    """probes.plan.json (what the engine was given) is enough to read raw/engine.json again,
    without the libraries: the same Records as at the end of the recording."""
    libs, syms = fake_libs()
    plan = eng.build_plan(["io"], libs, syms, mode="time", scope="process", root=7,
                          counting=True)
    w = eng.WHAT_IDS
    jni = next(u["id"] for u in plan.doc["uprobes"] if u["symbol"] == "jni_GetByteArrayRegion")
    maps = {"stats": [[7, io_layer.CATEGORIES["jni_copy"], jni, 10, 100, 5000, 0, 0]],
            "counts": [[7, w["missed"], io_layer.MISSED["syscall_no_entry"], 1]],
            "procs": [], "control": {"counting": 0, "start_ns": 5, "stop_ns": 9}}
    (tmp_path / "probes.plan.json").write_text(json.dumps(plan.doc))
    back = eng.plan_of_file(tmp_path / "probes.plan.json")
    assert back.names == plan.names and back.bytes_ids == plan.bytes_ids
    a, b = eng.decode(maps, plan), eng.decode(maps, back)
    assert a.maps == b.maps and not b.errors and b.maps["calls"]
    (tmp_path / "old.json").write_text(json.dumps({"uprobes": []}))     # no "analysis"
    with pytest.raises(JvmosError, match="not an engine plan jvmos can read back"):
        eng.plan_of_file(tmp_path / "old.json")


def test_every_bpf_program_file_says_what_it_measures():
    """Each .bpf.c opens the way the .bt files do: what, attach points and why, what breaks."""
    for f in PROBES.glob("*.bpf.c"):
        head = f.read_text().split("*/", 1)[0]
        assert head.startswith("/*") and f.name.split(".")[0] in head, f
        if f.name != "calib.bpf.c":
            assert "breaks" in head, f"{f.name}: says nothing of what breaks when things change"


def test_borrowed_costs_are_labelled_and_carry_no_interval():
    """A per-hit cost the calibration did not resolve takes the measured cost of the program of
    the same shape, labelled borrowed and without an interval; a cost with no same-shape donor
    (sched_switch) stays unresolved; the overhead estimate says borrowed and has no interval."""
    from jvmos import enginecost
    from jvmos.analyzers.overhead import estimate
    measured = {"mean_ns": 500.0, "ci95_ns": [450.0, 550.0], "samples_ns": [500.0],
                "measured_with": "io.bpf.c's tracepoint pair"}
    unresolved = {"mean_ns": -20.0, "ci95_ns": [-300.0, 260.0], "samples_ns": [-20.0],
                  "measured_with": "x"}
    out = {"io_syscall_hit": dict(measured)}
    pending = {"link_syscall_hit": dict(unresolved), "sched_switch_links_hit": dict(unresolved)}
    enginecost.borrow_unresolved(out, pending)
    assert "sched_switch_links_hit" not in out      # no donor of its shape: stays unknown
    assert out["link_syscall_hit"]["borrowed"] and out["link_syscall_hit"]["ci95_ns"] is None
    assert "-20 ns" in out["link_syscall_hit"]["measured_with"]     # what was measured is said
    probes = dict(out, own_kinds=["links:syscall_pair"])
    e = estimate({"links:syscall_pair": 10}, probes, "time")
    cost = e["probe_cost_per_hit_ns"]["links:syscall_pair"]
    assert cost["source"].startswith("borrowed:") and cost["ns"] == 500.0
    assert e["probe_overhead_ns"] == 5000.0 and e["probe_overhead_ci95_ns"] is None


def test_merge_unites_kinds_and_keeps_other_layers_costs():
    from jvmos import enginecost
    old = {"a_hit": {"mean_ns": 1.0}, "own_kinds": ["x:a"], "kind_keys": {"x:a": "a_hit"},
           "unresolved": {"b_hit": {"mean_ns": -1.0}}}
    new = {"b_hit": {"mean_ns": 2.0}, "own_kinds": ["y:b"], "unresolved": {}}
    m = enginecost.merge(old, new)
    assert m["a_hit"] == {"mean_ns": 1.0} and m["b_hit"] == {"mean_ns": 2.0}
    assert m["own_kinds"] == ["x:a", "y:b"] and m["kind_keys"] == {"x:a": "a_hit"}
    assert m["unresolved"] == {}        # resolved now


def test_jvmos_engine_bpftrace_is_refused_in_one_line(monkeypatch):
    """the bpftrace engine was retired: asking for it is an error that says so, and the only
    engine's own name is still accepted (scripts written before keep working)"""
    monkeypatch.setenv("JVMOS_ENGINE", "bpftrace")
    with pytest.raises(JvmosError) as e:
        eng.check_env()
    assert "JVMOS_ENGINE=bpftrace" in str(e.value) and "\n" not in str(e.value)
    monkeypatch.setenv("JVMOS_ENGINE", "bpf")
    eng.check_env()
    monkeypatch.delenv("JVMOS_ENGINE")
    eng.check_env()


def test_an_unresolved_scheduler_handler_cost_is_floored_not_unknown():
    """A layer's sched_switch handler, run from the shared filter, may not be resolved from 0
    by the yield loop: it is floored at 0 with its interval's upper end kept, labelled, so a
    recording's estimate stays known; any other per-hit cost that comes out negative stays
    unresolved (never a 0)."""
    from jvmos import enginecost
    samples = {"sched_switch_mem_hit": [-300.0, 250.0, 1.0],
               "futex_threads_hit": [-300.0, 250.0, 1.0]}
    out = enginecost._aggregate(samples, {}, ["mem", "threads"], 1000, 3, lambda m: None)
    mem = out["sched_switch_mem_hit"]
    assert mem["mean_ns"] == 0.0 and mem["floored"] and mem["ci95_ns"][0] == 0.0
    assert mem["ci95_ns"][1] > 0 and mem["fit_mean_ns"] < 0
    assert "not resolved from 0" in mem["measured_with"]
    # a syscall-shaped cost with no resolved donor stays unresolved, not 0
    assert "futex_threads_hit" not in out and "futex_threads_hit" in out["unresolved"]


def test_a_window_measured_below_zero_subtracts_nothing_and_says_so():
    """io_syscall_window came out -5.3 ns [-7.3, -3.3] and -10.3 ns [-13.6, -7.1] here (the
    tracepoint pair's span is shorter than the bare write timed from user space): a window
    is what a span over-states, so nothing is subtracted: 0 with the interval [0, 0], flagged
    below_zero and labelled, which validation accepts; a per-hit cost below 0 stays
    unresolved."""
    from jvmos import enginecost
    from jvmos.analyzers.correction import validate_probes
    said = []
    samples = {"io_syscall_window": [-8.86, -10.84, -11.3], "io_syscall_hit": [200.0, 210.0, 205.0],
               "io_uprobe_hit": [-5.0, -6.0, -7.0]}
    out = enginecost._aggregate(samples, {}, ["io"], 1000, 3, said.append)
    w = out["io_syscall_window"]
    assert w["mean_ns"] == 0.0 and w["ci95_ns"] == [0.0, 0.0] and w["floored"] and w["below_zero"]
    assert w["fit_mean_ns"] == pytest.approx(-10.333, abs=1e-3) and w["fit_ci95_ns"][1] < 0
    assert "below 0" in w["measured_with"] and any("below 0" in m for m in said)
    assert "io_syscall_window" not in out["unresolved"]
    validate_probes({"io_syscall_window": w, "io_syscall_hit": out["io_syscall_hit"]})
    assert "io_uprobe_hit" in out["unresolved"]
