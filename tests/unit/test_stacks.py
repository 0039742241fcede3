"""Frame-to-category attribution on recorded async-profiler collapsed stacks."""
from pathlib import Path

import pytest

from jvmos.analyzers.stacks import attribute, call_site, categorize, parse_collapsed, strip

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "stacks"


def load(name):
    return parse_collapsed((FIX / f"{name}.collapsed").read_text().splitlines())


def test_parse_collapsed_counts_every_sample():
    st = load("blocking-java17")
    assert st and all(n > 0 for _, n in st)
    total = sum(int(l.rsplit(" ", 1)[1]) for l in (FIX / "blocking-java17.collapsed").read_text().splitlines() if l.strip())
    assert sum(n for _, n in st) == total


def test_blocking_loop_is_mostly_the_write_path():
    r = attribute(load("blocking-java17"), 1_000_000)
    c = r["categories"]
    write_path = sum(c.get(k, {}).get("samples", 0) for k in ("jni_copy", "io_syscall", "kernel_copy", "kernel_other"))
    assert write_path > r["samples_total"] / 2
    assert c["jni_copy"]["samples"] > 0
    assert "nio_copy" not in c                      # FileOutputStream copies through JNI only
    site, n = r["top_call_sites"]["jni_copy"][0]
    assert site == "W.main -> java/io/FileOutputStream.write"
    assert c["jni_copy"]["time_ns"] == c["jni_copy"]["samples"] * 1_000_000
    assert c["jni_copy"]["time_err95_ns"] == pytest.approx(1.96 * c["jni_copy"]["samples"] ** 0.5 * 1e6)


def test_socket_stream_copies_through_nio_and_the_kernel():
    r = attribute(load("socket-java17"), 1_000_000)
    c = r["categories"]
    assert "jni_copy" not in c
    assert c["nio_copy"]["samples"] > 0 and c["kernel_copy"]["samples"] > 0
    sites = dict(map(tuple, r["top_call_sites"]["io_syscall"]))
    assert sites["S.main -> java/io/OutputStream.write"] > sites.get("S.lambda$main$0 -> java/io/InputStream.read", 0)
    assert abs(sum(v["share_pct"] for v in c.values()) - 100.0) < 1e-6


@pytest.mark.parametrize("frames,cat", [
    (["A.main_[j]", "Java_x", "jni_GetByteArrayRegion", "__memmove_avx_unaligned_erms"], "jni_copy"),
    (["A.main_[j]", "jni_GetByteArrayRegion", "x_[k]"], "jni_copy"),   # a page fault inside the copy
    (["A.main_[j]", "__GI_write", "do_syscall_64_[k]", "_copy_from_iter_[k]"], "kernel_copy"),
    (["A.main_[j]", "__GI_write", "do_syscall_64_[k]", "vfs_write_[k]"], "io_syscall"),
    (["A.main_[j]", "__GI_write"], "io_syscall"),
    (["sun/nio/ch/IOUtil.write_[j]", "java/nio/DirectByteBuffer.put_[i]"], "nio_copy"),
    (["A.main_[j]", "jdk/internal/misc/Unsafe.copyMemory_[j]"], "java"),   # not under NIO
    (["start_thread", "JavaThread::run", "os::malloc", "malloc"], "malloc"),
    (["A.main_[j]", "JVM_StartThread", "os::create_thread", "pthread_create@@GLIBC_2.34"], "thread_create"),
    (["asm_sysvec_apic_timer_interrupt_[k]"], "kernel_other"),
    (["A.main_[j]", "A.work_[i]"], "java"),
    (["start_thread", "GCTaskThread::run"], "jvm"),
])
def test_categorize(frames, cat):
    assert categorize(frames) == cat


def test_call_site_prefers_application_code():
    assert call_site(["Thread.run_[j]", "com/acme/Srv.handle_[j]", "java/io/OutputStream.write_[j]",
                      "sun/nio/ch/NioSocketImpl.write_[j]", "__GI_write"]) == \
        "com/acme/Srv.handle -> java/io/OutputStream.write"
    assert call_site(["java/lang/Thread.run_[j]", "sun/nio/ch/X.y_[j]"]) == "java/lang/Thread.run"
    assert call_site(["start_thread", "os::x"]) is None


def test_strip_annotations():
    assert strip("do_syscall_64_[k]") == "do_syscall_64"
    assert strip("java/io/File.x_[0]") == "java/io/File.x"
    assert strip("jni_GetByteArrayRegion") == "jni_GetByteArrayRegion"


def test_bad_lines_are_skipped():
    assert parse_collapsed(["", "a;b notanumber", "a;b 3"]) == [(["a", "b"], 3)]
