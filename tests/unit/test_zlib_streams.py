"""The zlib streams a JVM creates (the mem layer's zlib_init uprobes on zlib's inflateInit*/
deflateInit*): the plan, the engine's maps read back, the manifest's probes.zlib, the summary's
zlib_streams figure (or why it is unknown), the what-if counts, the report's line, the probe
hits charged, and where the library is found (jdk.libz_of)."""
from pathlib import Path

import pytest

from jvmos import engine as eng
from jvmos import jdk
from jvmos.analyzers import mem
from jvmos.analyzers import summary as summ
from jvmos.analyzers.overhead import hits_by_pid
from jvmos.analyzers.bpftrace import parse_lines
from jvmos.catalogue import MEM_ALLOCATOR, MEM_LIBC_WRAPPERS, ZLIB_INITS
from jvmos.enginelayers import mem as mem_layer
from jvmos.heuristic import whatif
from jvmos.report import zlib_line

from _unit_helpers import map_lines

LIBC, LIBZ = Path("/lib/libc.so.6"), Path("/lib/libz.so.1")
SYMS = {"libc.so.6": {s: 0x500 + i for i, s in enumerate(MEM_ALLOCATOR + MEM_LIBC_WRAPPERS)},
        "libz.so.1": {s: 0x900 + 0x10 * i for i, s in enumerate(ZLIB_INITS)}}


def plan(mode="count", libz=(LIBZ,)):
    return eng.build_plan(["mem"], {"LIBC": [LIBC], "LIBZ": list(libz)},
                          lambda p: SYMS[Path(p).name], mode=mode, scope="process", root=7,
                          counting=True)


@pytest.mark.parametrize("mode", ["time", "count"])
def test_each_zlib_init_gets_a_count_only_uprobe_in_both_modes(mode):
    p = plan(mode)
    z = [u for u in p.doc["uprobes"] if u["path"] == str(LIBZ)]
    assert sorted(u["symbol"] for u in z) == sorted(ZLIB_INITS)
    assert all(u["program"] == "zlib_init" and "ret_program" not in u for u in z)
    assert not [m for m in p.script.missing if "LIBZ" in m]


def test_without_a_zlib_library_the_probes_are_missing_and_the_state_says_why():
    p = plan(libz=())
    assert not [u for u in p.doc["uprobes"] if u["program"] == "zlib_init"]
    assert "@LIBZ@:inflateInit2_ (library not found)" in p.script.missing
    st = mem_layer.zlib_state([], "pid 7 maps no libz.so", p.script.attached)
    assert st == {"libraries": [], "unknown": "no zlib library found (pid 7 maps no libz.so)"}
    # a library probed, both stream inits attached: known
    assert mem_layer.zlib_state([LIBZ], None, plan().script.attached) == \
        {"libraries": [str(LIBZ)], "unknown": None}
    # a library that lacks deflateInit2_: unknown, named
    st = mem_layer.zlib_state([LIBZ], None, [f"uprobe:{LIBZ}:inflateInit2_"])
    assert st["unknown"] == f"zlib's stream inits not found: {LIBZ}:deflateInit2_"


def test_the_engines_zlib_counts_become_calls_keyed_by_function():
    p = plan()
    ids = {u["symbol"]: u["id"] for u in p.doc["uprobes"] if u["program"] == "zlib_init"}
    cat = mem_layer.CATEGORIES["zlib"]
    maps = {"event": "maps", "final": True, "procs": [], "counts": [],
            "stats": [[7, cat, ids["inflateInit2_"], 2000, 0, 0],
                      [7, cat, ids["deflateInit2_"], 300, 0, 0],
                      [7, cat, ids["deflateInit_"], 5, 0, 0]],
            "control": {"counting": 0, "start_ns": 5, "stop_ns": 9}}
    raw = eng.decode(maps, p)
    assert not raw.errors
    assert raw.keyed("calls") == {("7", "zlib", f"uprobe:{LIBZ}:inflateInit2_"): 2000,
                                   ("7", "zlib", f"uprobe:{LIBZ}:deflateInit2_"): 300,
                                   ("7", "zlib", f"uprobe:{LIBZ}:deflateInit_"): 5}
    assert "@bytes" not in raw.maps           # counted only: no bytes, no time
    # each call is one hit of the zlib_init uprobe (charged at the minimal uprobe's cost)
    assert hits_by_pid(raw, "process")["7"]["mem:zlib_init"] == 2305
    assert mem.KINDS["mem:zlib_init"][1:] == ("uprobe", "uprobe")


MAPS = {"@calls": {f"7,malloc,uprobe:{LIBC}:malloc": 9000,
                   f"7,zlib,uprobe:{LIBZ}:inflateInit2_": 2000,
                   f"7,zlib,uprobe:{LIBZ}:deflateInit2_": 305,
                   f"7,zlib,uprobe:{LIBZ}:deflateInit_": 5,
                   f"8,malloc,uprobe:{LIBC}:malloc": 10,
                   f"8,zlib,uprobe:{LIBZ}:inflateInit2_": 1}}


def build(zlib):
    raw = parse_lines(map_lines(MAPS))
    return summ.build(raw, wall_ns=10_000_000, status="complete", addresses={}, costs={},
                      jvms_by_pid={}, probes=None, mode="count", scope="process", zlib=zlib)


def test_summary_counts_streams_at_the_init2_calls_per_process_and_in_total():
    s = build({"libraries": [str(LIBZ)], "unknown": None})
    z = s["by_pid"]["7"]["categories"]["malloc"]["zlib_streams"]
    # deflateInit_ calls deflateInit2_: its 5 streams are among the 305, not added
    assert (z["calls"], z["inflate"], z["deflate"]) == (2305, 2000, 305)
    assert z["functions"] == {"deflateInit2_": 305, "deflateInit_": 5, "inflateInit2_": 2000}
    assert z["method"] == mem.ZLIB_METHOD and "count only" in z["method"]
    assert s["by_pid"]["8"]["categories"]["malloc"]["zlib_streams"]["inflate"] == 1
    total = s["categories"]["malloc"]["zlib_streams"]
    assert (total["calls"], total["inflate"], total["deflate"]) == (2306, 2001, 305)
    assert s["categories"]["malloc"]["calls"] == 9010      # the allocator's figures unchanged
    c = whatif.counts(s)
    assert c["zlib_inflaters"] == 2001 and c["zlib_deflaters"] == 305
    assert zlib_line(s["categories"]["malloc"]) == (
        "zlib streams created: 2,306 (2,001 inflate, 305 deflate: one per "
        "java.util.zip.Inflater or Deflater; counted at zlib's inflateInit2_/deflateInit2_)")


def test_a_known_zero_is_zero_and_shows_no_line():
    raw = parse_lines(map_lines({"@calls": {f"7,malloc,uprobe:{LIBC}:malloc": 3}}))
    s = summ.build(raw, wall_ns=1, status="complete", addresses={}, costs={}, jvms_by_pid={},
                   probes=None, mode="count", zlib={"libraries": [str(LIBZ)], "unknown": None})
    assert s["categories"]["malloc"]["zlib_streams"]["calls"] == 0
    assert whatif.counts(s)["zlib_inflaters"] == 0
    assert zlib_line(s["categories"]["malloc"]) is None


def test_unknown_streams_are_none_with_the_reason_not_zero():
    why = "no zlib library found (pid 7 maps no libz.so)"
    s = build({"libraries": [], "unknown": why})
    total = s["categories"]["malloc"]
    assert total["zlib_streams"] is None and total["zlib_streams_unknown"] == why
    c = whatif.counts(s)
    assert c["zlib_inflaters"] is None and c["zlib_deflaters"] is None
    assert zlib_line(total) == f"zlib streams created: unknown ({why})"


def test_no_state_no_figure():
    """The mem layer did not run, or a recording made before jvmos counted zlib streams."""
    s = build(None)
    assert "zlib_streams" not in s["categories"]["malloc"]
    assert whatif.counts(s)["zlib_inflaters"] is None
    assert whatif.counts({"categories": {}, "totals": {}})["zlib_deflaters"] is None


def fake_jdk(tmp_path, name):
    home = tmp_path / name
    (home / "lib" / "server").mkdir(parents=True)
    for f in ("lib/server/libjvm.so", "lib/libjava.so", "lib/libzip.so"):
        (home / f).write_bytes(b"")
    return jdk.Jvm(libjvm=home / "lib/server/libjvm.so", home=home,
                   libjava=home / "lib/libjava.so")


def test_libz_of_finds_the_library_each_jdk_creates_streams_with(tmp_path, monkeypatch):
    bundled, system = fake_jdk(tmp_path, "temurin"), fake_jdk(tmp_path, "debian")
    syslibz = tmp_path / "usr/lib/libz.so.1.2.13"
    syslibz.parent.mkdir(parents=True)
    syslibz.write_bytes(b"")
    defines = {str(bundled.libzip): {"inflateInit2_": 0xbab0}, str(system.libzip): {}}
    monkeypatch.setattr(jdk, "symbols", lambda p: defines[str(p)])
    monkeypatch.setattr(jdk, "_needed", lambda p: ["libz.so.1", "libc.so.6"]
                        if str(p) == str(system.libzip) else ["libc.so.6"])
    monkeypatch.setattr(jdk, "_loaded_libz", lambda name: syslibz)
    # a launched command: zlib inside Temurin's libzip.so; Debian's needs the loader's libz
    libs, why = jdk.libz_of([bundled, system])
    assert libs == [Path(bundled.libzip), syslibz] and why is None
    # the JDK's own copy beside its libzip.so comes first (RPATH $ORIGIN)
    (system.libzip.parent / "libz.so.1").write_bytes(b"")
    assert jdk.libz_of([system])[0] == [system.libzip.parent / "libz.so.1"]
    # a process attached to: the libz.so it maps
    monkeypatch.setattr(jdk, "maps_of", lambda pid: ["/x/libjvm.so", str(syslibz)])
    assert jdk.libz_of([system], pid=os_pid())[0] == [syslibz]


def test_libz_of_says_why_when_there_is_none(tmp_path, monkeypatch):
    stripped = fake_jdk(tmp_path, "stripped")
    monkeypatch.setattr(jdk, "symbols", lambda p: {})
    monkeypatch.setattr(jdk, "_needed", lambda p: ["libc.so.6"])
    libs, why = jdk.libz_of([stripped])
    assert libs == [] and "neither defines zlib's inflateInit2_ nor needs a libz.so" in why
    monkeypatch.setattr(jdk, "maps_of", lambda pid: ["/bin/cat"])
    assert jdk.libz_of([], pid=os_pid()) == ([], f"pid {os_pid()} maps no libz.so and is "
                                                 "not a JVM")


def os_pid():
    import os
    return os.getpid()
