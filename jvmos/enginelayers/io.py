"""The io layer, compiled (probes/io.bpf.c, probes/io.h): JNI and NIO copies, I/O calls."""
from jvmos.catalogue import (IO_LIBC_WRAPPERS, IO_SYSCALLS, JNI_COPY_FUNCTIONS,
                             JNI_USDT_SUFFIX, NIO_NATIVES, PRIMITIVES, jni_usdt_alias)

NAME = OBJECT = "io"
HEADER = "io.h"
BASE = 64

CATEGORIES = {"jni_copy": BASE + 1, "unsafe_copy_out": BASE + 2, "unsafe_copy_etc": BASE + 3,
              "nio_native": BASE + 4, "io_syscall": BASE + 5}
NAMES = {}
PATHS = {1: ("jni", "in"), 2: ("jni", "out"), 3: ("nio", "any")}
WHATS = {BASE + 1: ("path_bytes", lambda sub, x: tuple(PATHS[sub]) if sub in PATHS else None),
         BASE + 2: ("path_calls", lambda sub, x: tuple(PATHS[sub]) if sub in PATHS else None),
         BASE + 3: ("nio_confirmed", lambda sub, x: ())}
# io's probe costs are measured by enginecost.calibrate itself (its first keys)
CALIBRATIONS = []
MISSED = {"jni_copy_no_entry": BASE + 1, "syscall_no_entry": BASE + 2, "usdt_args": BASE + 3}
HITS = {}
# what the header calls each id, for the catalogue test
HEADER_NAMES = {
    **{f"CAT_{k.upper()}": v for k, v in CATEGORIES.items()},
    "WHAT_PATH_BYTES": BASE + 1, "WHAT_PATH_CALLS": BASE + 2, "WHAT_NIO_CONFIRMED": BASE + 3,
    "PATH_JNI_IN": 1, "PATH_JNI_OUT": 2, "PATH_NIO_ANY": 3,
    **{f"MISSED_{k.upper()}": v for k, v in MISSED.items()},
    "USDT_ARG_CONST": 1, "USDT_ARG_REG": 2, "USDT_ARG_MEM": 3, "USDT_MAX_ARGS": 6,
}


def region_size(fn: str) -> int:
    if fn == "GetStringRegion":
        return 2
    if fn == "GetStringUTFRegion":
        return 1            # a lower bound: len counts UTF-16 chars, each >= 1 byte of UTF-8
    for t, size in PRIMITIVES.items():
        if fn in (f"Get{t}ArrayRegion", f"Set{t}ArrayRegion"):
            return size
    raise ValueError(fn)


def constants(ctx) -> dict:
    return {"timing": 1 if ctx.mode == "time" else 0}


def jni_copy(ctx, fn: str, jni_ret) -> None:
    """One JNI copy function in every libjvm: its symbol, or, where the symbol is gone (a
    stripped libjvm.so), HotSpot's hotspot_jni USDT probes of it (<fn>__entry, and
    <fn>__return for the time in --mode time); the Region copies' length and buffer are
    then read as the note says (jvmos/usdtargs.py)."""
    region = fn.endswith("Region")
    prog = (("jni_set_region" if fn.startswith("Set") else "jni_get_region") if region
            else "jni_other")
    value = region_size(fn) if region else 0
    paths = ctx.libs.get("LIBJVM", [])
    if not paths:
        ctx.uprobe("LIBJVM", f"jni_{fn}", prog, jni_ret, value, has_bytes=region)
        return
    for p in paths:
        alias = jni_usdt_alias("uprobe", f"jni_{fn}")
        if f"jni_{fn}" in ctx.symbols_of(p) or alias not in ctx.usdt_of(p):
            ctx.uprobe_in(p, f"jni_{fn}", prog, jni_ret, value, has_bytes=region)
            continue
        ctx.usdt(p, alias[0], alias[1], prog + "_usdt" if region else prog,
                 stands_for=f"jni_{fn}", value=value, has_bytes=region,
                 ret_name=fn + JNI_USDT_SUFFIX["uretprobe"] if jni_ret else None,
                 ret_prog=jni_ret, args=region)


def plan(ctx) -> None:
    jni_ret = "jni_ret" if ctx.mode == "time" else None
    for fn in JNI_COPY_FUNCTIONS:
        jni_copy(ctx, fn, jni_ret)
    ctx.uprobe("LIBJVM", "Unsafe_CopyMemory0", "unsafe_copy", None, has_bytes=True)
    for sym in NIO_NATIVES:
        ctx.uprobe("LIBNIO", sym, "nio_native", None)
    if ctx.scope == "process":
        for sym in IO_LIBC_WRAPPERS:
            prog = ("libc_write" if sym in ("write", "pwrite64") else
                    "libc_read" if sym in ("read", "pread64") else "libc_other")
            ctx.uprobe("LIBC", sym, prog, "libc_ret", has_bytes=True)
    else:
        for sc in IO_SYSCALLS:
            prog = ("sys_write" if sc in ("write", "pwrite64") else
                    "sys_read" if sc in ("read", "pread64") else "sys_other")
            ctx.tracepoint("syscalls", f"sys_enter_{sc}", prog)
            ctx.tracepoint("syscalls", f"sys_exit_{sc}", "sys_io_exit", named=True,
                           has_bytes=True)
