"""USDT argument specs (the `Arguments:` of a SystemTap SDT note, x86-64) as the compiled
engine's programs evaluate them: each argument becomes a small fixed record (probes/io.h's
struct jvmos_usdt_arg) that the engine writes into the `usdt_args` map under the site's probe
id, and a program reads the argument's value from the registers saved at the probe (struct
pt_regs) and, for a memory operand, from the traced process's memory.

  "-4@%r13d"     a register: 4 bytes, signed (a negative size), of r13
  "8@-88(%rbp)"  memory: 8 bytes at rbp - 88
  "4@$5"         a constant
The size says how many low bytes of the value are the argument, and whether it is
sign-extended (negative) or zero-extended.
"""
import re
from typing import List

from jvmos import JvmosError

# kinds (probes/io.h: JVMOS_USDT_ARG_*)
CONST, REG, MEM = 1, 2, 3
MAX_ARGS = 6            # the record per site holds the first six arguments

# x86-64 struct pt_regs (arch/x86/include/asm/ptrace.h; also the ptrace user_regs layout):
# the byte offset of each 64-bit register
_PT_REGS = ["r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8", "rax", "rcx",
            "rdx", "rsi", "rdi", "orig_rax", "rip", "cs", "eflags", "rsp", "ss"]
PT_REGS_OFFSET = {r: 8 * i for i, r in enumerate(_PT_REGS)}


def _full_register(name: str) -> str:
    """The 64-bit register a (sub-)register name is part of: r13d -> r13, ebx -> rbx, al -> rax."""
    n = name.lower()
    m = re.fullmatch(r"r(\d+)[dwb]?", n)
    if m and 8 <= int(m.group(1)) <= 15:
        return f"r{m.group(1)}"
    legacy = {"ax": "rax", "bx": "rbx", "cx": "rcx", "dx": "rdx", "si": "rsi", "di": "rdi",
              "bp": "rbp", "sp": "rsp", "ip": "rip"}
    for short, full in legacy.items():
        if n in (full, "e" + short, short):
            return full
    low8 = {"al": "rax", "bl": "rbx", "cl": "rcx", "dl": "rdx", "sil": "rsi", "dil": "rdi",
            "bpl": "rbp", "spl": "rsp", "ah": None, "bh": None, "ch": None, "dh": None}
    if n in low8 and low8[n]:
        return low8[n]
    raise JvmosError(f"USDT argument register %{name} is not one jvmos can read")


_SPEC = re.compile(r"^(-?\d+)@(?:\$(-?\d+)|%(\w+)|(-?\d*)\(%(\w+)\))$")


def parse(spec: str) -> dict:
    """One argument spec -> {"kind", "size", "reg", "disp"} (reg: a pt_regs offset)."""
    m = _SPEC.match(spec.strip())
    if not m:
        raise JvmosError(f"USDT argument spec '{spec}' is not one jvmos can read")
    size = int(m.group(1))
    if abs(size) not in (1, 2, 4, 8):
        raise JvmosError(f"USDT argument spec '{spec}': size {size}")
    if m.group(2) is not None:
        return {"kind": CONST, "size": size, "reg": 0, "disp": int(m.group(2))}
    if m.group(3) is not None:
        return {"kind": REG, "size": size, "reg": PT_REGS_OFFSET[_full_register(m.group(3))],
                "disp": 0}
    return {"kind": MEM, "size": size, "reg": PT_REGS_OFFSET[_full_register(m.group(5))],
            "disp": int(m.group(4) or 0)}


def parse_all(args: str) -> List[dict]:
    """A note's Arguments (space separated) -> the records of its first MAX_ARGS arguments."""
    return [parse(a) for a in args.split()[:MAX_ARGS]]
