"""One catalogue of what belongs where: layers, probe scripts, categories and their symbols.

Probes (probes/*.bt) and analyzers both read this, so a new JDK or layer is one edit here.
"""

# layer name -> probe scripts loaded for it (common.bt is always loaded first)
LAYERS = {
    "io": ["io.bt"],
    "jni": ["jni.bt"],
    "threads": ["threads.bt"],
    "links": ["links.bt"],
    "mem": ["mem.bt"],
}
DEFAULT_LAYERS = ["io"]
# layers whose times need --mode time: count mode drops the return probes that close their spans
TIMED_SPAN_LAYERS = ["threads"]

PRIMITIVES = {"Boolean": 1, "Byte": 1, "Char": 2, "Short": 2,
              "Int": 4, "Float": 4, "Long": 8, "Double": 8}

# The JNI functions that copy between the Java heap and native memory (paper section 3).
JNI_COPY_FUNCTIONS = sorted(
    [f"Get{t}ArrayRegion" for t in PRIMITIVES]
    + [f"Set{t}ArrayRegion" for t in PRIMITIVES]
    + [f"Get{t}ArrayElements" for t in PRIMITIVES]
    + [f"Release{t}ArrayElements" for t in PRIMITIVES]
    + ["GetPrimitiveArrayCritical", "ReleasePrimitiveArrayCritical",
       "GetStringRegion", "GetStringUTFRegion", "GetStringChars", "GetStringUTFChars"])

# JNI functions whose arguments give the number of bytes copied.
JNI_BYTES_FROM_ARGS = {f for f in JNI_COPY_FUNCTIONS if f.endswith("Region")}

IO_SYSCALLS = ["read", "write", "pread64", "pwrite64", "readv", "writev", "sendto",
               "recvfrom", "sendmsg", "recvmsg", "sendfile64"]
# direction of the user/kernel copy each syscall implies (sendfile copies kernel to kernel)
SYSCALL_DIRECTION = {"write": "in", "pwrite64": "in", "writev": "in", "sendto": "in",
                     "sendmsg": "in", "read": "out", "pread64": "out", "readv": "out",
                     "recvfrom": "out", "recvmsg": "out", "sendfile64": None}

# Categories reported in summary.json, in table order, with what they are.
CATEGORIES = {
    "jni_copy": "JNI functions copying between the Java heap and native memory (libjvm.so)",
    "nio_copy": "heap <-> temporary direct buffer copies of java.net.Socket and NIO I/O",
    "io_syscall": "I/O system calls (read, write, ...), time includes blocking",
    "kernel_copy": "kernel copyin/copyout of the bytes the I/O syscalls moved",
    "jni_call": "every JNI entry point of libjvm.so (census layer)",
    "thread_create": "native thread creation and exit: libc (pthread_create, start_thread) "
                     "and kernel (clone3, stack syscalls, exit)",
    "thread_jvm": "the JVM's part of starting and ending a Java thread (JVM_StartThread, "
                  "JavaThread::exit), reported beside thread_create for the ratio",
    "thread_wait": "waiting while a thread is created: delay until the new thread first "
                   "runs, futex waits for it (not work of any layer)",
    "sync": "native synchronization: futex wait/wake syscalls (time includes blocking)",
    "link": "establishing network links: accept, accept4, connect",
    "file": "opening and closing files: open, openat, openat2, close",
    "malloc": "libc allocator: malloc, calloc, realloc, free, posix_memalign, aligned_alloc, "
              "memalign (the calls the probes saw; free is not probed)",
    "free_estimated": "libc free, not probed: one free per block allocated, x the calibrated "
                      "cost of one free (calls and time estimated)",
    "vm": "kernel memory services: brk, mmap, munmap, mprotect, madvise, user page faults",
}
# The categories that make up the guaranteed overhead of I/O (paper section 3.1.1):
# copying in the JNI/NIO layer and in the kernel; syscall time itself is not (it blocks).
GUARANTEED_IO = ["jni_copy", "nio_copy", "kernel_copy"]
# ... of threads (section 3.2.1): the native part of creating and ending threads
GUARANTEED_THREADS = ["thread_create"]
# ... of memory (section 3.3): the libc allocator and the kernel's memory services
GUARANTEED_MEM = ["malloc", "free_estimated", "vm"]
# ... of links (section 4: C_link, C_file are terms of C_os): accept/connect, open/close
GUARANTEED_LINKS = ["link", "file"]
# every category in the guaranteed overhead, by resource (paper equation 1: a sum)
GUARANTEED = {"io": GUARANTEED_IO, "threads": GUARANTEED_THREADS, "mem": GUARANTEED_MEM,
              "links": GUARANTEED_LINKS}


def is_jni_entry_point(symbol: str) -> bool:
    """jni_GetVersion yes, jni_invoke_static no: entry points are CamelCase after jni_."""
    return symbol.startswith("jni_") and len(symbol) > 4 and symbol[4].isupper()


# ---- Per-JDK spellings of one probe point: a symbol, or HotSpot's USDT probe of it ----
# HotSpot builds with DTrace probes (Debian's OpenJDK 17, Temurin 25) carry, in the ELF note
# section .note.stapsdt, provider hotspot_jni with <Function>__entry and <Function>__return for
# every JNI function (arguments as the function's own: GetByteArrayRegion__entry(env, array,
# start, len, buf)). Notes survive `strip`, symbols do not. A __return probe is a plain probe at
# an instruction before the function returns (no uretprobe). The invocation API (JNI_*)
# has probes too but was never part of the JNI census (which is jni_* entry points).
JNI_USDT_PROVIDER = "hotspot_jni"
JNI_USDT_SUFFIX = {"uprobe": "__entry", "uretprobe": "__return"}
JNI_USDT_NOT_ENTRY_POINTS = {"CreateJavaVM", "GetCreatedJavaVMs", "GetDefaultJavaVMInitArgs"}


def jni_usdt_alias(kind: str, symbol: str):
    """('uprobe', 'jni_GetByteArrayRegion') -> ('hotspot_jni', 'GetByteArrayRegion__entry');
    None for a symbol that is not a JNI entry point."""
    if kind not in JNI_USDT_SUFFIX or not is_jni_entry_point(symbol):
        return None
    return JNI_USDT_PROVIDER, symbol[4:] + JNI_USDT_SUFFIX[kind]


def jni_symbol_of_usdt(provider: str, name: str):
    """('hotspot_jni', 'GetByteArrayRegion__entry') -> ('uprobe', 'jni_GetByteArrayRegion'):
    the kind of symbol probe it stands for and the symbol; None when it stands for none."""
    if provider != JNI_USDT_PROVIDER:
        return None
    for kind, suffix in JNI_USDT_SUFFIX.items():
        if name.endswith(suffix):
            fn = name[: -len(suffix)]
            if fn and fn[0].isupper() and fn not in JNI_USDT_NOT_ENTRY_POINTS:
                return kind, "jni_" + fn
    return None
