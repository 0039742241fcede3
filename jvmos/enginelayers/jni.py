"""The jni census layer, compiled (probes/jni.bpf.c, probes/jni.h): every call of every JNI
entry point of libjvm.so (@calls[pid, "jni_call", probe]), through the jni_* symbols, or,
where libjvm has lost them to `strip`, through HotSpot's hotspot_jni:<Function>__entry USDT
probes."""
from jvmos.catalogue import (JNI_COPY_FUNCTIONS, JNI_USDT_PROVIDER, is_jni_entry_point,
                             jni_symbol_of_usdt, jni_usdt_alias)

NAME = OBJECT = "jni"
HEADER = "jni.h"
BASE = 320

CATEGORIES = {"jni_call": BASE + 1}
NAMES = {}
WHATS = {}
# a census hit is one minimal entry uprobe (analyzers/census.py KINDS: cost key "uprobe", in
# both modes), which the engine's calibration measures itself (calib.bpf.c's min_uprobe): a
# USDT site is a nop, emulated, like the push %rbp that uprobe was measured on
CALIBRATIONS = []
MISSED = {}
HITS = {}
HEADER_NAMES = {f"CAT_{k.upper()}": v for k, v in CATEGORIES.items()}


def constants(ctx) -> dict:
    return {}


def entry_points(defined, notes, skip_copy: bool):
    """{jni_<Function>: (provider, name) of its USDT entry probe, or None}: every JNI entry
    point the library has a symbol or a USDT entry probe for; the copy functions left out
    when skip_copy (the io layer probes them)."""
    cands = {s for s in defined if is_jni_entry_point(s)}
    for prov, nm in notes:
        alias = jni_symbol_of_usdt(prov, nm)
        if alias and alias[0] == "uprobe":
            cands.add(alias[1])
    out = {}
    for sym in sorted(cands):
        if skip_copy and sym[4:] in JNI_COPY_FUNCTIONS:
            continue
        alias = jni_usdt_alias("uprobe", sym)
        out[sym] = alias if alias in notes else None
    return out


def plan(ctx) -> None:
    paths = ctx.libs.get("LIBJVM", [])
    if not paths:
        ctx.script.missing.append("@LIBJVM@:@JNI_ENTRY_POINTS@ (library not found)")
        return
    skip_copy = "io" in ctx.layers
    for p in paths:
        defined = ctx.symbols_of(p)
        notes = ctx.usdt_of(p)
        eps = entry_points(defined, notes, skip_copy)
        if not eps:
            ctx.script.missing.append(f"{p}:jni_* (neither JNI entry point symbols nor "
                                      f"{JNI_USDT_PROVIDER} USDT probes)")
            continue
        for sym, usdt in eps.items():
            if sym in defined:      # the symbol first: its figures read as they always did
                ctx.uprobe_in(p, sym, "jni_entry")
            else:
                ctx.usdt(p, usdt[0], usdt[1], "jni_entry", stands_for=sym)
