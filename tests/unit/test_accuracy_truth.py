"""The accuracy experiment's kernel-time check: parsing bpftrace's profile samples and the
arithmetic of kernel time per write(2), on a hand-made bpftrace JSON."""
import json
import math

import pytest

from jvmos import JvmosError
from jvmos.experiments.accuracy import (kernel_check_note, kernel_stack_kind, parse_kernel_samples,
                                        ratio_ci95, writer_kernel_ns)

ENTRY = "    do_syscall_64+113\n    entry_SYSCALL_64_after_hwframe+118\n"
SAMPLES = {
    "101,3,\n": 50,                                                                  # user mode
    "101,0,\n    write_null+5\n    vfs_write+120\n    ksys_write+102\n" + ENTRY: 30,   # handler
    "101,0,\n    fdget_pos+10\n    ksys_write+20\n" + ENTRY: 10,                     # handler
    "101,0,\n" + ENTRY: 20,                                                          # entry/exit
    "101,0,\n    perf_syscall_enter+9\n    syscall_trace_enter+40\n" + ENTRY: 5,     # a tracer
    "102,0,\n    futex_wait+1\n    __x64_sys_futex+3\n" + ENTRY: 7,                   # other call
    "102,0,\n    clear_page_erms+1\n    asm_exc_page_fault+1\n": 4,                   # page fault
    "102,0,\n    ksys_write+5\n" + ENTRY: 2,                                          # handler
}
BPFTRACE_OUT = "\n".join([json.dumps({"type": "attached_probes", "data": {"probes": 1}}),
                          "not json", json.dumps({"type": "map", "data": {"@s": SAMPLES}})])


def test_kinds_and_threads():
    by = parse_kernel_samples(BPFTRACE_OUT)
    assert set(by) == {101, 102}
    assert by[101]["user"] == 50 and by[101]["write"] == 30 + 10
    assert by[101]["write:vfs_write"] == 30 and by[101]["write:fdget_pos"] == 10
    assert by[101]["syscall_path"] == 20 and by[101]["tracer"] == 5
    assert by[102]["other_syscall"] == 7 and by[102]["other"] == 4
    assert by[102]["write"] == 2 and by[102]["write:ksys_write"] == 2   # in the handler's own code


@pytest.mark.parametrize("stack,kind", [
    (["asm_exc_int3+1", "irqentry_exit_to_user_mode+3"], "tracer"),          # another tracer's uprobe
    (["uprobe_handle_trampoline+1", "__ia32_sys_uretprobe+2", "do_syscall_64+1",
      "entry_SYSCALL_64_after_hwframe+1"], "tracer"),
    (["x64_sys_call+1", "do_syscall_64+1", "entry_SYSCALL_64_after_hwframe+1"], "syscall_path"),
    (["__x86_indirect_thunk_rax"], "other"),                                  # an unresolved stack
    ([], "other"),
])
def test_kernel_stack_kind(stack, kind):
    assert kernel_stack_kind(stack) == kind


def test_writer_time_per_write():
    # the writer is tid 101 (40 handler samples against 2); hz 1000 and 100,000 writes make a
    # sample 1e9 / 1000 / 100,000 = 10 ns per write
    w = writer_kernel_ns(parse_kernel_samples(BPFTRACE_OUT), 1000, 100_000)
    assert w["thread_rank"] == 101
    assert w["samples_counted"] == 40 + 20
    assert w["ns_per_write"] == pytest.approx(600.0)                          # 60 x 10 ns
    assert w["ns_per_write_err95"] == pytest.approx(1.96 * math.sqrt(60) * 10)  # 151.8 ns
    assert w["handler_ns_per_write"] == pytest.approx(400.0)                  # 40 x 10 ns
    assert w["handler_ns_per_write_by_callee"] == pytest.approx({"vfs_write": 300.0, "fdget_pos": 100.0})
    assert w["samples_tracer"] == 5                                           # kept apart


def test_ratio_and_its_interval():
    # 120 samples over 100 writes against 60 over 100: 2.0; 1.96 sqrt(1/120 + 1/60) = 0.3099
    r, (lo, hi) = ratio_ci95(120, 100, 60, 100)
    assert r == pytest.approx(2.0)
    assert lo == pytest.approx(2.0 * math.exp(-0.30990), rel=1e-4)           # 1.467
    assert hi == pytest.approx(2.0 * math.exp(0.30990), rel=1e-4)            # 2.727
    assert ratio_ci95(0, 100, 60, 100) == (None, None)


def test_note_says_whether_one_is_inside_the_interval():
    by = parse_kernel_samples(BPFTRACE_OUT)
    side = writer_kernel_ns(by, 1000, 100_000)
    kc = {"c": side, "java": side, "warnings": []}
    kc["java_over_c"], kc["java_over_c_ci95"] = ratio_ci95(60, 1, 60, 1)
    kc["handler_java_over_c"], kc["handler_java_over_c_ci95"] = ratio_ci95(80, 1, 40, 1)
    text = kernel_check_note(kc)
    assert "600 ns vs 600 ns" in text and "Java/C 1.00 (95% " in text
    assert "1 inside the 95% interval" in text and "Java/C 2.00" in text
    assert "1 outside the 95% interval" in text     # 2.0, 1.96 sqrt(1/80 + 1/40) = 0.380: 1.37-2.92


def test_no_writes_is_an_error():
    with pytest.raises(JvmosError):
        writer_kernel_ns(parse_kernel_samples(BPFTRACE_OUT), 1000, 0)


def test_a_failed_check_is_said_not_hidden():
    from jvmos.experiments.accuracy import kernel_check_table
    kc = {"error": "kernel-time check failed (exit 1): blocking_io: perf_event_open denied"}
    assert "not measured" in kernel_check_note(kc) and "untested" in kernel_check_note(kc)
    t = kernel_check_table(kc, 1e6, 1000)
    assert len(t.rows) == 1 and "not measured: kernel-time check failed" in t.rows[0][1]
