"""Every probe script against the catalogue (jvmos/catalogue.py), which owns the contracts:
what each layer attaches to (syscalls, tracepoints, symbols per library), the maps the
scripts print and their key arity, and the README's layer table written from it.

The scripts are rendered as `jvmos record` renders them (probegen), in both scopes and both
script modes, with a stand-in symbol table that resolves every name: so a symbol a script asks
for is attached, and what the scripts attach to can be read from the rendered text."""
import re
from pathlib import Path

import pytest

from jvmos import catalogue as cat
from jvmos.probegen import PROBES_DIR, output_maps, render

ROOT = Path(__file__).resolve().parents[2]
LIBS = {"LIBJVM": [Path("/jdk/lib/server/libjvm.so")], "LIBNIO": [Path("/jdk/lib/libnio.so")],
        "LIBC": [Path("/lib/libc.so.6")]}
PLACEHOLDER_OF = {str(p): f"@{ph}@" for ph, ps in LIBS.items() for p in ps}
# two JNI entry points beside the copy functions: the census layer's @JNI_ENTRY_POINTS@
EXTRA_JNI = ("jni_GetVersion", "jni_FindClass")


class AnySymbol(dict):
    """A symbol table in which every name is defined (at its own address)."""

    def __init__(self):
        super().__init__({n: 0x1000 + i for i, n in enumerate(
            [f"jni_{f}" for f in cat.JNI_COPY_FUNCTIONS] + list(EXTRA_JNI))})

    def __missing__(self, name):
        self[name] = 0x1000 + len(self)
        return self[name]

    def __contains__(self, name):
        return True


def _rendered(layers, scope, mode="time"):
    tables = {}         # one table per library: a name keeps its address
    return render(layers, LIBS, lambda p: tables.setdefault(p, AnySymbol()), mode=mode,
                  scope=scope)


def _attached(layers, scope, mode="time"):
    """(syscalls with an enter/exit tracepoint, other tracepoints, {placeholder: symbols})."""
    s = _rendered(layers, scope, mode)
    syscalls, tps, syms = set(), set(), {}
    for key, kind in s.kinds.items():
        if kind == "tracepoint":
            m = re.match(r"tracepoint:syscalls:sys_(enter|exit)_(\w+)$", key)
            if m:
                syscalls.add(m.group(2))
            else:
                tps.add(key[len("tracepoint:"):])
        elif kind in ("uprobe", "uretprobe"):
            _, path, name = key.split(":", 2)
            syms.setdefault(PLACEHOLDER_OF[path], set()).add(name)
    assert not s.missing, s.missing
    return syscalls, tps, syms


COMMON = _attached([], "host")


@pytest.mark.parametrize("name", list(cat.LAYER_INFO))
def test_each_layer_attaches_to_what_the_catalogue_says(name):
    layer = cat.LAYER_INFO[name]
    for f in layer.scripts:
        assert (PROBES_DIR / f).is_file(), f
    syscalls, tps, syms = set(), set(), {}
    for scope in ("host", "process"):
        sc, tp, sy = _attached([name], scope)
        syscalls |= sc
        tps |= tp - COMMON[1]
        for ph, names in sy.items():
            syms.setdefault(ph, set()).update(names)
    assert syscalls == set(layer.syscalls)
    assert tps == set(layer.tracepoints) - COMMON[1]
    want = {ph: set(names) for ph, names in layer.symbols.items()}
    if want.get("@LIBJVM@") == {"@JNI_ENTRY_POINTS@"}:
        want["@LIBJVM@"] = set(AnySymbol())     # the census alone: every JNI entry point
    assert syms == want


def test_common_bt_attaches_only_to_process_and_signal_tracepoints():
    syscalls, tps, syms = COMMON
    assert not syscalls and not syms
    assert tps == {"task:task_newtask", "signal:signal_generate", "sched:sched_process_exec",
                   "sched:sched_process_exit"}


def test_the_io_layers_syscalls_are_the_catalogued_io_syscalls_and_their_libc_wrappers():
    host, _, _ = _attached(["io"], "host")
    assert host == set(cat.IO_SYSCALLS)
    _, _, procsyms = _attached(["io"], "process")
    assert procsyms["@LIBC@"] == set(cat.IO_LIBC_WRAPPERS)


def _key_arity(text: str, name: str):
    """The number of key fields of every use of map `name` in a script (0: used unkeyed)."""
    out = set()
    for m in re.finditer(re.escape(name) + r"(?!\w)(\[)?", text):
        if not m.group(1):
            out.add(0)
            continue
        depth, fields, i = 1, 1, m.end()
        while depth:
            c = text[i]
            if c in "[(":
                depth += 1
            elif c in "])":
                depth -= 1
            elif c == "," and depth == 1:
                fields += 1
            elif c == '"':
                i = text.index('"', i + 1)
            i += 1
        out.add(fields)
    return out


@pytest.mark.parametrize("scope", ["host", "process"])
@pytest.mark.parametrize("mode", ["time", "count"])
def test_every_printed_map_has_the_catalogued_key_arity(scope, mode):
    s = _rendered(list(cat.LAYER_INFO), scope, mode)
    code = re.sub(r"/\*.*?\*/", " ", s.text, flags=re.S)
    body = code[:code.index("\nEND\n")]
    for m in output_maps(body.splitlines(), code[code.index("\nEND\n"):].splitlines()):
        uses = _key_arity(body, m) - {0}          # print(@x) and clear(@x) name it unkeyed
        if not uses:
            assert m not in cat.OUTPUT_MAP_ARITY, f"{m} is a scalar, catalogued with keys"
            continue
        assert uses == {cat.OUTPUT_MAP_ARITY.get(m, 1)}, (m, uses)


def test_every_catalogued_map_is_printed_by_some_script():
    printed = set()
    for scope in ("host", "process"):
        for mode in ("time", "count"):
            s = _rendered(list(cat.LAYER_INFO), scope, mode)
            printed |= set(re.findall(r"print\((@\w+)\)", s.text))
    assert set(cat.OUTPUT_MAP_ARITY) <= printed


def test_the_readmes_layer_table_is_the_catalogues():
    readme = (ROOT / "README.md").read_text()
    assert cat.layers_markdown() in readme, \
        "README's layer table differs from catalogue.layers_markdown(): paste it again"


def test_record_help_lists_every_layer_with_its_cost():
    from jvmos.cli import build_parser
    import io
    import contextlib
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), pytest.raises(SystemExit):
        build_parser().parse_args(["record", "-h"])
    text = " ".join(buf.getvalue().split())
    for layer in cat.LAYER_INFO.values():
        assert f"{layer.name}: " in text and " ".join(layer.cost.split()) in text, layer.name


def test_a_mode_is_checked_once_and_says_the_known_ones():
    from jvmos import JvmosError
    assert cat.Mode.parse("count") is cat.Mode.COUNT and cat.Mode.COUNT == "count"
    with pytest.raises(JvmosError, match=r"unknown mode 'bogus' \(known: time, count, sample\)"):
        cat.Mode.parse("bogus")
    assert f"{cat.Mode.TIME}" == "time"
