"""async-profiler collapsed stacks -> jvmos categories, sampled times, Java call sites.

A stack is attributed to one category: the first frame, walking from the leaf towards the root,
that names a category (a memmove inside jni_GetByteArrayRegion is a JNI copy; the kernel's
copy_from_iter under a write is a kernel copy). Frames carry async-profiler's annotations:
_[k] kernel, _[j] JIT-compiled Java, _[i] inlined, _[0] interpreted, _[1] C1-compiled.
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
    ("nio_copy", re.compile(r"^(Unsafe_CopyMemory0|jdk/internal/misc/Unsafe\.copyMemory\w*|"
                            r"jdk/internal/misc/ScopedMemoryAccess\.copyMemory\w*|"
                            r"java/nio/Direct\w*Buffer\.put\w*|java/nio/Heap\w*Buffer\.put\w*)$")),
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


def categorize(frames: List[str]) -> str:
    """frames root first, as in the collapsed format."""
    for f in reversed(frames):
        name = strip(f)
        for cat, rx in RULES:
            if rx.match(name):
                if cat == "nio_copy" and not any(strip(x).startswith(("sun/nio/", "java/nio/"))
                                                 for x in frames):
                    continue
                return cat
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


def parse_collapsed(lines: Iterable[str]) -> List[Tuple[List[str], int]]:
    out = []
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            continue
        stack, _, n = line.rpartition(" ")
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
