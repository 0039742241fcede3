"""`jvmos doctor`: what jvmos needs, and whether this machine has it."""
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import List, Tuple

from jvmos import ROOT
from jvmos.jdk import debug_file_of, discover_jdks, libc_of, maps_of, symbols
from jvmos.tools import C_BUILD, IO_JAR, TOMCAT_JAR

# the symbols without which the io layer loses a category (others only lose detail)
REQUIRED_JVM_SYMBOLS = ["jni_GetByteArrayRegion", "jni_SetByteArrayRegion", "Unsafe_CopyMemory0"]
# ... and the threads layer's (the other layers probe tracepoints and libc)
THREAD_JVM_SYMBOLS = ["JVM_StartThread", "_ZL19thread_native_entryP6Thread",
                      "_ZN10JavaThread4exitEbNS_8ExitTypeE"]
LIBC_SYMBOLS = ["pthread_create", "malloc", "calloc", "realloc"]
ASYNC_PROFILER_DIR = ROOT / "build" / "async-profiler"


def _bt(prog: str, timeout=60) -> Tuple[bool, str]:
    bt = shutil.which("bpftrace")
    if not bt:
        return False, "bpftrace not on PATH"
    try:
        r = subprocess.run([bt, "-e", prog], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, "bpftrace timed out"
    errs = [l for l in r.stderr.splitlines() if "ERROR" in l and "RLIMIT_MEMLOCK" not in l]
    if r.returncode != 0 or errs:
        return False, (errs or r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[0]
    return True, r.stdout.strip()


def _engine_rows(add, root: bool) -> None:
    """The compiled engine, jvmos's only probe engine: clang to build its programs, the
    kernel's BTF for their CO-RE reads, the engine built (failures: without them nothing is
    recorded but --mode sample), and uprobe_multi links (a warning: without them the engine
    opens classic per-pid uprobes, slower to detach)."""
    import json as _json
    from jvmos import engine as engine_mod
    clang = shutil.which("clang")
    built = engine_mod.ENGINE.exists() and all(
        p.exists() for p in engine_mod.objects_for(engine_mod.LAYERS).values())
    add("clang (BPF compiler)", bool(clang) or built, clang or "not found",
        "apt-get install clang llvm libbpf-dev (make build compiles probes/*.bpf.c)")
    btf = Path("/sys/kernel/btf/vmlinux")
    add("kernel BTF", btf.exists(), str(btf) if btf.exists() else "missing",
        "the compiled probes need a kernel built with CONFIG_DEBUG_INFO_BTF (--mode sample "
        "records without them)")
    add("compiled engine", built, engine_mod.version() if built else "not built", "make build")
    if not (built and root):
        return
    try:
        r = subprocess.run([str(engine_mod.ENGINE), "--features"], capture_output=True,
                           text=True, timeout=60)
        f = _json.loads(r.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError) as e:
        add("uprobe_multi links", False, f"the engine could not say: {e}", "", warn_only=True)
        return
    add("uprobe_multi links", bool(f.get("uprobe_multi")),
        "one link per library, breakpoints in the traced process only" if f.get("uprobe_multi")
        else f"not available ({f.get('uprobe_multi_why')}): the engine falls back to classic "
             "per-pid uprobes, slower to detach", "a kernel 6.6 or newer", warn_only=True)
    add("BTF for CO-RE", bool(f.get("btf")), "the engine loaded the kernel's BTF" if f.get("btf")
        else str(f.get("btf_why")), "CONFIG_DEBUG_INFO_BTF")


def checks() -> List[Tuple[str, str, str, str]]:
    """(name, status ok|FAIL|warn, detail, fix) rows."""
    rows = []

    def add(name, ok, detail, fix="", warn_only=False):
        rows.append((name, "ok" if ok else ("warn" if warn_only else "FAIL"), detail, fix))

    root = os.geteuid() == 0
    add("privileges", root, "root" if root else f"uid {os.geteuid()}",
        "run jvmos as root (or with CAP_BPF+CAP_PERFMON+CAP_SYS_ADMIN)")
    bt = shutil.which("bpftrace")
    ver = ""
    if bt:
        r = subprocess.run([bt, "--version"], capture_output=True, text=True)
        ver = r.stdout.strip()
    m = re.search(r"v?(\d+)\.(\d+)", ver)
    new_enough = bool(m) and (int(m.group(1)), int(m.group(2))) >= (0, 16)
    # not a recording's engine: the tests' independent witness, `jvmos run ipc`'s network
    # counter (probes/net.bt) and `jvmos run accuracy`'s kernel-time sampler
    add("bpftrace", bool(bt) and new_enough, ver or "not found",
        "apt-get install bpftrace (0.16 or newer): needed by make test's witnesses and the ipc "
        "and accuracy experiments, not by jvmos record", warn_only=True)
    nm = shutil.which("nm")
    add("nm (binutils)", bool(nm), nm or "not found", "apt-get install binutils")
    tr = Path("/sys/kernel/tracing/events")
    if not tr.exists() and root:
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], capture_output=True)
        subprocess.run(["mount", "-t", "debugfs", "nodev", "/sys/kernel/debug"], capture_output=True)
    add("tracefs", tr.exists(), "/sys/kernel/tracing" if tr.exists() else "not mounted",
        "mount -t tracefs nodev /sys/kernel/tracing")
    sc = Path("/sys/kernel/tracing/events/syscalls/sys_enter_write")
    add("syscall tracepoints", sc.exists(), "syscalls:sys_enter_write" if sc.exists() else "missing",
        "kernel needs CONFIG_FTRACE_SYSCALLS")
    # the kernel's BPF, tracepoints and uprobes, tried with bpftrace where it is installed
    # (warnings: jvmos record needs the engine, whose own load is checked below)
    if bt and root:
        ok, detail = _bt('BEGIN { printf("bpf-ok"); exit(); }')
        add("BPF syscall (via bpftrace)", ok and "bpf-ok" in detail, "a BPF program loaded" if ok else detail,
            "kernel needs CONFIG_BPF_SYSCALL and BPF allowed (not in a restricted container)",
            warn_only=True)
        ok, detail = _bt('tracepoint:syscalls:sys_enter_getpid { } BEGIN { exit(); }')
        add("tracepoint attach (via bpftrace)", ok, "syscalls:sys_enter_getpid attached" if ok else detail,
            "run privileged; check /sys/kernel/tracing permissions", warn_only=True)
        libc = next((p for p in maps_of(os.getpid()) if re.search(r"/libc[.-]", p)), None)
        if libc:
            ok, detail = _bt(f'uprobe:{libc}:getpid {{ }} BEGIN {{ exit(); }}')
            add("uprobes (via bpftrace)", ok, f"uprobe on {libc}:getpid attached" if ok else detail,
                "kernel needs CONFIG_UPROBE_EVENTS", warn_only=True)
        else:
            add("uprobes (via bpftrace)", False, "could not find libc in this process's maps", "",
                warn_only=True)
    _engine_rows(add, root)
    libc = libc_of()
    if libc:
        miss = [x for x in LIBC_SYMBOLS if x not in symbols(libc)]
        add("libc symbols", not miss, f"{libc}: " + ("pthread_create, malloc family" if not miss
                                                     else "missing " + ", ".join(miss)),
            "the threads and mem layers probe libc by its dynamic symbols", warn_only=True)
        from jvmos.catalogue import THREAD_LIBC_FUTEX
        local = [x for x in ("__clone3",) + tuple(THREAD_LIBC_FUTEX) if x not in symbols(libc)]
        dbg = debug_file_of(libc)
        add("glibc's debug symbols", not local,
            (f"{dbg}: __clone3 and the futex waits" if not local else
             f"{dbg or 'no debug file'}: missing " + ", ".join(local)
             + " (the threads layer at --scope process does not see them)"),
            "apt-get install libc6-dbg (make deps does)", warn_only=True)
    jdks = discover_jdks()
    add("JDKs found", bool(jdks), f"{len(jdks)}", "install a HotSpot JDK (apt-get install openjdk-17-jdk-headless)")
    for j in jdks:
        syms = symbols(j.libjvm)
        jni = sum(1 for s in syms if s.startswith("jni_") and s[4:5].isupper())
        miss = [s for s in REQUIRED_JVM_SYMBOLS if s not in syms]
        add(f"JDK {j.version}", not miss and bool(j.libjava),
            f"{j.libjvm}: {jni} JNI entry points" + (f", missing {', '.join(miss)}" if miss else "")
            + ("" if j.libjava else ", no libjava.so") + ("" if j.libnio else ", no libnio.so"),
            "a libjvm.so without its symbol table cannot be probed by name: use a JDK that "
            "ships one (OpenJDK/Temurin do)")
        tmiss = [x for x in THREAD_JVM_SYMBOLS if x not in syms]
        add(f"JDK {j.version} threads layer", not tmiss,
            "JVM_StartThread, thread_native_entry, JavaThread::exit" if not tmiss
            else "missing " + ", ".join(tmiss) + " (those spans are skipped)",
            "", warn_only=True)
    ap = ASYNC_PROFILER_DIR / "libasyncProfiler.so"
    add("async-profiler", ap.exists(), str(ap) if ap.exists() else "not found",
        "make deps (fetches tools.profiler:async-profiler:4.1 from Maven Central); "
        "needed only for sampling", warn_only=True)
    built = [C_BUILD / "blocking_io", C_BUILD / "copycal", C_BUILD / "memcal", C_BUILD / "probecal",
             IO_JAR, TOMCAT_JAR]
    missing = [str(p.relative_to(ROOT)) for p in built if not p.exists()]
    add("workloads built", not missing, "all" if not missing else "missing " + ", ".join(missing),
        "make build", warn_only=True)
    return rows


def run(print_fn=print) -> int:
    rows = checks()
    w = max(len(r[0]) for r in rows)
    print_fn(f"{'check':<{w}}  status  detail")
    for name, status, detail, _ in rows:
        print_fn(f"{name:<{w}}  {status:<6}  {detail}")
    fails = [r for r in rows if r[1] == "FAIL"]
    for name, _, detail, fix in fails:
        print_fn(f"FAIL {name}: {detail}" + (f" -> {fix}" if fix else ""))
    return 1 if fails else 0
