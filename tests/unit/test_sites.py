"""jvmos.sites: a uprobe moves only past instructions that leave arguments and stack alone,
onto one the kernel emulates; anything else keeps it at the entry."""
import pytest

from jvmos import sites

ENTRY = 0x1000


@pytest.fixture
def disasm(monkeypatch):
    def use(insns):
        sites.probe_site.cache_clear()
        monkeypatch.setattr(sites, "_vaddr", lambda path, off: off)
        monkeypatch.setattr(sites, "_insns", lambda path, va: insns)
        monkeypatch.setattr("jvmos.jdk.symbols", lambda path: {"f": ENTRY})
    return use


def test_glibc_write_moves_to_the_je(disasm):
    # glibc 2.36's write: a RIP-relative cmpb (single-stepped), then je (emulated)
    disasm([(0x1000, "cmpb   $0x0,0xe3291(%rip)"), (0x1007, "je     1020 <write+0x20>"),
            (0x1009, "mov    $0x1,%eax"), (0x100e, "syscall")])
    assert sites.probe_site("/x/libc.so.6", ENTRY)[0] == 7


def test_moves_past_a_copy_into_r10(disasm):
    disasm([(0x1000, "cmpb   $0x0,0xd0cc1(%rip)"), (0x1007, "mov    %ecx,%r10d"),
            (0x100a, "je     1028 <recv+0x28>")])
    assert sites.probe_site("/x/libc.so.6", ENTRY)[0] == 10


def test_an_emulated_first_instruction_stays_at_the_entry(disasm):
    disasm([(0x1000, "push   %r12"), (0x1002, "push   %rbp")])
    assert sites.probe_site("/x/libc.so.6", ENTRY)[0] == 0


@pytest.mark.parametrize("first", ["mov    %rdi,%rbx",       # an argument register is read:
                                   "sub    $0x10,%rsp",      # the stack moves
                                   "mov    $0x0,%rdi",       # an argument is overwritten
                                   "syscall"])
def test_no_move_past_anything_that_touches_arguments_or_stack(disasm, first):
    disasm([(0x1000, first), (0x1004, "je     1020 <f+0x20>")])
    assert sites.probe_site("/x/libc.so.6", ENTRY)[0] == 0


def test_a_probe_not_at_a_function_entry_is_never_moved(disasm):
    # a USDT site is a nop inside a function: its arguments are those registers there
    disasm([(0x1010, "nop"), (0x1011, "jmp    1030 <f+0x30>")])
    assert sites.probe_site("/x/libjvm.so", 0x1010) == (
        0, "not moved (not a function's entry: a USDT site, or an address probe)")


@pytest.mark.parametrize("insns", [
    # cmps moves rsi and rdi; cmpxchg writes memory: neither leaves the arguments alone
    [(0x1000, "cmpsb  %es:(%rdi),%ds:(%rsi)"), (0x1002, "je     1020 <f+0x20>")],
    [(0x1000, "cmpxchg %rdx,(%rdi)"), (0x1004, "je     1020 <f+0x20>")],
    # an indirect jump is single-stepped, not emulated: nothing gained by moving onto it
    [(0x1000, "cmpb   $0x0,0x10(%rip)"), (0x1007, "jmp    *%rax")],
    # a site that a branch of the function comes back to would fire more than once per call
    [(0x1000, "cmpb   $0x0,0x10(%rip)"), (0x1007, "je     1020 <f+0x20>"),
     (0x1009, "jmp    1007 <f+0x7>")],
])
def test_no_move_onto_an_unsafe_or_useless_site(disasm, insns):
    disasm(insns)
    assert sites.probe_site("/x/libc.so.6", ENTRY)[0] == 0
