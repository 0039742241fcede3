"""async-profiler collapsed stacks -> jvmos categories, sampled times, Java call sites.

A stack is attributed to one category: the first frame, walking from the leaf towards the root,
that names a category (a memmove inside jni_GetByteArrayRegion is a JNI copy; the kernel's
copy_from_iter under a write is a kernel copy). Frames carry async-profiler's annotations:
_[k] kernel, _[j] JIT-compiled Java, _[i] inlined, _[0] interpreted, _[1] C1-compiled.

nio_copy is a copy between the Java heap and native memory, and only that. The frames name the
method, not the buffers it was given, so a candidate copy frame (a buffer's put/get, Unsafe or
ScopedMemoryAccess.copyMemory, Unsafe_CopyMemory0) is judged by the buffer classes on its chain of
java/nio and jdk/internal/misc frames and by the code that called that chain (see boundary_copy).
What the frames cannot tell: the source of a heap buffer's put(ByteBuffer) called by code other
than the JDK's channels (counted as heap-to-heap, though it may be a direct buffer), a
direct-to-direct copy (counted as crossing), and the caller of a stack truncated inside the chain
(then only a direct buffer named on the chain makes it a boundary copy).
"""
import math
import re
from collections import Counter, defaultdict
from typing import Dict, Iterable, List, Optional, Tuple

JAVA_SUFFIX = re.compile(r"_\[(j|i|0|1)\]$")
KERNEL_SUFFIX = "_[k]"

# (category, pattern on the frame without its annotation), first match from the leaf wins
RULES: List[Tuple[str, re.Pattern]] = [
    ("kernel_copy", re.compile(r"^(_?copy_(from|to)_(user|iter)|_copy_(from|to)_iter|"
                               r"copy_page_(from|to)_iter|rep_movs_alternative|"
                               r"copy_user_\w+|simple_copy_to_iter|skb_copy_datagram_iter|"
                               r"copyin|copyout)$")),
    ("jni_copy", re.compile(r"^(checked_)?jni_(Get|Set|Release)\w*(ArrayRegion|ArrayElements|"
                            r"ArrayCritical|StringRegion|StringUTFRegion|StringChars|"
                            r"StringUTFChars)$")),
    # a candidate only: boundary_copy() decides whether it crosses between heap and native memory
    ("nio_copy", re.compile(r"^(Unsafe_Copy(Swap)?Memory0|"
                            r"jdk/internal/misc/(Unsafe|ScopedMemoryAccess)\.copy(Swap)?Memory\w*|"
                            r"java/nio/Bits\.copy\w*|java/nio/\w*Buffer\w*\.(put|get)\w*)$")),
    ("malloc", re.compile(r"^(__libc_)?(malloc|calloc|realloc|free|posix_memalign|aligned_alloc|"
                          r"memalign|_int_malloc|_int_free|malloc_consolidate)$")),
    ("thread_create", re.compile(r"^(pthread_create\S*|__clone\d*|clone\d*|JVM_StartThread|"
                                 r"os::create_thread)$")),
]
# a kernel stack below one of these user frames is I/O syscall time; otherwise kernel_other
SYSCALL_WRAPPER = re.compile(r"^(__GI_|__libc_|__)?(write|read|pwrite64|pread64|writev|readv|"
                             r"send|recv|sendto|recvfrom|sendmsg|recvmsg|sendfile64?)$")
JDK_PACKAGES = ("java/", "javax/", "jdk/", "sun/", "com/sun/")


def strip(frame: str) -> str:
    if frame.endswith(KERNEL_SUFFIX):
        return frame[: -len(KERNEL_SUFFIX)]
    return JAVA_SUFFIX.sub("", frame)


def is_java(frame: str) -> bool:
    return bool(JAVA_SUFFIX.search(frame))


# the buffer machinery a copy runs in: the chain of frames between the copy and its caller
NIO_CHAIN = ("java/nio/", "jdk/internal/misc/", "Unsafe_")
# classes whose memory is native (MappedByteBuffer's only subclasses are the direct buffers)
NATIVE_BUFFER = re.compile(r"^java/nio/(Direct\w*Buffer\w*|MappedByteBuffer)\.")
HEAP_BUFFER = re.compile(r"^java/nio/Heap\w*Buffer\w*\.")
# X-Buffer's own bulk paths, which a heap buffer never takes (it overrides the public bulk put/get
# with System.arraycopy and put(buffer) with a HeapXBuffer.put frame): with no HeapXBuffer frame
# on the chain, the buffer they fill or drain is a direct one
NON_HEAP_PATH = re.compile(r"^java/nio/[A-Z][a-z]+Buffer\.(putArray|getArray|putBuffer)$")
# the JDK's channel code moves data only between the caller's buffer and a temporary direct
# buffer (sun.nio.ch.Util.getTemporaryDirectBuffer), and its file-system code copies into native
# buffers (sun.nio.fs.NativeBuffers): a buffer copy they call crosses the boundary
NATIVE_CALLERS = ("sun/nio/ch/", "sun/nio/fs/")
# the VM entered from a copy frame (JIT counters, compilation, deoptimisation) is not the copy
VM_RUNTIME = re.compile(r"^(Runtime1|SharedRuntime|InterpreterRuntime|OptoRuntime|"
                        r"CompilationPolicy|CompileBroker|Deoptimization)::")


def nio_chain(frames: List[str], i: int) -> int:
    """Index of the root-most frame of the buffer chain that frames[i] belongs to."""
    j = i
    while j > 0 and strip(frames[j - 1]).startswith(NIO_CHAIN):
        j -= 1
    return j


def boundary_copy(frames: List[str], i: int) -> bool:
    """Does the candidate copy frame frames[i] copy between the heap and native memory?
    - a direct (or mapped) buffer on the chain: one side is native memory;
    - a heap buffer on the chain: native only when the JDK's channel code called it (IOUtil.read
      puts the temporary direct buffer into the caller's heap buffer); otherwise heap-to-heap
      (HeapByteBuffer.put(byte[]), Tomcat's SocketWrapperBase.transfer, a charset encoder
      growing its output, a String put into a HeapCharBuffer);
    - ByteBuffer.putArray/getArray/putBuffer without a heap buffer: a direct buffer's bulk
      put/get (DirectByteBuffer inherits them; the frames then name only ByteBuffer);
    - anything else (ByteBuffer.put's own checks, Unsafe.copyMemory): by the caller.
    See the module's docstring for what the frames cannot tell.
    """
    if any(VM_RUNTIME.match(strip(f)) for f in frames[i + 1:]):
        return False
    j = nio_chain(frames, i)
    chain = [strip(f) for f in frames[j:i + 1]]
    if any(NATIVE_BUFFER.match(f) for f in chain):
        return True
    caller = strip(frames[j - 1]) if j > 0 else ""
    if any(HEAP_BUFFER.match(f) for f in chain):
        return caller.startswith("sun/nio/ch/")
    if any(NON_HEAP_PATH.match(f) for f in chain):
        return True
    return caller.startswith(NATIVE_CALLERS)


def categorize(frames: List[str]) -> str:
    """frames root first, as in the collapsed format."""
    i = len(frames) - 1
    while i >= 0:
        name = strip(frames[i])
        for cat, rx in RULES:
            if rx.match(name):
                if cat == "nio_copy" and not boundary_copy(frames, i):
                    i = nio_chain(frames, i)        # the rest of the chain is the same copy
                    break
                return cat
        i -= 1
    if any(f.endswith(KERNEL_SUFFIX) for f in frames) or \
            (frames and SYSCALL_WRAPPER.match(strip(frames[-1]))):
        if any(SYSCALL_WRAPPER.match(strip(f)) for f in frames):
            return "io_syscall"
        return "kernel_other"
    if any(is_java(f) for f in frames):
        return "java"
    return "jvm"


def call_site(frames: List[str]) -> Optional[str]:
    """'app frame -> JDK API frame': the innermost application Java frame and the JDK frame it
    called, i.e. which code of the program caused the crossing."""
    java = [strip(f) for f in frames if is_java(f)]
    if not java:
        return None
    app = [i for i, f in enumerate(java) if not f.startswith(JDK_PACKAGES)]
    if not app:
        return java[0]
    i = app[-1]
    return java[i] + (f" -> {java[i + 1]}" if i + 1 < len(java) else "")


class BadLine(ValueError):
    """A line that is not 'frame;...;frame COUNT' (strict parsing): .number is its line number."""

    def __init__(self, number: int, line: str):
        super().__init__(f"line {number}: {line[:80]!r}")
        self.number, self.line = number, line


def parse_collapsed(lines: Iterable[str], strict: bool = False) -> List[Tuple[List[str], int]]:
    """(frames, count) per line. A line without an integer count is skipped; strict: a line
    without a count > 0 or without a frame raises BadLine instead."""
    out = []
    for number, line in enumerate(lines, 1):
        line = line.rstrip("\n")
        if not line.strip():
            continue
        stack, _, n = line.rpartition(" ")
        if strict and (not n.isdigit() or int(n) == 0 or not any(stack.split(";"))):
            raise BadLine(number, line)
        try:
            count = int(n)
        except ValueError:
            continue
        out.append((stack.split(";"), count))
    return out


def attribute(stacks: List[Tuple[List[str], int]], interval_ns: int, top: int = 5) -> dict:
    """Samples and time per category with a 95% sampling error (Poisson: 1.96 sqrt(n))."""
    cats: Counter = Counter()
    sites: Dict[str, Counter] = defaultdict(Counter)
    for frames, n in stacks:
        c = categorize(frames)
        cats[c] += n
        s = call_site(frames)
        if s:
            sites[c][s] += n
    total = sum(cats.values())
    return {
        "samples_total": total,
        "interval_ns": interval_ns,
        "categories": {c: {"samples": n, "share_pct": 100.0 * n / total if total else 0.0,
                           "time_ns": n * interval_ns,
                           "time_err95_ns": 1.96 * math.sqrt(n) * interval_ns}
                       for c, n in cats.most_common()},
        "top_call_sites": {c: [[s, n] for s, n in sites[c].most_common(top)] for c in cats},
    }


# ---------------------------------------------------------------- waits (--sample --wall)

# a waiting thread's innermost native frame (libc's wrapper of the syscall it blocks in,
# after its __GI_/__libc_/__ prefixes) or Java frame, and the syscall that stands for it;
# the boundary is then the off-CPU table's (analyzers/threads.OFFCPU_BOUNDARY)
_WAIT_NATIVE = [
    (re.compile(r"futex|pthread_cond_(timed)?wait|sem_(timed)?wait|pthread_mutex_lock"), "futex"),
    (re.compile(r"^(clock_)?nanosleep$|^usleep$|^sleep$"), "clock_nanosleep"),
    (re.compile(r"^(e?poll|epoll_wait|epoll_pwait2?|ppoll|p?select6?|select)$"), "poll"),
    (re.compile(r"^accept4?$"), "accept"),
    (re.compile(r"^connect$"), "connect"),
    (re.compile(r"^(read|recv|recvfrom|recvmsg|readv|pread64|write|send|sendto|sendmsg|"
                r"writev|pwrite64)$"), "read"),
    (re.compile(r"^(open|openat64|openat|close|fsync|fdatasync)$"), "openat"),
    (re.compile(r"^(waitpid|wait4|waitid)$"), "wait4"),
]
# (HotSpot's Thread.sleep parks on a futex: it is named by its libc frame, never by its Java
# one, so that the boundary is the syscall's, as in the off-CPU table)
_WAIT_JAVA = [
    (re.compile(r"^(jdk/internal/misc/Unsafe\.park|java/lang/Object\.wait|"
                r"java/util/concurrent/locks/LockSupport\.park)"), "futex"),
    (re.compile(r"^sun/nio/ch/Net\.(poll|accept|connect0)$"), None),     # resolved below
    (re.compile(r"^sun/nio/ch/(SocketDispatcher|FileDispatcherImpl|IOUtil)\.(read|write)"),
     "read"),
]
_NIO_NET = {"poll": "poll", "accept": "accept", "connect0": "connect"}
WAITS_BASIS = ("async-profiler's wall-clock samples (every {ms:g} ms, a bounded number of "
               "threads per tick: 16 by default) of threads in the state 'sleeping' (not on "
               "a CPU: blocked in a syscall, parked, waiting); the boundary from the innermost "
               "libc wrapper or JDK frame of the stack, the call site as for CPU samples; "
               "stacks without an application frame (the JVM's and the JDK's threads, and an "
               "application's idle pool workers) counted apart. Shares of the sampled waiting, "
               "not a time: the off-CPU table has the time. The ± is 1.96 sqrt(n), which "
               "assumes independent samples: consecutive ticks of one long wait are not, so it "
               "is too narrow for long waits")


def wait_syscall(frames: List[str]) -> Optional[str]:
    """The syscall a waiting stack blocks in (as off-CPU names it), None when the stack
    says nothing of it."""
    for f in reversed(frames):
        if f.endswith(KERNEL_SUFFIX):
            continue
        name = strip(f)
        if is_java(f):
            for rx, sysname in _WAIT_JAVA:
                m = rx.match(name)
                if m:
                    if sysname is None:
                        return _NIO_NET.get(m.group(1))
                    return sysname
            continue
        bare = name
        while True:     # __GI___libc_read -> read
            shorter = re.sub(r"^(__GI_+|_*libc_|__)", "", bare)
            if shorter == bare:
                break
            bare = shorter
        for rx, sysname in _WAIT_NATIVE:
            if rx.search(bare) if sysname == "futex" else rx.match(bare):
                return sysname
    return None


def attribute_waits(stacks: List[Tuple[List[str], int]], interval_ns: int, top: int = 10) -> dict:
    """Wall samples of waiting threads by off-CPU boundary, with each boundary's Java call
    sites (samples, share of the waiting samples, a 95% Poisson error on the samples)."""
    from jvmos.analyzers.threads import _BOUNDARY_OF      # the off-CPU table's names
    by: Counter = Counter()
    internal: Counter = Counter()
    sites: Dict[str, Counter] = defaultdict(Counter)
    for frames, n in stacks:
        sysname = wait_syscall(frames)
        b = _BOUNDARY_OF.get(sysname, "other or unknown") if sysname else "other or unknown"
        by[b] += n
        if any(is_java(f) and not strip(f).startswith(JDK_PACKAGES) for f in frames):
            sites[b][call_site(frames)] += n
        else:   # the JVM's own threads and the JDK's (GC, compiler, reference handler...)
            internal[b] += n
    total = sum(by.values())
    return {
        "samples_total": total,
        "interval_ns": interval_ns,
        "basis": WAITS_BASIS.format(ms=interval_ns / 1e6),
        "by_boundary": {b: {"samples": n, "share_pct": 100.0 * n / total if total else 0.0,
                            "samples_err95": 1.96 * math.sqrt(n),
                            "no_application_frame_samples": internal[b],
                            "top_call_sites": [[s, k] for s, k in sites[b].most_common(top)]}
                        for b, n in by.most_common()},
    }
