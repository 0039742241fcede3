"""Frame-to-category attribution on recorded async-profiler collapsed stacks.

Fixtures (tests/fixtures/stacks, real frames; see README there for how each was recorded):
  blocking-java17, socket-java17   whole profiles of the io workloads
  tomcat-shop-java17/-java25       the shop on embedded Tomcat under load, attached with
                                   `--mode sample`: the stacks that run through a buffer put/get
                                   or a copyMemory
  socket-java25                    java.net.Socket writes: the same selection
  buffers-java17/-java25           Buffers.java (next to them): each kind of buffer copy
"""
import re
from collections import Counter
from pathlib import Path

import pytest

from jvmos.analyzers.stacks import attribute, call_site, categorize, parse_collapsed, strip

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "stacks"
COPY_FIXTURES = ("tomcat-shop-java17", "tomcat-shop-java25", "socket-java17", "socket-java25",
                 "buffers-java17", "buffers-java25")


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


# --- which buffer copies cross between the Java heap and native memory -------------------------
# A copy site, as the test reads it (independently of the product's rules): the innermost buffer
# put/get or copyMemory frame, the run of JDK buffer frames (java/nio, jdk/internal/misc) around it,
# and the frame that called that run. Each site found in the fixtures is decided by hand below,
# from the JDK 17/25 sources (java.nio X-Buffer templates, sun.nio.ch.IOUtil, NioSocketImpl) and
# Tomcat 10's (SocketWrapperBase, OutputBuffer, Http11OutputBuffer).
COPY = re.compile(r"^(java/nio/\w*Buffer\w*\.(put|get)\w*|jdk/internal/misc/\w+\.copy\w*Memory\w*|"
                  r"Unsafe_Copy\w*)$")
# the VM entered from inside the copy code (JIT counters, call resolution, allocation): not copying
IN_VM = re.compile(r"^(Runtime1|SharedRuntime|OptoRuntime|InterpreterRuntime|CompilationPolicy)::")


def copy_site(frames):
    names = [strip(f) for f in frames]
    inner = max((i for i, f in enumerate(names) if COPY.match(f)), default=None)
    if inner is None:
        return None
    first = inner
    while first > 0 and names[first - 1].startswith(("java/nio/", "jdk/internal/misc/")):
        first -= 1
    buffers = {m.group(1) for m in (re.match(r"java/nio/(\w*Buffer\w*)\.", f) for f in names[first:inner + 1]) if m}
    caller = names[first - 1] if first > 0 else "<truncated>"
    return caller, "+".join(sorted(buffers)), any(IN_VM.match(f) for f in names[inner:])


# (caller, buffer classes on the run) -> True when the copy crosses the heap/native boundary
SITES = {
    # Tomcat copies the response into its socket write buffer, a heap ByteBuffer (the NIO
    # connector's socket.directBuffer is false by default): heap-to-heap
    ("org/apache/tomcat/util/net/SocketWrapperBase.transfer", "ByteBuffer+HeapByteBuffer"): False,
    ("org/apache/tomcat/util/net/SocketWrapperBase.transfer", "HeapByteBuffer"): False,
    # the servlet's bytes into the response's heap ByteBuffer: heap-to-heap
    ("org/apache/catalina/connector/OutputBuffer.transfer", "HeapByteBuffer"): False,
    # status line and headers into the heap header buffer: heap-to-heap
    ("org/apache/coyote/http11/Http11OutputBuffer.write", "ByteBuffer+HeapByteBuffer"): False,
    ("org/apache/coyote/http11/Http11OutputBuffer.write", "HeapByteBuffer"): False,
    ("org/apache/coyote/http11/Http11OutputBuffer.sendStatus", "HeapByteBuffer"): False,
    # request parsing reads single bytes of the heap read buffer: no boundary
    ("org/apache/coyote/http11/Http11InputBuffer.parseRequestLine", "HeapByteBuffer"): False,
    ("org/apache/coyote/http11/Http11InputBuffer.parseHeader", "HeapByteBuffer"): False,
    # IOUtil.write puts the caller's heap buffer into a temporary direct buffer: heap -> native
    ("sun/nio/ch/IOUtil.write", "ByteBuffer"): True,
    # IOUtil.read puts the temporary direct buffer into the caller's heap buffer: native -> heap
    ("sun/nio/ch/IOUtil.read", "ByteBuffer+HeapByteBuffer"): True,
    ("sun/nio/ch/IOUtil.read", "HeapByteBuffer"): True,
    # Socket streams: the array into / out of a temporary direct buffer (Util.getTemporaryDirectBuffer)
    ("sun/nio/ch/NioSocketImpl.tryWrite", "ByteBuffer"): True,
    ("sun/nio/ch/NioSocketImpl.tryRead", "ByteBuffer"): True,
    # Buffers.java: a String into a heap CharBuffer: heap-to-heap
    ("Buffers.charPut", "CharBuffer+HeapCharBuffer"): False,
    ("Buffers.charPut", "CharBuffer"): False,      # CharBuffer.put(String)'s own checks
    # Buffers.java: UTF_8.encode(String) growing its heap output (HeapByteBuffer.put(old)), and the
    # encoder reading the String through a StringCharBuffer: heap-to-heap
    ("Buffers.encode", "ByteBuffer+HeapByteBuffer"): False,
    ("Buffers.encode", "HeapByteBuffer"): False,
    ("sun/nio/cs/UTF_8$Encoder.encodeBufferLoop", "HeapByteBuffer"): False,
    ("sun/nio/cs/UTF_8$Encoder.encodeBufferLoop", "StringCharBuffer"): False,
    # Buffers.java: d.put(byte[]) and d.get(byte[]) on a direct buffer; DirectByteBuffer inherits
    # them, so the frames say ByteBuffer.put/putArray, ByteBuffer.get/getArray: heap <-> native
    ("Buffers.direct", "ByteBuffer"): True,
    # Buffers.java: h.put(d), a heap buffer filled from the direct one by application code. It does
    # cross (native -> heap), but no frame shows the source's kind: the documented limitation,
    # counted as heap-to-heap.
    ("Buffers.direct", "ByteBuffer+HeapByteBuffer"): False,
}


def copy_stacks():
    for name in COPY_FIXTURES:
        for frames, n in load(name):
            s = copy_site(frames)
            if s:
                yield name, frames, n, s


def test_every_copy_site_in_the_fixtures_is_decided_by_hand():
    seen = {(caller, bufs) for _, _, _, (caller, bufs, _) in copy_stacks()}
    assert seen - set(SITES) == set()
    assert set(SITES) - seen == set()          # no entry left that the fixtures do not hold


@pytest.mark.parametrize("fixture", COPY_FIXTURES)
def test_nio_copy_is_exactly_the_boundary_copies(fixture):
    for name, frames, n, (caller, bufs, in_vm) in copy_stacks():
        if name != fixture:
            continue
        cat = categorize(frames)
        if SITES[(caller, bufs)] and not in_vm:
            assert cat == "nio_copy", (caller, bufs, ";".join(frames[-6:]))
        else:
            assert cat != "nio_copy", (caller, bufs, ";".join(frames[-6:]))


def samples(name, where):
    """nio_copy and other samples of the stacks of a fixture that contain `where`."""
    c = Counter()
    for frames, n in load(name):
        if any(where in f for f in frames):
            c[categorize(frames) == "nio_copy"] += n
    return c[True], c[False]


def test_tomcat_heap_to_heap_transfers_are_not_boundary_copies():
    # the example: SocketWrapperBase.transfer -> HeapByteBuffer.put, 25 samples in the
    # JDK 17 recording (4 stacks: 20 + 3 + 1 + 1), all counted as nio_copy before; now none
    assert samples("tomcat-shop-java17", "SocketWrapperBase.transfer") == (0, 25)
    # the channel's own copies are: IOUtil.write 27 samples (8 + 19) and IOUtil.read 1
    assert samples("tomcat-shop-java17", "sun/nio/ch/IOUtil.write") == (27, 0)
    assert samples("tomcat-shop-java17", "sun/nio/ch/IOUtil.read") == (1, 0)
    r = attribute(load("tomcat-shop-java17"), 1_000_000)
    assert r["categories"]["nio_copy"]["samples"] == 27 + 1
    assert dict(map(tuple, r["top_call_sites"]["nio_copy"])) == {
        "org/apache/tomcat/util/net/NioChannel.write -> sun/nio/ch/SocketChannelImpl.write": 27,
        "org/apache/tomcat/util/net/NioChannel.read -> sun/nio/ch/SocketChannelImpl.read": 1}


def test_direct_buffer_puts_and_gets_cross_char_encoding_does_not():
    # Buffers.java on JDK 25: d.put(a) 228 samples, d.get(a) 220 (ByteBuffer.putArray/getArray on
    # the direct buffer); the String into a HeapCharBuffer and the encoder: none
    assert samples("buffers-java25", "java/nio/ByteBuffer.putArray") == (228, 0)
    assert samples("buffers-java25", "java/nio/ByteBuffer.getArray") == (220, 0)
    assert samples("buffers-java25", "Buffers.charPut")[0] == 0
    assert samples("buffers-java25", "Buffers.encode")[0] == 0
    r = attribute(load("buffers-java25"), 1_000_000)
    assert r["categories"]["nio_copy"]["samples"] == 228 + 220


@pytest.mark.parametrize("frames,cat", [
    (["A.main_[j]", "Java_x", "jni_GetByteArrayRegion", "__memmove_avx_unaligned_erms"], "jni_copy"),
    (["A.main_[j]", "jni_GetByteArrayRegion", "x_[k]"], "jni_copy"),   # a page fault inside the copy
    (["A.main_[j]", "__GI_write", "do_syscall_64_[k]", "_copy_from_iter_[k]"], "kernel_copy"),
    (["A.main_[j]", "__GI_write", "do_syscall_64_[k]", "vfs_write_[k]"], "io_syscall"),
    (["A.main_[j]", "__GI_write"], "io_syscall"),
    (["sun/nio/ch/IOUtil.write_[j]", "java/nio/DirectByteBuffer.put_[i]"], "nio_copy"),
    (["A.main_[j]", "jdk/internal/misc/Unsafe.copyMemory_[j]"], "java"),   # not under NIO
    # a direct buffer named in the frames: crosses whoever calls it
    (["A.main_[j]", "java/nio/DirectByteBuffer.put_[j]", "jdk/internal/misc/Unsafe.copyMemory_[i]"], "nio_copy"),
    (["A.main_[j]", "java/nio/DirectByteBufferR.get_[j]"], "nio_copy"),
    # heap buffers: heap-to-heap unless the channel code calls them
    (["A.main_[j]", "java/nio/HeapByteBuffer.put_[j]", "jbyte_disjoint_arraycopy"], "java"),
    (["sun/nio/cs/StreamEncoder.implWrite_[j]", "java/nio/HeapCharBuffer.put_[j]"], "java"),
    (["sun/nio/ch/IOUtil.read_[j]", "java/nio/HeapByteBuffer.put_[j]", "java/nio/ByteBuffer.putBuffer_[i]"], "nio_copy"),
    # the file-system code copies paths into native buffers with Unsafe directly
    (["sun/nio/fs/NativeBuffers.copyCStringToNativeBuffer_[j]", "jdk/internal/misc/Unsafe.copyMemory_[j]",
      "Unsafe_CopyMemory0"], "nio_copy"),
    # the VM entered from the copy code is not the copy
    (["sun/nio/ch/IOUtil.write_[j]", "java/nio/ByteBuffer.put_[j]", "Runtime1::counter_overflow"], "java"),
    # a page fault in a heap-to-heap copy is kernel time, not a boundary copy
    (["A.main_[j]", "java/nio/HeapByteBuffer.put_[j]", "asm_exc_page_fault_[k]"], "kernel_other"),
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
