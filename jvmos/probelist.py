"""What a recording's probes are: the list the engine's plan attaches (jvmos.engine), kept in
the manifest, and the naming of a probe as the analyzers read it.

A probe is named "kind:where": "uprobe:<library>:<symbol or address>", "uretprobe:...",
"usdt:<library>:<provider>:<name>", "tracepoint:<group>:<name>". Recordings made with the
retired bpftrace scripts named their uprobes by address ("uprobe:<library>:<decimal>"), which
`addresses` maps back to the symbol; the engine's names carry the symbol itself.
"""
from dataclasses import dataclass, field
from typing import Dict, List

from jvmos.catalogue import LIBC_STANDS_FOR, jni_symbol_of_usdt


@dataclass
class ProbeList:
    text: str                                           # the plan as written (JSON)
    attached: List[str] = field(default_factory=list)   # attach points kept
    missing: List[str] = field(default_factory=list)    # "lib:symbol" that no library defines
    # "path:address" (or a USDT site) -> the symbol it stands for
    addresses: Dict[str, str] = field(default_factory=dict)
    # "lib:name" -> the name probed instead (same address)
    aliases: Dict[str, str] = field(default_factory=dict)
    uprobe_count: int = 0       # uprobe and uretprobe attach points
    tracepoint_count: int = 0
    usdt_count: int = 0         # usdt attach points (each is one uprobe per probe site)
    # what kind each probe is: "uprobe:<lib>:<symbol>", "usdt:<lib>:<provider>:<name>",
    # "tracepoint:..." -> "uprobe" | "uretprobe" | "usdt" | "tracepoint" | "tp_btf"
    kinds: Dict[str, str] = field(default_factory=dict)
    # symbol probes that had a USDT alias but kept the symbol, and why
    usdt_skipped: List[str] = field(default_factory=list)


def symbol_of_probe(probe: str, addresses: Dict[str, str]) -> str:
    """'uprobe:/x/libjvm.so:9136384' -> 'jni_GetByteArrayRegion' (with that address in
    `addresses`); 'tracepoint:syscalls:sys_exit_write' -> 'write'; a HotSpot USDT probe of a
    JNI function -> that function's symbol; glibc's __close_nocancel -> 'close' (the syscall
    it makes: catalogue.LIBC_STANDS_FOR)."""
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
        return LIBC_STANDS_FOR.get(sym, sym)
    if kind == "tracepoint":
        name = rest.rsplit(":", 1)[-1]
        for pre in ("sys_exit_", "sys_enter_"):
            if name.startswith(pre):
                return name[len(pre):]
        return name
    return probe
