"""Turns the readable probes/*.bt into the one script bpftrace runs for a recording.

The templates name libraries by placeholder (@LIBJVM@, @LIBNIO@, @LIBC@) and put each attach point on
its own line. Here each placeholder line becomes one line per library that defines the symbol;
a symbol no library defines is dropped and reported, and a probe block left with no attach
point is dropped whole, so a JDK missing one function still gets every other probe.
BEGIN and END blocks of the loaded scripts are merged (bpftrace allows one of each). An attach
point may give its block a value ('/* @ELEMENT_SIZE@ = 2 */' after it): each run of attach points
with the same value gets a copy of the block with the value written in (_expand_values).

USDT: given the USDT probes a library carries (usdt_of), a uprobe or uretprobe on a JNI entry
point becomes HotSpot's own probe of it (catalogue.jni_usdt_alias): usdt:<lib>:hotspot_jni:
<Function>__entry or __return, whose arguments are the function's (arg3 of GetByteArrayRegion is
len either way). They are in the ELF notes, so they survive a stripped libjvm.so; bpftrace attaches
them by path without -p, so they work in launch and attach mode alike. The symbol probe stays the
fallback: no note, a note with a semaphore (inert unless raised), a return block that reads
retval, or a block that reads an argument the note does not carry.
"""
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from jvmos import ROOT, JvmosError
from jvmos.analyzers.rawparse import MAPS_PRINTED
from jvmos.catalogue import (LAYERS, SCRIPT_MODES, JNI_COPY_FUNCTIONS, is_jni_entry_point, jni_symbol_of_usdt,
                        jni_usdt_alias)

PROBES_DIR = ROOT / "probes"
ATTACH = re.compile(r"^(uprobe|uretprobe|tracepoint|usdt|interval|profile):[^\s{]*?,?\s*$")
PLACEHOLDER = re.compile(r"^(uprobe|uretprobe):@(\w+)@:(\S+?),?\s*$")


@dataclass
class Script:
    text: str
    attached: List[str] = field(default_factory=list)   # attach points kept
    missing: List[str] = field(default_factory=list)    # "lib:symbol" that no library defines
    # bpftrace resolves a symbol per attach point by reading the whole symbol table, which took
    # ~0.25 s per probe on libjvm.so; attaching by address took a third of the time. The probe
    # names in the output then carry addresses: this maps "path:address" back to the symbol.
    addresses: Dict[str, str] = field(default_factory=dict)
    # "lib:name" -> the name probed instead (same address)
    aliases: Dict[str, str] = field(default_factory=dict)
    uprobe_count: int = 0       # uprobe and uretprobe attach points
    tracepoint_count: int = 0
    usdt_count: int = 0         # usdt attach points (each is one uprobe per probe site)
    # what kind each probe is: "uprobe:<lib>:<symbol>", "usdt:<lib>:<provider>:<name>",
    # "tracepoint:..." -> "uprobe" | "uretprobe" | "usdt" | "tracepoint" | ...
    kinds: Dict[str, str] = field(default_factory=dict)
    # symbol probes that had a USDT alias but kept the symbol, and why
    usdt_skipped: List[str] = field(default_factory=list)


def _split_blocks(text: str):
    """Yield (kind, lines): 'begin'/'end' blocks, or 'other' chunks, preserving order."""
    lines = text.splitlines()
    i, out = 0, []
    while i < len(lines):
        s = lines[i].strip()
        if s in ("BEGIN", "END") and i + 1 < len(lines) and lines[i + 1].strip() == "{":
            j = i + 2
            body = []
            while j < len(lines) and lines[j] != "}":
                body.append(lines[j])
                j += 1
            out.append((s.lower(), body))
            i = j + 1
            continue
        out.append(("other", [lines[i]]))
        i += 1
    return out


SCOPES = ("process", "host")
_IF = re.compile(r"^\s*/\* if scope:(\w+) \*/\s*$")
_ENDIF = re.compile(r"^\s*/\* endif \*/\s*$")


def _for_scope(text: str, scope: str, name: str = "?") -> str:
    """The template with the sections of the other scope taken out: lines between
    '/* if scope:process */' (or host) and '/* endif */' are kept only at that scope."""
    out, inside = [], None
    for n, line in enumerate(text.splitlines(), 1):
        m = _IF.match(line)
        if m:
            if inside is not None or m.group(1) not in SCOPES:
                raise JvmosError(f"{name}:{n}: bad scope section '{line.strip()}'")
            inside = m.group(1)
            continue
        if _ENDIF.match(line):
            if inside is None:
                raise JvmosError(f"{name}:{n}: '/* endif */' without '/* if scope:... */'")
            inside = None
            continue
        if inside is None or inside == scope:
            out.append(line)
    if inside is not None:
        raise JvmosError(f"{name}: '/* if scope:{inside} */' is never closed")
    return "\n".join(out) + "\n"


# An attach point may carry values for its block: 'uprobe:@LIBJVM@:jni_GetCharArrayRegion,
# /* @ELEMENT_SIZE@ = 2 */'. Each run of attach points with the same values gets a copy of the
# block with them written in (io.bt's Region copies, one block per element size): the code of
# each probe is what a block written out per value would be, with no per-hit lookup.
_VALUED = re.compile(r"^\s*(?P<ap>\S+?),?\s*/\*\s*(?P<values>@[A-Z][A-Z0-9_]*@\s*=.*?)\s*\*/\s*$")
_VALUE = re.compile(r"^(@[A-Z][A-Z0-9_]*@)\s*=\s*(\S.*)$")
_UNFILLED = re.compile(r"@[A-Z][A-Z0-9_]*@")


def _valued(line: str):
    m = _VALUED.match(line)
    return m if m and ATTACH.match(m.group("ap")) else None


def _expand_values(text: str, name: str = "?") -> str:
    """The template with every block whose attach points carry values written out once per run
    of attach points with the same values (see _VALUED)."""
    lines = text.splitlines()
    out: List[str] = []
    i = 0
    while i < len(lines):
        if not (ATTACH.match(lines[i].strip()) or _valued(lines[i])):
            out.append(lines[i])
            i += 1
            continue
        group: List[Tuple[str, Optional[Tuple[Tuple[str, str], ...]]]] = []
        first = i + 1
        while i < len(lines) and (ATTACH.match(lines[i].strip()) or _valued(lines[i])):
            m = _valued(lines[i])
            if m:
                values = []
                for item in m.group("values").split(";"):
                    v = _VALUE.match(item.strip())
                    if not v:
                        raise JvmosError(f"{name}:{i + 1}: bad attach point value '{item.strip()}' "
                                         "(expected '@NAME@ = value')")
                    values.append((v.group(1), v.group(2).strip()))
                group.append((m.group("ap"), tuple(values)))
            else:
                group.append((lines[i].strip().rstrip(","), None))
            i += 1
        if all(v is None for _, v in group):
            out.extend(lines[first - 1:i])
            continue
        if any(v is None for _, v in group) or len({tuple(n for n, _ in v) for _, v in group}) > 1:
            raise JvmosError(f"{name}:{first}: every attach point of a block with values must "
                             "give the same names")
        j = i
        while j < len(lines) and lines[j] != "}":
            j += 1
        if j == len(lines):
            raise JvmosError(f"{name}:{first}: the block of these attach points is never closed")
        block = lines[i:j + 1]          # filter, markers and body, up to the closing brace
        runs: List[Tuple[Tuple[Tuple[str, str], ...], List[str]]] = []
        for ap_text, values in group:
            if runs and runs[-1][0] == values:
                runs[-1][1].append(ap_text)
            else:
                runs.append((values, [ap_text]))
        for k, (values, aps) in enumerate(runs):
            if k:
                out.append("")
            out.extend(a + ("," if n < len(aps) - 1 else "") for n, a in enumerate(aps))
            for line in block:
                for key, value in values:
                    line = line.replace(key, value)
                out.append(line)
        i = j + 1
    return "\n".join(out) + "\n"


# what common.bt's @ROOT@ may become: the pid jvmos passes ($1), or the child of `bpftrace -c`
ROOTS = ("$1", "cpid")


def render(layers: Sequence[str], libs: Dict[str, List[Path]],
           symbols_of: Callable[[Path], Dict[str, int]], by_address: bool = True,
           mode: str = "time", usdt_of: Optional[Callable[[Path], Dict]] = None,
           scope: str = "host", root: str = "$1", live: bool = False) -> Script:
    """Build the script for these layers; libs maps a placeholder (LIBJVM) to library paths.

    mode "count" drops every uretprobe and the lines marked /* time */ (entry probes only), and
    the blocks marked /* time: only */.
    usdt_of(path) -> {(provider, name): [sites]} (jdk.usdt_probes): JNI probes use USDT where
    the library has it; None: symbols only. root: what common.bt's @ROOT@ becomes, the root
    of the traced processes: "$1" (jvmos passes the pid) or "cpid" (bpftrace -c starts it).
    live: add LIVE_BLOCK (the live view's snapshots, `jvmos record --interval`)."""
    if root not in ROOTS:
        raise JvmosError(f"unknown root '{root}' (known: {', '.join(ROOTS)})")
    if mode not in SCRIPT_MODES:     # the mode was validated by record (catalogue.Mode)
        raise JvmosError(f"no probe script for mode '{mode}' (scripts exist for: "
                         f"{', '.join(SCRIPT_MODES)})")
    if scope not in SCOPES:
        raise JvmosError(f"unknown scope '{scope}' (known: {', '.join(SCOPES)})")
    for layer in layers:
        if layer not in LAYERS:
            raise JvmosError(f"unknown layer '{layer}' (known: {', '.join(LAYERS)})")
    files = ["common.bt"] + [f for layer in layers for f in LAYERS[layer]]
    begin, end, body = [], [], []
    for name in files:
        path = PROBES_DIR / name
        if not path.exists():
            raise JvmosError(f"probe script {path} is missing from this installation")
        text = _expand_values(_for_scope(path.read_text(), scope, name), name)
        text = text.replace("@ROOT@", root)
        for kind, chunk in _split_blocks(text):
            if mode == "count":
                chunk = [l for l in chunk if not l.rstrip().endswith("/* time */")]
            (begin if kind == "begin" else end if kind == "end" else body).extend(chunk)
    skip_copy = "io" in layers   # io.bt probes the copy functions itself
    script = Script(text="")
    seen: Dict[Tuple[str, str, int], str] = {}
    out: List[str] = []
    lines = body
    i = 0
    while i < len(lines):
        if not ATTACH.match(lines[i].strip()):
            out.append(lines[i])
            i += 1
            continue
        group = []
        while i < len(lines) and ATTACH.match(lines[i].strip()):
            group.append(lines[i].strip().rstrip(","))
            i += 1
        # a return probe that --mode count keeps: its block carries figures the entry cannot
        # give (the bytes a libc read/write wrapper returned)
        keep_ret = i < len(lines) and lines[i].strip() == "/* count: keep */"
        # a block whose work needs times (marked "time: only"): not attached in --mode count,
        # where it would only cost its hits
        if mode == "count" and i < len(lines) and lines[i].strip() == "/* time: only */":
            while i < len(lines) and lines[i] != "}":
                i += 1
            i += 1
            continue
        kept = []
        j = i
        while j < len(lines) and lines[j] != "}":
            j += 1
        block = "\n".join(lines[i:j])     # the filter and body these attach points share
        for ap in group:
            m = PLACEHOLDER.match(ap)
            if not m:
                kept.append(ap)
                script.kinds[ap] = ap.split(":", 1)[0]
                continue
            kind, ph, sym = m.groups()
            if mode == "count" and kind == "uretprobe" and not keep_ret:
                continue
            paths = libs.get(ph, [])
            if not paths:
                script.missing.append(f"@{ph}@:{sym} (library not found)")
                continue
            for p in paths:
                defined = symbols_of(p)
                notes = usdt_of(p) if usdt_of else {}
                if sym == "@JNI_ENTRY_POINTS@":
                    cands = {s for s in defined if is_jni_entry_point(s)}
                    for prov, nm in notes:
                        alias = jni_symbol_of_usdt(prov, nm)
                        if alias and alias[0] == kind:
                            cands.add(alias[1])
                    names = sorted(s for s in cands
                                   if not (skip_copy and s[4:] in JNI_COPY_FUNCTIONS))
                else:
                    names = [sym]
                for name in names:
                    u = _usdt_for(script, kind, p, name, notes, block)
                    if u is not None:
                        where = ("usdt", str(p), u)
                        if where not in seen:
                            seen[where] = name
                            ap_u = f"usdt:{p}:{u}"
                            kept.append(ap_u)
                            script.kinds[ap_u] = "usdt"
                            # bpftrace names the probe so in its output: map it to the symbol
                            script.addresses[f"{p}:{u}"] = name
                        continue
                    if name not in defined:
                        script.missing.append(f"{p}:{name}")
                        continue
                    # two names for one function (glibc's aligned_alloc and memalign): one
                    # probe, or every call would be counted twice
                    where = (kind, str(p), defined[name])
                    if where in seen:
                        script.aliases[f"{p}:{name}"] = seen[where]
                        continue
                    seen[where] = name
                    kept.append(_ap(script, kind, p, name, defined[name], by_address))
                    script.kinds[f"{kind}:{p}:{name}"] = kind
        if kept:
            out.append(",\n".join(kept))
            script.attached.extend(kept)
        else:
            # drop the filter and the block that belonged to the vanished attach points
            while i < len(lines) and lines[i] != "}":
                i += 1
            i += 1
    left = sorted(set(_UNFILLED.findall(_COMMENT.sub(" ", "\n".join(begin + out + end)))))
    if left:
        raise JvmosError(f"the probe scripts use {', '.join(left)} with no value for it (an "
                         "attach point gives one as a comment after it: '@NAME@ = value')")
    if live:
        out += [""] + LIVE_BLOCK.splitlines()
    out = _print_maps(out, begin + out, end)
    text = ["BEGIN", "{"] + begin + ["}", ""] + out + ["", "END", "{"] + end + ["}", ""]
    script.text = "\n".join(text)
    script.uprobe_count = sum(1 for a in script.attached if a.startswith(("uprobe", "uretprobe")))
    script.tracepoint_count = sum(1 for a in script.attached if a.startswith("tracepoint"))
    script.usdt_count = sum(1 for a in script.attached if a.startswith("usdt:"))
    # a symbol missing from one JDK but present in another is not missing overall
    present = set(script.addresses.values()) | {
        a.rsplit(":", 1)[-1] for a in script.attached if a.startswith(("uprobe", "uretprobe"))}
    script.missing = sorted({m for m in script.missing
                             if m.rsplit(":", 1)[-1] not in present})
    return script


PRINT_MAPS = "/* jvmos: print the maps */"
# The live view (`jvmos record --interval S`): every S seconds jvmos (pid $2) sends SIGURG to
# its own main thread with tgkill(2) (si_code SI_TKILL, -6; the stop in common.bt is a kill(2),
# SI_USER), and this block prints every map so far between two markers, while counting goes
# on. The maps are cumulative: jvmos differences two snapshots for an interval.
SNAPSHOT_BEGIN = "jvmos-snapshot-begin"
SNAPSHOT_END = "jvmos-snapshot-end"
LIVE_BLOCK = f"""tracepoint:signal:signal_generate
/$2 && args->sig == 23 && args->code == -6 && args->pid == $2 && pid == $2/
{{
	printf("{SNAPSHOT_BEGIN}\\n");
	{PRINT_MAPS}
	printf("{SNAPSHOT_END}\\n");
}}"""
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\])*\"", re.S)
_MAP = re.compile(r"@[A-Za-z_]\w*")
_CLEARED = re.compile(r"clear\((@[A-Za-z_]\w*)\)")


def output_maps(code: List[str], end: List[str]) -> List[str]:
    """The maps of a script that bpftrace would print at its end: every map the code uses
    (comments and strings aside) but the scratch ones END clears and @traced (cleared at the
    stop)."""
    used = set(_MAP.findall(_COMMENT.sub(" ", "\n".join(code))))
    scratch = set(_CLEARED.findall(_COMMENT.sub(" ", "\n".join(end)))) | {"@traced"}
    return sorted(used - scratch)


def _print_maps(out: List[str], code: List[str], end: List[str]) -> List[str]:
    """common.bt's stop block with its print() list written in (see common.bt)."""
    maps = output_maps(code, end)
    # the end marker tells jvmos that every map was printed: a script that prints it must
    # print maps before it
    marks = any(MAPS_PRINTED in line for line in out)
    placed = any(line.strip() == PRINT_MAPS for line in out)
    if marks and (not placed or not maps):
        raise JvmosError("probes/common.bt prints the end marker but no map before it (its "
                         f"'{PRINT_MAPS}' line is missing, or the script has no map): this "
                         "installation's probe scripts are damaged")
    res = []
    for line in out:
        if line.strip() == PRINT_MAPS:
            indent = line[:len(line) - len(line.lstrip())]
            res.extend(f"{indent}print({m});" for m in maps)
        else:
            res.append(line)
    return res


_ARG = re.compile(r"\barg(\d+)\b")


def _usdt_for(script: Script, kind: str, path: Path, sym: str, notes: Dict,
              block: str) -> Optional[str]:
    """'provider:name' of the USDT probe standing for this symbol probe, or None (fallback)."""
    alias = jni_usdt_alias(kind, sym)
    if alias is None or alias not in notes:
        return None
    sites = notes[alias]
    spelled = f"{path}:{alias[0]}:{alias[1]}"
    if any(s.semaphore for s in sites):
        script.usdt_skipped.append(f"{spelled}: has a semaphore (inert unless raised)")
        return None
    if kind == "uretprobe" and re.search(r"\bretval\b", block):
        script.usdt_skipped.append(f"{spelled}: the return block reads retval")
        return None
    used = [int(n) for n in _ARG.findall(block)]
    if used and any(len(s.args.split()) <= max(used) for s in sites):
        script.usdt_skipped.append(f"{spelled}: carries fewer arguments than arg{max(used)}")
        return None
    return f"{alias[0]}:{alias[1]}"


def _ap(script: Script, kind: str, path: Path, sym: str, addr: int, by_address: bool) -> str:
    if not by_address:
        return f"{kind}:{path}:{sym}"
    # bpftrace prints an address attach point back in decimal
    script.addresses[f"{path}:{addr}"] = sym
    return f"{kind}:{path}:0x{addr:x}"


def symbol_of_probe(probe: str, addresses: Dict[str, str]) -> str:
    """'uprobe:/x/libjvm.so:9136384' -> 'jni_GetByteArrayRegion'; 'tracepoint:syscalls:sys_exit_write' -> 'write'."""
    kind, _, rest = probe.partition(":")
    if kind == "usdt":
        sym = addresses.get(rest)
        if sym is None:
            parts = rest.rsplit(":", 2)
            alias = jni_symbol_of_usdt(parts[-2], parts[-1]) if len(parts) == 3 else None
            sym = alias[1] if alias else parts[-1]
        return sym
    if kind in ("uprobe", "uretprobe"):
        sym = addresses.get(rest)
        if sym is None:
            sym = rest.rsplit(":", 1)[-1]
        return sym
    if kind == "tracepoint":
        name = rest.rsplit(":", 1)[-1]
        for pre in ("sys_exit_", "sys_enter_"):
            if name.startswith(pre):
                return name[len(pre):]
        return name
    return probe
