"""Where in a function a uprobe is cheapest to place (x86-64).

A uprobe replaces an instruction with int3. When it fires, the kernel either emulates the
original instruction (push of a register, jmp, jcc, call) or copies it out of line and
single-steps it, which costs a second trap. On this kind of machine (a VM) the second trap is
the expensive part: an entry uprobe on glibc's write(), whose first instruction is a
RIP-relative `cmpb $0, __libc_single_threaded(%rip)`, cost ~10 µs per call, and ~0.8 µs when
placed 7 bytes in, on the `je` that follows (measured with `jvmos run overhead`'s loops).

probe_site() walks the first instructions of a function and returns how many bytes to move
the probe so that it sits on the first instruction the kernel emulates, provided that every
instruction before it
  - runs on every call (straight-line code: no branch before the site), and
  - leaves the function's arguments (rdi, rsi, rdx, rcx, r8, r9) and the stack pointer
    untouched (flags-only compare/test, or a move into rax, r10 or r11),
so the probe sees the same arguments, and a uretprobe finds the return address on top of the
stack, exactly as at the entry. Otherwise the probe stays at the entry (shift 0).
Only --scope process can use it: bpftrace 0.17 refuses a uprobe inside a function, and jvmos
opens the scoped uprobes itself (jvmos.scope).
"""
import re
import subprocess
from functools import lru_cache
from typing import List, Optional, Tuple

# instructions the x86 uprobe code emulates (arch/x86/kernel/uprobes.c: branch and push ops)
# (relative branches only: an indirect jmp/call through a register or memory is single-stepped)
_EMULATED = re.compile(r"^(push\s+%r\w+|(jmp|j[a-z]{1,3}|call)\s+[0-9a-f]+\s)")
# instructions allowed before the site: they write the flags or a register no argument uses
# (cmp/test with an operand size suffix at most: not cmps, which moves rsi/rdi, nor cmpxchg)
_HARMLESS = re.compile(r"^(endbr64|nop\w*|cmp[bwlq]?\s|test[bwlq]?\s|"
                       r"(mov|xor)\w*\s+[^,]+,%(e?ax|rax|r10d?|r11d?)$)")
MAX_INSNS = 6


def _load_segments(path: str) -> List[Tuple[int, int, int]]:
    """(file offset, virtual address, file size) of each LOAD segment."""
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout
    segs = []
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            segs.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))
    return segs


def _vaddr(path: str, offset: int) -> Optional[int]:
    for off, va, size in _load_segments(path):
        if off <= offset < off + size:
            return offset - off + va
    return None


def _insns(path: str, vaddr: int) -> List[Tuple[int, str]]:
    """(address, instruction text) of the first bytes of the function at vaddr."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-M", "att", path,
                          f"--start-address={vaddr:#x}", f"--stop-address={vaddr + 64:#x}"],
                         capture_output=True, text=True).stdout
    ins = []
    for line in out.splitlines():
        m = re.match(r"^\s*([0-9a-f]+):\s+(.*?)\s*(#.*)?$", line)
        if m and m.group(2) and not m.group(2).startswith("("):
            ins.append((int(m.group(1), 16), m.group(2)))
    return ins


@lru_cache(maxsize=64)
def _entries(path: str) -> frozenset:
    """Every function entry of the library (once per library, not once per probe)."""
    from jvmos.jdk import symbols
    return frozenset(symbols(path).values())


@lru_cache(maxsize=4096)
def probe_site(path: str, offset: int) -> Tuple[int, str]:
    """(bytes to move the probe, why) for the function at this file offset of path."""
    va = _vaddr(path, offset)
    if va is None:
        return 0, "entry (offset outside the file's LOAD segments)"
    if va not in _entries(path):
        return 0, "not moved (not a function's entry: a USDT site, or an address probe)"
    try:
        ins = _insns(path, va)
    except OSError as e:
        return 0, f"entry (objdump failed: {e})"
    if not ins or ins[0][0] != va:
        return 0, "entry (could not disassemble the function)"
    # a site that a branch of the function jumps back to would fire more than once per call
    targets = {int(t, 16) for _, text in ins for t in re.findall(r"^j\w*\s+([0-9a-f]+)\s", text)}
    for addr, text in ins[:MAX_INSNS]:
        if addr != va and addr in targets:
            return 0, f"entry (+{addr - va} is a branch target inside the function)"
        if _EMULATED.match(text):
            if addr == va:
                return 0, f"entry ({text.split()[0]}: emulated)"
            return addr - va, f"+{addr - va} ({text.split()[0]}: emulated; the instructions " \
                              "before it leave arguments and stack alone)"
        if not _HARMLESS.match(text):
            return 0, f"entry ({text.split()[0]} at +{addr - va} is single-stepped, and no " \
                      "emulated instruction comes before it)"
    return 0, "entry (no emulated instruction among the first ones)"
