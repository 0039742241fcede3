import re
from pathlib import Path

import pytest

from jvmos import JvmosError, probegen
from jvmos.catalogue import JNI_COPY_FUNCTIONS
from jvmos.probegen import PROBES_DIR, render, symbol_of_probe

LIBJVM = Path("/jdk17/lib/server/libjvm.so")
LIBJVM2 = Path("/jdk21/lib/server/libjvm.so")
LIBNIO = Path("/jdk17/lib/libnio.so")


def template_symbols(name, placeholder):
    return sorted(set(re.findall(rf"^\s*u(?:ret)?probe:@{placeholder}@:(\w+)",
                                 (PROBES_DIR / name).read_text(), re.M)))


IO_JVM_SYMBOLS = template_symbols("io.bt", "LIBJVM")
IO_NIO_SYMBOLS = template_symbols("io.bt", "LIBNIO")
# JNI entry points besides the copy functions, and names that are not entry points
OTHER_ENTRY_POINTS = ["jni_GetVersion", "jni_FindClass", "jni_GetObjectClass", "jni_NewStringUTF"]
NOT_ENTRY_POINTS = ["jni_invoke_static", "jni_check_async_exceptions", "JNI_CreateJavaVM",
                    "jni_", "os_write"]


def fake_table(symbols, base):
    return {s: base + 0x40 * i for i, s in enumerate(symbols)}


JVM_TABLE = fake_table(IO_JVM_SYMBOLS + OTHER_ENTRY_POINTS + NOT_ENTRY_POINTS
                       + [f"jni_{f}" for f in JNI_COPY_FUNCTIONS if f"jni_{f}" not in IO_JVM_SYMBOLS],
                       0x800000)
JVM2_TABLE = fake_table(sorted(JVM_TABLE), 0x900000)
NIO_TABLE = fake_table(IO_NIO_SYMBOLS, 0x3000)


def symbols_from(tables):
    calls = []

    def symbols_of(path):
        calls.append(path)
        return dict(tables.get(path, {}))
    symbols_of.calls = calls
    return symbols_of


def blocks(text):
    """[(attach points, filter+body text)] of the rendered probe blocks, BEGIN/END excluded."""
    lines = text.splitlines()
    out, i = [], 0
    while i < len(lines):
        if probegen.ATTACH.match(lines[i].strip()):
            group = []
            while i < len(lines) and probegen.ATTACH.match(lines[i].strip()):
                group.append(lines[i])
                i += 1
            body = []
            while i < len(lines) and lines[i] != "}":
                body.append(lines[i])
                i += 1
            out.append((group, "\n".join(body)))
        i += 1
    return out


def code_only(text):
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def ap(kind, path, table, sym):
    return f"{kind}:{path}:0x{table[sym]:x}"


def test_io_layer_attaches_each_symbol_by_address():
    s = render(["io"], {"LIBJVM": [LIBJVM], "LIBNIO": [LIBNIO]},
               symbols_from({LIBJVM: JVM_TABLE, LIBNIO: NIO_TABLE}))
    assert s.missing == []
    assert "@LIBJVM@" not in code_only(s.text) and "@LIBNIO@" not in code_only(s.text)
    lines = {l.strip().rstrip(",") for l in s.text.splitlines()}
    for sym in IO_JVM_SYMBOLS:
        assert ap("uprobe", LIBJVM, JVM_TABLE, sym) in lines, sym
        assert s.addresses[f"{LIBJVM}:{JVM_TABLE[sym]}"] == sym
    for sym in IO_NIO_SYMBOLS:
        assert ap("uprobe", LIBNIO, NIO_TABLE, sym) in lines, sym
        assert s.addresses[f"{LIBNIO}:{NIO_TABLE[sym]}"] == sym
    # every JNI copy function gets an entry and a return probe (it is timed)
    for f in JNI_COPY_FUNCTIONS:
        assert ap("uretprobe", LIBJVM, JVM_TABLE, f"jni_{f}") in lines, f
    assert ap("uretprobe", LIBJVM, JVM_TABLE, "Unsafe_CopyMemory0") not in lines
    assert "jni_GetVersion" not in s.addresses.values()        # io layer: no census
    from jvmos.probegen import _for_scope
    io = _for_scope((PROBES_DIR / "io.bt").read_text() + (PROBES_DIR / "common.bt").read_text(),
                    "host")
    n_uprobes = len(re.findall(r"^\s*u(?:ret)?probe:@LIB", io, re.M))
    n_tracepoints = len(re.findall(r"^\s*tracepoint:", io, re.M))
    assert s.uprobe_count == n_uprobes
    assert s.tracepoint_count == n_tracepoints
    assert len(s.attached) == n_uprobes + n_tracepoints
    assert "tracepoint:syscalls:sys_exit_write" in s.attached
    assert "tracepoint:task:task_newtask" in s.attached


def test_attach_by_symbol_when_asked():
    s = render(["io"], {"LIBJVM": [LIBJVM], "LIBNIO": [LIBNIO]},
               symbols_from({LIBJVM: JVM_TABLE, LIBNIO: NIO_TABLE}), by_address=False)
    assert f"uprobe:{LIBJVM}:jni_GetByteArrayRegion" in s.attached
    assert f"uretprobe:{LIBJVM}:jni_GetByteArrayRegion" in s.attached
    assert s.addresses == {}
    assert not any(":0x" in a for a in s.attached)
    assert f":0x{JVM_TABLE['jni_GetByteArrayRegion']:x}" not in s.text


def test_attach_points_of_a_block_are_comma_separated():
    s = render(["io"], {"LIBJVM": [LIBJVM], "LIBNIO": [LIBNIO]},
               symbols_from({LIBJVM: JVM_TABLE, LIBNIO: NIO_TABLE}))
    bl = blocks(s.text)
    assert bl
    for group, body in bl:
        assert all(l.endswith(",") for l in group[:-1]), group
        assert not group[-1].endswith(","), group
        assert body.lstrip().startswith(("/", "{")), body[:40]
    t = code_only(s.text)
    assert t.count("{") == t.count("}")


def test_missing_symbol_is_dropped_and_the_rest_of_its_block_stays():
    table = dict(JVM_TABLE)
    del table["jni_GetBooleanArrayRegion"]
    s = render(["io"], {"LIBJVM": [LIBJVM], "LIBNIO": [LIBNIO]},
               symbols_from({LIBJVM: table, LIBNIO: NIO_TABLE}))
    assert s.missing == [f"{LIBJVM}:jni_GetBooleanArrayRegion"]
    assert "jni_GetBooleanArrayRegion" not in s.addresses.values()
    assert f"0x{JVM_TABLE['jni_GetBooleanArrayRegion']:x}" not in s.text
    gbar = ap("uprobe", LIBJVM, table, "jni_GetByteArrayRegion")
    (group, body), = [(g, b) for g, b in blocks(s.text) if gbar in g[0]]
    assert group == [gbar]                               # alone now, and no dangling comma
    assert "@jni_get_buf[tid] = arg4;" in body and "arg3 * 1)" in body
    # the uretprobe block loses only the missing function
    ret = ap("uretprobe", LIBJVM, table, "jni_GetByteArrayRegion")
    (group, body), = [(g, b) for g, b in blocks(s.text) if any(ret in l for l in g)]
    assert len(group) == len(JNI_COPY_FUNCTIONS) - 1
    t = code_only(s.text)
    assert t.count("{") == t.count("}")


def test_block_whose_every_attach_point_is_missing_is_dropped_whole():
    table = dict(JVM_TABLE)
    del table["Unsafe_CopyMemory0"]
    s = render(["io"], {"LIBJVM": [LIBJVM], "LIBNIO": [LIBNIO]},
               symbols_from({LIBJVM: table, LIBNIO: NIO_TABLE}))
    assert s.missing == [f"{LIBJVM}:Unsafe_CopyMemory0"]
    code = code_only(s.text)
    assert "unsafe_copy_out" not in code
    assert 'reg("sp")' not in code
    assert "Unsafe_CopyMemory0" not in code
    # the blocks around it are still there
    assert '"nio_native"' in code and '"io_syscall"' in code
    assert code.count("{") == code.count("}")
    full = render(["io"], {"LIBJVM": [LIBJVM], "LIBNIO": [LIBNIO]},
                  symbols_from({LIBJVM: JVM_TABLE, LIBNIO: NIO_TABLE}))
    assert len(blocks(full.text)) - len(blocks(s.text)) == 1


def test_library_not_found_drops_its_probes():
    s = render(["io"], {"LIBJVM": [LIBJVM]}, symbols_from({LIBJVM: JVM_TABLE}))
    assert '"nio_native"' not in code_only(s.text)
    assert f"@LIBNIO@:{IO_NIO_SYMBOLS[0]} (library not found)" in s.missing
    assert len([m for m in s.missing if m.startswith("@LIBNIO@")]) == len(IO_NIO_SYMBOLS)
    assert all(a.startswith(("tracepoint", f"uprobe:{LIBJVM}", f"uretprobe:{LIBJVM}"))
               for a in s.attached)


def test_partially_present_library_symbols():
    # a JDK has only one of FileDispatcherImpl / UnixFileDispatcherImpl
    nio = {k: v for k, v in NIO_TABLE.items() if "UnixFileDispatcherImpl" not in k}
    s = render(["io"], {"LIBJVM": [LIBJVM], "LIBNIO": [LIBNIO]},
               symbols_from({LIBJVM: JVM_TABLE, LIBNIO: nio}))
    assert s.missing == sorted(f"{LIBNIO}:{k}" for k in NIO_TABLE if "UnixFileDispatcherImpl" in k)
    assert '"nio_native"' in s.text


@pytest.mark.parametrize("layers", [["io"], ["jni"], ["io", "jni"]])
def test_begin_and_end_blocks_are_merged(layers):
    s = render(layers, {"LIBJVM": [LIBJVM], "LIBNIO": [LIBNIO]},
               symbols_from({LIBJVM: JVM_TABLE, LIBNIO: NIO_TABLE}))
    lines = s.text.splitlines()
    assert [l.strip() for l in lines].count("BEGIN") == 1
    assert [l.strip() for l in lines].count("END") == 1
    assert lines[0] == "BEGIN" and lines[1] == "{"
    b = lines.index("}")
    begin = "\n".join(lines[2:b])
    assert "@traced[$1] = 1;" in begin and 'printf("jvmos-ready\\n");' in begin
    assert ("@jni_get_buf[0] = (uint64)0" in begin) == ("io" in layers)
    e = lines.index("END")
    end = "\n".join(lines[e + 2:])
    assert "clear(@traced);" in end and "@end_ns = nsecs;" in end
    assert ("clear(@io_depth);" in end) == ("io" in layers)
    assert lines[-1] == "}" or lines[-2] == "}"


def test_unknown_layer_raises():
    with pytest.raises(JvmosError, match="unknown layer 'gpu'.*io"):
        render(["io", "gpu"], {}, symbols_from({}))


JNI_ENTRY_POINTS = sorted([s for s in JVM_TABLE if re.match(r"jni_[A-Z]", s)])


def symbol_at(script, attach_line):
    """The symbol an attach point 'kind:PATH:0xHEX' probes, through script.addresses."""
    path, _, hexaddr = attach_line.strip().rstrip(",").split(":", 1)[1].rpartition(":0x")
    return script.addresses[f"{path}:{int(hexaddr, 16)}"]


def census_symbols(script):
    (group, body), = [(g, b) for g, b in blocks(script.text) if '"jni_call"' in b]
    return sorted(symbol_at(script, l) for l in group)


def test_jni_layer_alone_probes_every_camelcase_entry_point():
    s = render(["jni"], {"LIBJVM": [LIBJVM]}, symbols_from({LIBJVM: JVM_TABLE}))
    assert census_symbols(s) == JNI_ENTRY_POINTS
    assert "jni_GetByteArrayRegion" in census_symbols(s)
    for bad in NOT_ENTRY_POINTS:
        assert bad not in s.addresses.values()
    assert s.uprobe_count == len(JNI_ENTRY_POINTS)
    assert s.missing == []


def test_jni_layer_with_io_leaves_the_copy_functions_to_io():
    s = render(["io", "jni"], {"LIBJVM": [LIBJVM], "LIBNIO": [LIBNIO]},
               symbols_from({LIBJVM: JVM_TABLE, LIBNIO: NIO_TABLE}))
    census = census_symbols(s)
    assert census == sorted(set(JNI_ENTRY_POINTS) - {f"jni_{f}" for f in JNI_COPY_FUNCTIONS})
    assert "jni_GetVersion" in census and "jni_GetByteArrayRegion" not in census
    # no function carries two entry probes
    entries = [a for a in s.attached if a.startswith("uprobe:")]
    assert len(entries) == len(set(entries))
    assert entries.count(ap("uprobe", LIBJVM, JVM_TABLE, "jni_GetByteArrayRegion")) == 1


def test_two_jdks_give_one_attach_point_per_library():
    s = render(["io", "jni"], {"LIBJVM": [LIBJVM, LIBJVM2]},
               symbols_from({LIBJVM: JVM_TABLE, LIBJVM2: JVM2_TABLE}))
    for sym in IO_JVM_SYMBOLS:
        assert ap("uprobe", LIBJVM, JVM_TABLE, sym) in s.attached
        assert ap("uprobe", LIBJVM2, JVM2_TABLE, sym) in s.attached
        assert s.addresses[f"{LIBJVM}:{JVM_TABLE[sym]}"] == sym
        assert s.addresses[f"{LIBJVM2}:{JVM2_TABLE[sym]}"] == sym
    assert ap("uprobe", LIBJVM2, JVM2_TABLE, "jni_GetVersion") in s.attached
    n_jvm = sum(1 for a in s.attached if a.startswith(("uprobe:" + str(LIBJVM) + ":",
                                                       "uretprobe:" + str(LIBJVM) + ":")))
    n_jvm2 = sum(1 for a in s.attached if str(LIBJVM2) in a)
    assert n_jvm == n_jvm2 > 0
    assert all("LIBNIO" in m for m in s.missing)


@pytest.mark.parametrize("by_address", [
    False,
    True,
])
def test_symbol_missing_from_one_jdk_but_present_in_another_is_not_missing(by_address):
    t1 = dict(JVM_TABLE)
    del t1["jni_GetBooleanArrayRegion"]
    s = render(["io"], {"LIBJVM": [LIBJVM, LIBJVM2], "LIBNIO": [LIBNIO]},
               symbols_from({LIBJVM: t1, LIBJVM2: JVM2_TABLE, LIBNIO: NIO_TABLE}),
               by_address=by_address)
    assert s.missing == []


def test_symbol_missing_from_every_jdk_is_reported_once_per_library():
    t1, t2 = dict(JVM_TABLE), dict(JVM2_TABLE)
    del t1["jni_GetBooleanArrayRegion"], t2["jni_GetBooleanArrayRegion"]
    s = render(["io"], {"LIBJVM": [LIBJVM, LIBJVM2], "LIBNIO": [LIBNIO]},
               symbols_from({LIBJVM: t1, LIBJVM2: t2, LIBNIO: NIO_TABLE}))
    assert s.missing == [f"{LIBJVM}:jni_GetBooleanArrayRegion",
                         f"{LIBJVM2}:jni_GetBooleanArrayRegion"]


# ---- a small synthetic template, to check the rewriting exactly

COMMON = """/* common */
BEGIN
{
	@c = 1;
}

tracepoint:sched:sched_process_exit
{
	@exit = count();
}

END
{
	clear(@c);
}
"""

LAYER = """BEGIN
{
	@t = 2;
}

uprobe:@LIBX@:keep_me,
uprobe:@LIBX@:gone
/@c/
{
	@kept_body = count();
}

uprobe:@LIBX@:gone_too
/@c/
{
	@dropped_body = count();
	if (1) { @nested = 1; }
}

uretprobe:@LIBX@:keep_me
{
	@after = count();
}

END
{
	clear(@t);
}
"""


@pytest.fixture
def synthetic(tmp_path, monkeypatch):
    (tmp_path / "common.bt").write_text(COMMON)
    (tmp_path / "t.bt").write_text(LAYER)
    monkeypatch.setattr(probegen, "PROBES_DIR", tmp_path)
    monkeypatch.setitem(probegen.LAYERS, "t", ["t.bt"])
    monkeypatch.setitem(probegen.LAYERS, "absent", ["absent.bt"])
    return tmp_path


def test_synthetic_template_rendered_exactly(synthetic):
    lib = Path("/l/libx.so")
    s = render(["t"], {"LIBX": [lib]}, symbols_from({lib: {"keep_me": 0x10, "other": 0x20}}))
    assert s.text == "\n".join([
        "BEGIN", "{", "\t@c = 1;", "\t@t = 2;", "}", "",
        "/* common */",
        "", "tracepoint:sched:sched_process_exit", "{", "\t@exit = count();", "}", "", "",
        "uprobe:/l/libx.so:0x10", "/@c/", "{", "\t@kept_body = count();", "}", "",
        "", "uretprobe:/l/libx.so:0x10", "{", "\t@after = count();", "}", "", "",
        "END", "{", "\tclear(@c);", "\tclear(@t);", "}", ""])
    assert s.missing == ["/l/libx.so:gone", "/l/libx.so:gone_too"]
    assert s.addresses == {"/l/libx.so:16": "keep_me"}
    assert s.attached == ["tracepoint:sched:sched_process_exit", "uprobe:/l/libx.so:0x10",
                          "uretprobe:/l/libx.so:0x10"]
    assert (s.uprobe_count, s.tracepoint_count) == (2, 1)


def test_layer_script_missing_from_installation(synthetic):
    with pytest.raises(JvmosError, match="absent.bt is missing"):
        render(["absent"], {}, symbols_from({}))


# ---- symbol_of_probe

@pytest.mark.parametrize("probe,expected", [
    ("uprobe:/x/libjvm.so:9136384", "jni_GetByteArrayRegion"),
    ("uretprobe:/x/libjvm.so:9136384", "jni_GetByteArrayRegion"),
    ("uprobe:/x/libjvm.so:12345", "12345"),                  # unknown address
    ("uprobe:/x/libjvm.so:jni_GetVersion", "jni_GetVersion"),  # attached by symbol
    ("uprobe:/y/libjvm.so:9136384", "9136384"),              # same address, other library
    ("tracepoint:syscalls:sys_exit_write", "write"),
    ("tracepoint:syscalls:sys_enter_pread64", "pread64"),
    ("tracepoint:sched:sched_process_exit", "sched_process_exit"),
    ("interval:s:1", "interval:s:1"),
])
def test_symbol_of_probe(probe, expected):
    assert symbol_of_probe(probe, {"/x/libjvm.so:9136384": "jni_GetByteArrayRegion"}) == expected


def test_symbol_of_probe_round_trips_render_addresses():
    s = render(["io"], {"LIBJVM": [LIBJVM], "LIBNIO": [LIBNIO]},
               symbols_from({LIBJVM: JVM_TABLE, LIBNIO: NIO_TABLE}))
    for a in s.attached:
        if a.startswith(("uprobe", "uretprobe")):
            kind, _, rest = a.partition(":")
            path, _, hexaddr = rest.rpartition(":")
            printed = f"{kind}:{path}:{int(hexaddr, 16)}"     # how bpftrace prints it back
            sym = symbol_of_probe(printed, s.addresses)
            table = NIO_TABLE if path == str(LIBNIO) else JVM_TABLE
            assert table[sym] == int(hexaddr, 16)


# ---- USDT: HotSpot's hotspot_jni probes stand in for the JNI symbol probes

from jvmos.catalogue import jni_symbol_of_usdt, jni_usdt_alias
from jvmos.jdk import UsdtProbe

REGION_ARGS = "8@%r14 8@%rbx -4@%r13d -4@%r12d 8@-88(%rbp)"


def usdt_table(functions, semaphore=0, return_sites=1, args=REGION_ARGS):
    """Notes as jdk.usdt_probes gives them: entry and return of each JNI function."""
    out, pc = {}, 0x8d0000
    for f in functions:
        out[("hotspot_jni", f"{f}__entry")] = [UsdtProbe("hotspot_jni", f"{f}__entry", pc,
                                                         0x1066ab7, semaphore, args)]
        out[("hotspot_jni", f"{f}__return")] = [
            UsdtProbe("hotspot_jni", f"{f}__return", pc + 0x10 + k, 0x1066ab7, semaphore, "")
            for k in range(return_sites)]
        pc += 0x100
    return out


ALL_JNI = sorted({s[4:] for s in JVM_TABLE if s.startswith("jni_") and len(s) > 4
                  and s[4].isupper()} | {"CreateJavaVM"})


def usdt_of(tables):
    return lambda p: tables.get(p, {})


def test_io_layer_uses_usdt_for_every_jni_copy_function_entry_and_return():
    s = render(["io"], {"LIBJVM": [LIBJVM], "LIBNIO": [LIBNIO]},
               symbols_from({LIBJVM: JVM_TABLE, LIBNIO: NIO_TABLE}),
               usdt_of=usdt_of({LIBJVM: usdt_table(ALL_JNI)}))
    assert s.missing == []
    for f in JNI_COPY_FUNCTIONS:
        for suffix in ("__entry", "__return"):
            a = f"usdt:{LIBJVM}:hotspot_jni:{f}{suffix}"
            assert a in s.attached and s.kinds[a] == "usdt", a
            assert s.addresses[f"{LIBJVM}:hotspot_jni:{f}{suffix}"] == f"jni_{f}"
        # the symbol probes are not attached as well (each call would count twice)
        assert ap("uprobe", LIBJVM, JVM_TABLE, f"jni_{f}") not in s.attached
        assert ap("uretprobe", LIBJVM, JVM_TABLE, f"jni_{f}") not in s.attached
    # no uretprobe is left on libjvm: a __return probe is a plain probe
    assert not [a for a in s.attached if a.startswith(f"uretprobe:{LIBJVM}")]
    # Unsafe_CopyMemory0 has no USDT probe: still the symbol
    assert s.kinds[f"uprobe:{LIBJVM}:Unsafe_CopyMemory0"] == "uprobe"
    n = len(JNI_COPY_FUNCTIONS)
    assert s.usdt_count == 2 * n
    assert s.kinds["tracepoint:syscalls:sys_exit_write"] == "tracepoint"
    # the Region blocks read len (arg3) and buf (arg4), as the USDT arguments of the same order
    gbar = next(b for g, b in blocks(s.text)
                if any("GetByteArrayRegion__entry" in a for a in g))
    assert "(int32)arg3 * 1" in gbar and "@jni_get_buf[tid] = arg4" in gbar


def test_count_mode_drops_the_usdt_return_probes_with_the_uretprobes():
    s = render(["io"], {"LIBJVM": [LIBJVM]}, symbols_from({LIBJVM: JVM_TABLE}),
               mode="count", usdt_of=usdt_of({LIBJVM: usdt_table(ALL_JNI)}))
    assert not [a for a in s.attached if a.endswith("__return")]
    assert s.usdt_count == len(JNI_COPY_FUNCTIONS)


def test_stripped_libjvm_keeps_jni_probes_through_usdt():
    """No symbols at all (strip), notes still there: JNI probes attach, the rest is missing."""
    s = render(["io"], {"LIBJVM": [LIBJVM]}, symbols_from({}),
               usdt_of=usdt_of({LIBJVM: usdt_table(ALL_JNI)}))
    assert s.usdt_count == 2 * len(JNI_COPY_FUNCTIONS)
    assert [m for m in s.missing if m.startswith(str(LIBJVM))] == [f"{LIBJVM}:Unsafe_CopyMemory0"]


def test_stripped_libjvm_without_notes_names_every_jni_probe_missing():
    s = render(["io"], {"LIBJVM": [LIBJVM]}, symbols_from({}), usdt_of=usdt_of({}))
    assert s.usdt_count == 0
    assert [m for m in s.missing if m.startswith(str(LIBJVM))] == sorted(
        f"{LIBJVM}:{x}" for x in IO_JVM_SYMBOLS)


def test_usdt_with_a_semaphore_falls_back_to_the_symbol():
    s = render(["io"], {"LIBJVM": [LIBJVM]}, symbols_from({LIBJVM: JVM_TABLE}),
               usdt_of=usdt_of({LIBJVM: usdt_table(ALL_JNI, semaphore=0x12e0000)}))
    assert s.usdt_count == 0
    assert ap("uprobe", LIBJVM, JVM_TABLE, "jni_GetByteArrayRegion") in s.attached
    assert ap("uretprobe", LIBJVM, JVM_TABLE, "jni_GetByteArrayRegion") in s.attached
    assert any("GetByteArrayRegion__entry: has a semaphore" in x for x in s.usdt_skipped)


def test_usdt_with_too_few_arguments_falls_back_for_blocks_that_read_them():
    # notes that carry 3 arguments: the Region blocks read arg3 and arg4, so they keep symbols;
    # the Elements block reads none, so it takes USDT
    s = render(["io"], {"LIBJVM": [LIBJVM]}, symbols_from({LIBJVM: JVM_TABLE}),
               usdt_of=usdt_of({LIBJVM: usdt_table(ALL_JNI, args="8@%r14 8@%rbx 8@%rcx")}))
    assert ap("uprobe", LIBJVM, JVM_TABLE, "jni_GetByteArrayRegion") in s.attached
    assert f"usdt:{LIBJVM}:hotspot_jni:GetByteArrayElements__entry" in s.attached
    # the return block reads no argument and no retval: USDT for every function
    assert f"usdt:{LIBJVM}:hotspot_jni:GetByteArrayRegion__return" in s.attached


def test_jni_census_through_usdt_one_probe_per_function_also_for_symbol_only_ones():
    tables = {LIBJVM: dict(JVM_TABLE, jni_GetModule=0x7f0000)}   # GetModule: no USDT probe
    notes = usdt_table([f for f in ALL_JNI])
    s = render(["jni"], {"LIBJVM": [LIBJVM]}, symbols_from(tables), usdt_of=usdt_of({LIBJVM: notes}))
    entries = {a.rsplit(":", 1)[-1] for a in s.attached if a.startswith("usdt:")}
    # every entry note of a JNI entry point, and no return probe (the census counts entries);
    # the invocation API (CreateJavaVM) was never part of the census
    assert entries == {f"{f}__entry" for f in ALL_JNI if f != "CreateJavaVM"}
    assert s.kinds[f"uprobe:{LIBJVM}:jni_GetModule"] == "uprobe"
    assert s.missing == []


def test_two_sites_of_one_usdt_probe_are_one_attach_point():
    notes = usdt_table(ALL_JNI, return_sites=2)
    s = render(["io"], {"LIBJVM": [LIBJVM]}, symbols_from({LIBJVM: JVM_TABLE}),
               usdt_of=usdt_of({LIBJVM: notes}))
    a = f"usdt:{LIBJVM}:hotspot_jni:GetStringRegion__return"
    assert s.attached.count(a) == 1    # bpftrace attaches every site of the name


@pytest.mark.parametrize("probe,expected", [
    ("usdt:/x/libjvm.so:hotspot_jni:GetByteArrayRegion__entry", "jni_GetByteArrayRegion"),
    ("usdt:/x/libjvm.so:hotspot_jni:GetByteArrayRegion__return", "jni_GetByteArrayRegion"),
    ("usdt:/x/libjvm.so:hotspot:thread__start", "thread__start"),
])
def test_symbol_of_usdt_probe(probe, expected):
    assert symbol_of_probe(probe, {}) == expected


def test_usdt_alias_spellings():
    assert jni_usdt_alias("uprobe", "jni_GetByteArrayRegion") == (
        "hotspot_jni", "GetByteArrayRegion__entry")
    assert jni_usdt_alias("uretprobe", "jni_GetByteArrayRegion") == (
        "hotspot_jni", "GetByteArrayRegion__return")
    assert jni_usdt_alias("uprobe", "Unsafe_CopyMemory0") is None
    assert jni_usdt_alias("uprobe", "jni_invoke_static") is None
    assert jni_symbol_of_usdt("hotspot_jni", "GetVersion__entry") == ("uprobe", "jni_GetVersion")
    assert jni_symbol_of_usdt("hotspot_jni", "CreateJavaVM__entry") is None
    assert jni_symbol_of_usdt("hotspot", "thread__start") is None


def test_usdt_probe_costs_replace_the_symbol_pairs_only_when_calibrated_for_that_jdk():
    from jvmos.probecost import probes_for
    s = render(["io"], {"LIBJVM": [LIBJVM]}, symbols_from({LIBJVM: JVM_TABLE}),
               usdt_of=usdt_of({LIBJVM: usdt_table(ALL_JNI)}))
    home = "/jdk17"
    base = {"jni_copy_time_hit": {"mean_ns": 1500.0}, "jni_copy_time_window": {"mean_ns": 700.0},
            "jni_copy_count_hit": {"mean_ns": 800.0}, "io_syscall_hit": {"mean_ns": 900.0}}
    usdt = {f"usdt_{k}": {"mean_ns": v} for k, v in (("jni_copy_time_hit", 1900.0),
                                                     ("jni_copy_time_window", 600.0),
                                                     ("jni_copy_count_hit", 950.0))}
    got, warn = probes_for(dict(base, usdt={home: usdt}), s, [home])
    assert warn == []
    assert got["jni_copy_time_window"]["mean_ns"] == 600.0
    assert got["jni_copy_time_hit"]["mean_ns"] == 1900.0
    assert got["jni_copy_count_hit"]["mean_ns"] == 950.0
    assert got["io_syscall_hit"]["mean_ns"] == 900.0            # other kinds untouched
    # not calibrated for this JDK: unknown (absent, so that the calibration check lets it
    # through and every correction that needs it is unknown) and said, never the symbol pair's
    got, warn = probes_for(base, s, [home])
    assert "jni_copy_time_window" not in got and "jni_copy_time_hit" not in got
    assert got["usdt_unknown"] and len(warn) == 1
    from jvmos.analyzers.correction import validate_probes
    validate_probes(got)            # an unknown cost is not a calibration error
    # a script without USDT probes keeps the symbol pair's figures as they are (and names
    # them symbol_pair_* too, for --scope process's libc wrappers)
    plain = render(["io"], {"LIBJVM": [LIBJVM]}, symbols_from({LIBJVM: JVM_TABLE}))
    got_plain, warn = probes_for(base, plain, [home])
    assert warn == [] and {k: v for k, v in got_plain.items() if k in base} == base
    assert got_plain["symbol_pair_time_hit"] == base["jni_copy_time_hit"]


LIBC = Path("/fake/libc.so.6")
LIBC_TABLE = {n: 0x1000 + 0x100 * i for i, n in enumerate(
    ["write", "pwrite64", "read", "pread64", "sendto", "send", "recvfrom", "recv", "writev",
     "readv", "sendmsg", "recvmsg", "sendfile", "mmap", "munmap", "mprotect", "madvise", "sbrk",
     "malloc", "calloc", "realloc", "aligned_alloc", "memalign", "posix_memalign"])}


def test_scope_process_probes_libc_wrappers_and_no_syscall_tracepoint():
    """--scope process: the io and mem layers' syscalls become uprobe/uretprobe pairs on libc's
    wrappers (an enabled syscall tracepoint slows every process of the host); the returns that
    carry the bytes stay in --mode count."""
    libs = {"LIBJVM": [LIBJVM], "LIBNIO": [LIBNIO], "LIBC": [LIBC]}
    syms = symbols_from({LIBJVM: JVM_TABLE, LIBNIO: NIO_TABLE, LIBC: LIBC_TABLE})
    for mode in ("time", "count"):
        s = render(["io", "mem"], libs, syms, mode=mode, scope="process")
        assert not [a for a in s.attached if a.startswith("tracepoint:syscalls:")], mode
        lines = {l.strip().rstrip(",") for l in s.text.splitlines()}
        for sym in ("write", "read", "send", "recv", "mmap", "sbrk"):
            assert ap("uprobe", LIBC, LIBC_TABLE, sym) in lines, (mode, sym)
        # the byte counts come from the return value: kept in count mode too
        for sym in ("write", "read", "sbrk"):
            assert ap("uretprobe", LIBC, LIBC_TABLE, sym) in lines, (mode, sym)
        # a JNI copy's return probe is a time probe: dropped in count mode
        assert (ap("uretprobe", LIBJVM, JVM_TABLE, "jni_GetByteArrayRegion") in lines) == \
            (mode == "time")
    host = render(["io", "mem"], libs, syms, scope="host")
    assert "tracepoint:syscalls:sys_exit_write" in host.attached
    assert ap("uprobe", LIBC, LIBC_TABLE, "write") not in {
        l.strip().rstrip(",") for l in host.text.splitlines()}


def test_scope_sections_are_checked():
    from jvmos.probegen import _for_scope
    text = "a\n/* if scope:process */\nb\n/* endif */\n/* if scope:host */\nc\n/* endif */\nd\n"
    assert _for_scope(text, "process") == "a\nb\nd\n"
    assert _for_scope(text, "host") == "a\nc\nd\n"
    for bad in ("/* if scope:process */\nx\n", "/* endif */\n",
                "/* if scope:moon */\n/* endif */\n",
                "/* if scope:host */\n/* if scope:host */\n/* endif */\n"):
        with pytest.raises(JvmosError):
            _for_scope(bad, "host")


# ---- values an attach point gives its block (io.bt's Region copies, one block per size)

from jvmos.probegen import _expand_values

VALUED = """/* head */
uprobe:@LIBX@:a,	/* @SIZE@ = 1 */
uprobe:@LIBX@:b,	/* @SIZE@ = 1 */
uprobe:@LIBX@:c,	/* @SIZE@ = 2 */
uprobe:@LIBX@:d	/* @SIZE@ = 1 */
/@c/
/* count: keep */
{
	@bytes[pid, probe] = sum(arg3 * @SIZE@);	/* time */
}

uprobe:@LIBX@:plain
{
	@n = count();
}
"""


def test_each_run_of_attach_points_with_one_value_gets_its_own_copy_of_the_block():
    body = ["/@c/", "/* count: keep */", "{"]
    assert _expand_values(VALUED, "v.bt").splitlines() == (
        ["/* head */", "uprobe:@LIBX@:a,", "uprobe:@LIBX@:b"] + body
        + ["\t@bytes[pid, probe] = sum(arg3 * 1);\t/* time */", "}", "",
           "uprobe:@LIBX@:c"] + body
        + ["\t@bytes[pid, probe] = sum(arg3 * 2);\t/* time */", "}", "",
           "uprobe:@LIBX@:d"] + body
        + ["\t@bytes[pid, probe] = sum(arg3 * 1);\t/* time */", "}", "",
           "uprobe:@LIBX@:plain", "{", "\t@n = count();", "}"])


@pytest.mark.parametrize("bad,match", [
    ("uprobe:@LIBX@:a,\t/* @SIZE@ = 1 */\nuprobe:@LIBX@:b\n{\n\t@x = @SIZE@;\n}\n", "same names"),
    ("uprobe:@LIBX@:a,\t/* @SIZE@ = 1 */\nuprobe:@LIBX@:b\t/* @LEN@ = 1 */\n{\n}\n", "same names"),
    ("uprobe:@LIBX@:a\t/* @SIZE@ = */\n{\n}\n", "bad attach point value"),
    ("uprobe:@LIBX@:a\t/* @SIZE@ = 1 */\n{\n\t@x = 1;\n", "never closed"),
])
def test_attach_point_values_are_checked(bad, match):
    with pytest.raises(JvmosError, match=match):
        _expand_values(bad, "v.bt")


def test_a_value_no_attach_point_gives_is_refused(synthetic):
    (synthetic / "t.bt").write_text("uprobe:@LIBX@:keep_me\n{\n\t@x = @SIZE@;\n}\n")
    lib = Path("/l/libx.so")
    with pytest.raises(JvmosError, match="@SIZE@ with no value"):
        render(["t"], {"LIBX": [lib]}, symbols_from({lib: {"keep_me": 0x10}}))


def test_io_region_copies_render_one_block_per_run_of_element_sizes():
    s = render(["io"], {"LIBJVM": [LIBJVM], "LIBNIO": [LIBNIO]},
               symbols_from({LIBJVM: JVM_TABLE, LIBNIO: NIO_TABLE}))
    assert "@ELEMENT_SIZE@" not in code_only(s.text)
    sized = {}
    for group, body in blocks(s.text):
        m = re.search(r"\(int32\)arg3 \* (\d)\)", body)
        if m:
            sized[tuple(symbol_at(s, l) for l in group)] = int(m.group(1))
    assert sized == {
        ("jni_GetBooleanArrayRegion", "jni_GetByteArrayRegion"): 1,
        ("jni_GetCharArrayRegion", "jni_GetShortArrayRegion", "jni_GetStringRegion"): 2,
        ("jni_GetIntArrayRegion", "jni_GetFloatArrayRegion"): 4,
        ("jni_GetLongArrayRegion", "jni_GetDoubleArrayRegion"): 8,
        ("jni_GetStringUTFRegion",): 1,
        ("jni_SetBooleanArrayRegion", "jni_SetByteArrayRegion"): 1,
        ("jni_SetCharArrayRegion", "jni_SetShortArrayRegion"): 2,
        ("jni_SetIntArrayRegion", "jni_SetFloatArrayRegion"): 4,
        ("jni_SetLongArrayRegion", "jni_SetDoubleArrayRegion"): 8}


# ---- the state the probe files share is declared in common.bt

def _maps_in_code(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r'"(?:\\.|[^"\\])*"', " ", text)
    return set(re.findall(r"@[A-Za-z_]\w*\b(?!@)", text))


def _comments(text):
    return " ".join(re.findall(r"/\*.*?\*/", text, flags=re.S))


def test_every_map_used_by_two_probe_files_is_explained_in_common_bt():
    files = {f.name: f.read_text() for f in PROBES_DIR.glob("*.bt")}
    users = {}
    for name, text in files.items():
        for m in _maps_in_code(text):
            users.setdefault(m, set()).add(name)
    shared = {m for m, fs in users.items() if len(fs) > 1}
    assert {"@traced", "@alloc_ns", "@alloc_hits", "@calls", "@hits"} <= shared
    head = _comments(files["common.bt"])
    for m in shared:
        assert re.search(re.escape(m) + r"\b", head), m


def test_every_scratch_map_is_explained_in_its_file():
    # a map END clears is never printed (probegen.output_maps): its file says what it holds
    for f in PROBES_DIR.glob("*.bt"):
        text = f.read_text()
        end = text[text.index("\nEND\n"):] if "\nEND\n" in text else ""
        for m in re.findall(r"clear\((@\w+)\)", end):
            assert re.search(re.escape(m) + r"\b", _comments(text)), (f.name, m)
