"""One catalogue of what belongs where: recording modes, layers (what they probe, what they
measure, what they cost), categories and their symbols, the per-JDK spellings of a probe point,
and the maps the probes' output is read as.

The engine's layer plans (jvmos/enginelayers), the recorder and the analyzers all read this, so
a new JDK or layer is one edit here; tests/unit/test_engine_catalogue.py checks the plans and
the probes/*.bpf.c programs against it, and `jvmos record -h` and the README's layer table are
written from it (tests/unit/test_catalogue.py keeps the README's equal).
"""
from dataclasses import dataclass, field
from enum import Enum
from typing import Dict, Tuple


class Mode(str, Enum):
    """How a recording measures (`jvmos record --mode`), from most to least intrusive. A str:
    it compares, formats and is written to JSON as its value ("time")."""
    TIME = "time"       # entry and return probes: times measured, minus the probe windows
    COUNT = "count"     # entry probes only: exact calls and bytes, copy times from a model
    SAMPLE = "sample"   # no BPF probe: async-profiler's CPU samples

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec) -> str:
        return format(self.value, spec)

    @classmethod
    def parse(cls, text) -> "Mode":
        """The one validation of a mode, wherever it comes from (command line, Options)."""
        from jvmos import JvmosError
        try:
            return cls(text)
        except ValueError:
            raise JvmosError(f"unknown mode '{text}' (known: {', '.join(m.value for m in cls)})")


@dataclass(frozen=True)
class Layer:
    """One layer of `jvmos record --layers`: what it measures and what it costs the traced
    processes, and what its probes attach to (checked against the engine's plans by the
    tests): syscalls traced by sys_enter/sys_exit tracepoint pairs, other tracepoints, and the
    symbols probed per library (LIBC, LIBJVM, LIBNIO, LIBZ; one spelling per JDK where they
    differ)."""
    name: str
    measures: str
    cost: str
    syscalls: Tuple[str, ...] = ()
    tracepoints: Tuple[str, ...] = ()
    symbols: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    # its spans need return probes: in count mode its times are partial (counts stay exact)
    timed_spans: bool = False


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

# libnio natives that issue I/O for NIO channels (the NIO path of Table 2), per JDK spelling:
# FileDispatcherImpl up to JDK 20, UnixFileDispatcherImpl from JDK 21 (a JDK has one of the
# two; the other is missing, and not a partial recording)
_FILE_NATIVES = ("read0", "readv0", "pread0", "write0", "writev0", "pwrite0")
NIO_DISPATCHERS = {"FileDispatcherImpl": _FILE_NATIVES,
                   "UnixFileDispatcherImpl": _FILE_NATIVES,
                   "SocketDispatcher": ("read0", "readv0", "write0", "writev0"),
                   "DatagramDispatcher": ("read0", "readv0", "write0", "writev0"),
                   "DatagramChannelImpl": ("send0", "receive0")}
NIO_NATIVES = tuple(f"Java_sun_nio_ch_{cls}_{fn}" for cls, fns in NIO_DISPATCHERS.items()
                    for fn in fns)
# symbols whose absence is a JDK's other spelling, not a probe lost
OPTIONAL_SYMBOL_PREFIXES = ("Java_sun_nio_ch_",)
# libc's wrappers of the I/O syscalls, probed instead of the syscall tracepoints at
# --scope process (an enabled syscall tracepoint slows every process on the host)
IO_LIBC_WRAPPERS = ("read", "write", "pread64", "pwrite64", "readv", "writev", "send", "sendto",
                    "recv", "recvfrom", "sendmsg", "recvmsg", "sendfile")
# the syscall each of those wrappers makes, where its name differs
IO_SYSCALL_OF_WRAPPER = {"send": "sendto", "recv": "recvfrom", "sendfile64": "sendfile"}
MEM_ALLOCATOR = ("malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc", "memalign")
MEM_SYSCALLS = ("brk", "mmap", "munmap", "mprotect", "madvise")
# the libc calls of the memory syscalls probed at --scope process (brk is reached through sbrk)
MEM_LIBC_WRAPPERS = ("mmap", "munmap", "mprotect", "madvise", "sbrk")
# zlib's functions that create a stream (java.util.zip.Inflater and Deflater each create
# one): counted by the mem layer. inflateInit_ and deflateInit_ are wrappers that call
# inflateInit2_ and deflateInit2_ (zlib 1.2.13's libz.so.1 and Temurin 25's libzip.so,
# disassembled), so a stream is counted once, at its *Init2_ call.
ZLIB_INITS = ("inflateInit2_", "inflateInit_", "deflateInit2_", "deflateInit_")
ZLIB_STREAM_INITS = {"inflate": "inflateInit2_", "deflate": "deflateInit2_"}
THREAD_SYMBOLS = {"@LIBC@": ("pthread_create",),
                  "@LIBJVM@": ("JVM_StartThread", "_ZL19thread_native_entryP6Thread",
                               "_ZN10JavaThread4exitEbNS_8ExitTypeE")}
# syscalls a thread makes while it is created and starts: timed as part of its creation
THREAD_SPAN_SYSCALLS = ("clone", "clone3", "mmap", "munmap", "mprotect", "madvise", "prctl",
                        "rseq", "rt_sigprocmask", "sched_getaffinity", "set_robust_list",
                        "gettid", "exit")
# --scope process: the libc functions that stand in for those syscalls' tracepoints
# (threads.bpf.c's thr_clone_libc, thr_span_libc, thr_futex_libc). Only functions whose probe
# site the kernel emulates (glibc 2.36, x86-64, placed by the engine): a single-stepped site
# (munmap, mprotect, madvise, prctl, gettid: `mov $nr,%eax; syscall`) costs about 10 us a hit,
# paid on every call of the process, and the single step falls inside the timed span. glibc's
# __clone3 and __futex_abstimed_wait_common are local functions, named only in its separate
# debug file (Debian's libc6-dbg, found by build id); without it they are missing from the
# plan, and said so.
THREAD_LIBC_CLONE = ("__clone3", "clone")
THREAD_LIBC_SPAN = ("mmap",)
# name -> the futex operation its call stands for (threads.bpf.c's FUTEX_*_OP: 1 wait).
# Left out: every wake (the condition variables' and semaphores' are inline syscalls, the
# contended mutexes' __lll_lock_wake is single-stepped), and pthread mutexes' contended wait
# __lll_lock_wait (single-stepped)
THREAD_LIBC_FUTEX = {"__futex_abstimed_wait_common": 1, "__lll_lock_wait_private": 1}
THREAD_BLIND_SPOTS = (
    "thread creation: only clone3, clone and mmap are timed as kernel work inside a thread's "
    "spans; the other syscalls there (mprotect, munmap, madvise, prctl, sched_getaffinity and "
    "gettid, whose libc wrappers the kernel would single-step, and rseq, set_robust_list and "
    "rt_sigprocmask, which glibc makes inline) count as libc time; a thread's exit is seen at "
    "the kernel's sched_process_exit, so the start of do_exit (exit_signals, exit_mm) counts "
    "as libc exit. sync: only the futex waits of glibc's condition variables, semaphores and "
    "joins (__futex_abstimed_wait_common: one syscall a call) and of its internal locks "
    "(__lll_lock_wait_private) are seen; not seen: a contended pthread mutex's wait "
    "(__lll_lock_wait, single-stepped), every futex wake, and futexes made with syscall(2) "
    "(HotSpot's safepoint barrier, LinuxWaitBarrier). Without libc6-dbg's debug file, clone3 "
    "and the condition variables' waits are not seen at all (listed as missing). With the "
    "mem layer on, mmap carries both layers' programs, and each layer's time of it includes "
    "part of the other's")
LINK_SYSCALLS = ("accept", "accept4", "connect", "open", "openat", "openat2", "close")
# libc's functions that make each links syscall (--scope process), the syscall's own wrapper
# first: aliases at one address are probed once under the first name; glibc's internal
# __open_nocancel and __close_nocancel (fopen, fclose, opendir, NSS, sysconf) are separate
# code, exported GLIBC_PRIVATE, and probed as the syscall they make (probelist.LIBC_STANDS_FOR).
# The fortified __open_2 and __openat_2 jump into open and openat and are seen there.
# openat2 has no wrapper in glibc 2.36: at --scope process it is not seen.
LINK_LIBC_WRAPPERS = {"accept": ("accept",), "accept4": ("accept4",),
                      "connect": ("connect", "__connect"),
                      "open": ("open", "open64", "__open_nocancel", "__open64_nocancel"),
                      "openat": ("openat", "openat64"),
                      "close": ("close", "__close", "__close_nocancel")}
# what a category's time is: on-CPU (the probes' span less the time switched out, or an
# estimate of CPU), an entry-to-return span with blocking included, or waiting
WAITING_CATEGORIES = ("runq", "thread_wait")
SPAN_CATEGORIES = ("io_syscall", "sync")


def time_kind(name: str) -> str:
    if name in WAITING_CATEGORIES:
        return "waiting"
    if name in SPAN_CATEGORIES:
        return "span (blocking included)"
    return "on-CPU"


# libc functions probed under another name than the syscall they make: read as that syscall
LIBC_STANDS_FOR = {"__open_nocancel": "open", "__open64_nocancel": "open",
                   "__close_nocancel": "close", "__close": "close", "__connect": "connect",
                   "__clone3": "clone3"}
# what a libc wrapper cannot see, said in the manifest and the report (--scope process)
LINK_BLIND_SPOTS = ("the dynamic loader's own open and close (dlopen of a library: ld.so "
                    "makes them without libc), openat2 (no glibc wrapper), and any raw "
                    "syscall(2); a non-blocking connect's EINPROGRESS is counted as failed "
                    "(libc returns -1 and leaves the cause in errno); a call already in "
                    "progress when counting began (a blocking accept, say) has no return "
                    "probe: with --pid it is found in the kernel's /proc/TID/syscall and, if "
                    "it ended during the recording, counted untimed, its outcome not seen")

_LAYERS = [
    Layer("io",
          "JNI and NIO copies between the Java heap and native memory, I/O syscalls and the "
          "bytes the kernel copied",
          "a uprobe per JNI copy in --mode count (≈0.8 µs a hit), an entry+return pair in "
          "--mode time (≈1.7 µs); an entry+return pair per libc I/O call in both modes (≈1.5 "
          "µs; a syscall tracepoint pair at --scope host, ≈0.55 µs); on the 2-core reference VM: "
          "jvmos calibrate --probes measures yours",
          syscalls=tuple(IO_SYSCALLS),
          symbols={"@LIBJVM@": tuple(f"jni_{f}" for f in JNI_COPY_FUNCTIONS)
                   + ("Unsafe_CopyMemory0",),
                   "@LIBNIO@": NIO_NATIVES, "@LIBC@": IO_LIBC_WRAPPERS}),
    Layer("jni",
          "the census: every call of every JNI entry point of libjvm.so",
          "a uprobe on each of ~240 JNI entry points (attached in a fraction of a second) and "
          "a hit (≈0.8 µs) per JNI call: slows JNI-heavy code",
          symbols={"@LIBJVM@": ("@JNI_ENTRY_POINTS@",)}),
    Layer("threads",
          "native thread creation and exit: libc, kernel and the JVM's part; futex waits, "
          "context switches and run-queue wait",
          "4 uprobe pairs per thread created; at --scope process no syscall tracepoint: an "
          "entry+return pair on glibc's function per futex wait of a condition variable or "
          "semaphore (≈1.5 µs) and, in --mode time, per clone and mmap call; at --scope "
          "host a "
          "syscall tracepoint pair (≈0.5 µs) per thread-related syscall and futex, and the "
          "host-wide tax of enabled syscall tracepoints; sched_switch, sched_wakeup and "
          "sched_process_exit at both; times need --mode time",
          syscalls=THREAD_SPAN_SYSCALLS + ("futex",),
          tracepoints=("sched:sched_switch", "sched:sched_wakeup", "sched:sched_wakeup_new",
                       "sched:sched_process_free", "sched:sched_process_exit"),
          symbols={**THREAD_SYMBOLS,
                   "@LIBC@": THREAD_SYMBOLS["@LIBC@"] + THREAD_LIBC_CLONE + THREAD_LIBC_SPAN
                   + tuple(THREAD_LIBC_FUTEX)},
          timed_spans=True),
    Layer("links",
          "accept, connect, open and close: the paper's C_link and C_file",
          "an entry+return pair on libc's wrapper per accept/connect/open/close (≈1.5 µs; "
          "no syscall tracepoint at --scope process), and sched_switch; at --scope host a "
          "syscall tracepoint pair (≈0.5 µs) and the host-wide tax of enabled syscall "
          "tracepoints",
          syscalls=LINK_SYSCALLS, tracepoints=("sched:sched_switch",),
          symbols={"@LIBC@": tuple(s for names in LINK_LIBC_WRAPPERS.values()
                                   for s in names)}),
    Layer("mem",
          "the libc allocator, the kernel's memory syscalls, user page faults and the zlib "
          "streams created",
          "a uprobe pair per allocator call and per memory call (≈1.7 µs; ≈0.9 µs for an "
          "allocator call in --mode count; libc's wrappers at --scope process, syscall "
          "tracepoints at --scope host), a tracepoint per page fault (≈0.2 µs; the faults are "
          "counted per 2 MiB region, and those in the Java heap, whose range jcmd reads after "
          "counting stops, are reported apart), a uprobe per zlib stream created (counted "
          "only): the costliest layer per call",
          syscalls=MEM_SYSCALLS,
          tracepoints=("exceptions:page_fault_user", "sched:sched_switch",
                       "sched:sched_process_exec", "sched:sched_process_free"),
          symbols={"@LIBC@": MEM_ALLOCATOR + MEM_LIBC_WRAPPERS, "@LIBZ@": ZLIB_INITS}),
]
LAYER_INFO: Dict[str, Layer] = {layer.name: layer for layer in _LAYERS}
# the layers, in the order `jvmos record -h` lists them
LAYERS = tuple(LAYER_INFO)
DEFAULT_LAYERS = ["io"]
# layers whose times need --mode time: count mode drops the return probes that close their spans
TIMED_SPAN_LAYERS = [name for name, layer in LAYER_INFO.items() if layer.timed_spans]


def layers_help() -> str:
    """`--layers` help: every layer, what it measures and costs."""
    return ("comma-separated layers (default " + ",".join(DEFAULT_LAYERS) + "): "
            + "; ".join(f"{l.name}: {l.measures} (cost: {l.cost})" for l in _LAYERS))


def layers_markdown() -> str:
    """The README's layer table (tests/unit/test_catalogue.py keeps them equal)."""
    rows = ["| layer | measures | costs the traced processes |", "|---|---|---|"]
    rows += [f"| `{l.name}`{' (default)' if l.name in DEFAULT_LAYERS else ''} | {l.measures} "
             f"| {l.cost} |" for l in _LAYERS]
    return "\n".join(rows)


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
    "runq": "run-queue wait: a traced thread runnable (woken, or preempted) but not running, "
            "until the scheduler runs it (waiting, not work)",
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
