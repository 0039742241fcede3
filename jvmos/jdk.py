"""Finding JVMs: the libjvm.so a process maps, the JDKs installed, and their symbols."""
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from jvmos import JvmosError

# Where JDKs are commonly installed; searched, never assumed (JVMOS_JDK_ROOTS overrides).
DEFAULT_JDK_ROOTS = "/usr/lib/jvm:/usr/java:/opt/java:/opt:/usr/local"


@dataclass
class Jvm:
    libjvm: Path
    home: Path
    version: str = "unknown"
    vendor: str = ""
    libjava: Optional[Path] = None
    extra: Dict[str, Path] = field(default_factory=dict)

    @property
    def libnio(self) -> Optional[Path]:
        base = self.libjava.parent if self.libjava else self.libjvm.parent.parent
        p = base / "libnio.so"
        return p if p.exists() else None

    @property
    def libzip(self) -> Optional[Path]:
        base = self.libjava.parent if self.libjava else self.libjvm.parent.parent
        p = base / "libzip.so"
        return p if p.exists() else None

    def as_dict(self):
        return {"home": str(self.home), "libjvm": str(self.libjvm), "version": self.version,
                "vendor": self.vendor, "libjava": str(self.libjava) if self.libjava else None,
                "libnio": str(self.libnio) if self.libnio else None}


def _release_info(home: Path):
    version, vendor = "unknown", ""
    try:
        for line in (home / "release").read_text().splitlines():
            k, _, v = line.partition("=")
            v = v.strip().strip('"')
            if k == "JAVA_VERSION":
                version = v
            elif k == "IMPLEMENTOR":
                vendor = v
    except OSError:
        pass
    return version, vendor


def jvm_from_libjvm(libjvm: Path, libjava: Optional[Path] = None) -> Jvm:
    libjvm = Path(libjvm)
    # <home>/lib/server/libjvm.so (JDK 9+) or <home>/jre/lib/amd64/server/libjvm.so (JDK 8)
    home = libjvm.parent.parent.parent
    if home.name == "jre" or not (home / "release").exists():
        for cand in libjvm.parents:
            if (cand / "release").exists():
                home = cand
                break
    if libjava is None:
        cand = libjvm.parent.parent / "libjava.so"
        libjava = cand if cand.exists() else None
    version, vendor = _release_info(home)
    return Jvm(libjvm=libjvm, home=home, version=version, vendor=vendor, libjava=libjava)


def maps_of(pid: int) -> List[str]:
    """Paths of the files a process maps (from /proc/PID/maps)."""
    paths = []
    try:
        with open(f"/proc/{pid}/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6 and parts[5].startswith("/"):
                    p = parts[5].strip()
                    if p.endswith(" (deleted)"):
                        p = p[: -len(" (deleted)")]
                    if p not in paths:
                        paths.append(p)
    except FileNotFoundError:
        raise JvmosError(f"no process with pid {pid}")
    except OSError as e:
        raise JvmosError(f"cannot read /proc/{pid}/maps: {maps_refused(pid, e)}")
    return paths


CAP_SYS_PTRACE = 19


def cap_eff() -> Optional[int]:
    """This process's effective capabilities (/proc/self/status CapEff), None if unknown."""
    try:
        with open("/proc/self/status") as f:
            return next(int(l.split()[1], 16) for l in f if l.startswith("CapEff:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return None


def maps_refused(pid: int, e: OSError) -> str:
    """Why /proc/PID/maps could not be read: "run jvmos as root" only to a user who is not
    root; to root, the kernel's reason (the errno) and what it means."""
    if not isinstance(e, PermissionError):
        return e.strerror or str(e)
    if os.geteuid() != 0:
        return "run jvmos as root"
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        comm = "?"
    eff = cap_eff()
    if eff is not None and not eff >> CAP_SYS_PTRACE & 1:
        why = ("jvmos runs as root without CAP_SYS_PTRACE (a container's default: add it, "
               "e.g. docker run --cap-add SYS_PTRACE)")
    else:
        why = ("the kernel's ptrace access check refuses it (the process made itself "
               "non-dumpable, runs in another user namespace, or a security module such as "
               "Yama, AppArmor or SELinux forbids it); whether it is a JVM cannot be seen")
    return f"{e.strerror} to root for pid {pid} ({comm}): {why}"


def jvm_of_pid(pid: int) -> Optional[Jvm]:
    """The JVM a process runs, from the libjvm.so and libjava.so it maps; None if not a JVM."""
    maps = maps_of(pid)
    libjvm = next((p for p in maps if os.path.basename(p) == "libjvm.so"), None)
    if not libjvm:
        return None
    libjava = next((p for p in maps if os.path.basename(p) == "libjava.so"), None)
    # a process in another mount namespace (a container, or jvmos itself in one) names files
    # of its own filesystem: reach the very same files through /proc/PID/root
    prefix = f"/proc/{pid}/root" if _other_mount_ns(pid) or not Path(libjvm).exists() else ""
    lj = Path(prefix + libjava) if libjava else None
    return jvm_from_libjvm(Path(prefix + libjvm), lj)


def runs_elsewhere(jvm: Jvm) -> Optional[str]:
    """Why this JDK cannot be run from here as itself (None when it can): a JDK reached
    through /proc/PID/root is another mount namespace's (a host JVM seen from jvmos's
    container, or a container's JVM seen from the host). Its java launcher finds its home
    through /proc/self/exe, which names the file as that namespace does: run from here, it
    would load whatever JDK this namespace has at that path, and a calibration of it would
    measure another JDK under this one's name."""
    if re.match(r"/proc/\d+/root/", str(jvm.home)):
        return (f"{jvm.home} is another mount namespace's JDK (reached through /proc/PID/root); "
                "jvmos cannot run it from here")
    return None


def _other_mount_ns(pid: int) -> bool:
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt")
    except OSError:
        return False


def discover_jdks() -> List[Jvm]:
    """Every HotSpot JDK found: JAVA_HOME, java on PATH, and the usual install roots."""
    found: Dict[str, Jvm] = {}

    def add_home(home: Path):
        for rel in ("lib/server/libjvm.so", "jre/lib/amd64/server/libjvm.so"):
            lib = home / rel
            if lib.exists():
                real = os.path.realpath(lib)
                if real not in found:
                    found[real] = jvm_from_libjvm(Path(real))
                return

    if os.environ.get("JAVA_HOME"):
        add_home(Path(os.environ["JAVA_HOME"]))
    java = shutil.which("java")
    if java:
        add_home(Path(os.path.realpath(java)).parent.parent)
    for root in os.environ.get("JVMOS_JDK_ROOTS", DEFAULT_JDK_ROOTS).split(":"):
        r = Path(root)
        if r.is_dir():
            try:
                for child in sorted(r.iterdir()):
                    if child.is_dir():
                        add_home(child)
            except OSError:
                pass
    return list(found.values())


def libc_of(pid: Optional[int] = None) -> Optional[Path]:
    """The libc.so.6 a process maps (jvmos's own when pid is None: a command jvmos launches
    runs in the same mount namespace and loads the same libc)."""
    maps = maps_of(pid) if pid is not None else maps_of(os.getpid())
    lib = next((p for p in maps if re.match(r"libc(-[\d.]+)?\.so(\.6)?$", os.path.basename(p))),
               None)
    if lib is None:
        return None
    if pid is not None and (_other_mount_ns(pid) or not Path(lib).exists()):
        return Path(f"/proc/{pid}/root{lib}")
    return Path(lib)


def _is_libz(path: str) -> bool:
    return os.path.basename(path).startswith("libz.so")


def _needed(lib: Path) -> List[str]:
    """The DT_NEEDED names of a shared library (objdump -p)."""
    try:
        out = subprocess.run(["objdump", "-p", str(lib)], capture_output=True, text=True).stdout
    except FileNotFoundError:
        raise JvmosError("objdump not found: install binutils (make deps does)")
    return [line.split()[1] for line in out.splitlines()
            if line.split()[:1] == ["NEEDED"] and len(line.split()) == 2]


def _loaded_libz(name: str) -> Optional[Path]:
    """The file the dynamic loader gives jvmos for the library `name` (libz.so.1): loaded
    here, then read from jvmos's own maps. A command jvmos launches runs in the same mount
    namespace and gets the same file (as libc_of)."""
    import ctypes
    try:
        ctypes.CDLL(name)
    except OSError:
        return None
    return next((Path(p) for p in maps_of(os.getpid()) if _is_libz(p)), None)


def libz_of(jvms: List[Jvm], pid: Optional[int] = None) -> Tuple[List[Path], Optional[str]]:
    """The libraries whose zlib the JVMs create their streams with (the mem layer's LIBZ),
    and why there is none when there is none. A process attached to (pid) names its own: the
    libz.so* it maps. Each JVM's libzip.so then either defines inflateInit2_ itself (zlib
    inside it: Temurin's, local symbols), and is the library; or imports it, from the
    libz.so.1 it needs, which a JVM not yet started (or one that has not mapped it) will
    load: the JDK's own copy in its lib directory (libzip.so's RPATH is $ORIGIN), else the
    one the dynamic loader gives jvmos (in the process's mount namespace only)."""
    found: List[Path] = []
    why: List[str] = []
    mapped = [p for p in maps_of(pid) if _is_libz(p)] if pid is not None else []
    if mapped:
        prefix = f"/proc/{pid}/root" if _other_mount_ns(pid) or \
            not Path(mapped[0]).exists() else ""
        found.append(Path(prefix + mapped[0]))
    for j in jvms:
        zip_ = j.libzip
        if zip_ is None:
            why.append(f"{j.home} has no lib/libzip.so")
            continue
        if "inflateInit2_" in symbols(zip_):
            found.append(zip_)
            continue
        libz = [n for n in _needed(zip_) if _is_libz(n)]
        if not libz:
            why.append(f"{zip_} neither defines zlib's inflateInit2_ nor needs a libz.so "
                       "(zlib inside it without symbols)")
            continue
        if mapped:
            continue
        own = zip_.parent / libz[0]
        if own.exists():
            found.append(own)
        elif pid is not None and _other_mount_ns(pid):
            why.append(f"pid {pid} maps no {libz[0]} yet, and its mount namespace is not "
                       "jvmos's")
        else:
            got = _loaded_libz(libz[0])
            if got is None:
                why.append(f"the dynamic loader finds no {libz[0]} ({zip_} needs it)")
            else:
                found.append(got)
    if not jvms and not mapped:
        why.append("no JVM probed" if pid is None else f"pid {pid} maps no libz.so and is "
                   "not a JVM")
    uniq = list(dict.fromkeys(os.path.realpath(p) if not str(p).startswith("/proc/") else
                              str(p) for p in found))
    return [Path(p) for p in uniq], ("; ".join(why) if not uniq else None)


def jvm_of_executable(exe: str) -> Optional[Jvm]:
    """The JVM a launcher binary starts, when it lives in a JDK's bin/ (java, jshell, ...)."""
    path = shutil.which(exe) if "/" not in exe else exe
    if not path or not os.path.exists(path):
        return None
    real = Path(os.path.realpath(path))
    for rel in ("lib/server/libjvm.so", "jre/lib/amd64/server/libjvm.so"):
        lib = real.parent.parent / rel
        if lib.exists():
            return jvm_from_libjvm(lib)
    return None


# programs that run another command: what they start may be a JVM, so all JDKs are probed
WRAPPERS = {"sh", "bash", "dash", "zsh", "ksh", "env", "timeout", "nice", "nohup", "taskset",
            "numactl", "chrt", "ionice", "stdbuf", "time", "xargs", "setsid", "sudo", "su",
            "runuser", "unshare", "nsenter", "make", "mvn", "gradle", "ant", "perf", "strace",
            "valgrind", "python", "python3", "perl"}


def executable_kind(exe: str) -> str:
    """'jvm' for a JDK launcher, 'jvm-embedder' for a binary linking the JVM, 'script' for
    an interpreted file or a wrapper that runs other commands, 'native' otherwise."""
    path = shutil.which(exe) if "/" not in exe else exe
    if not path or not os.path.exists(path):
        return "missing"
    if jvm_of_executable(exe):
        return "jvm"
    try:
        with open(path, "rb") as f:
            head = f.read(4)
            if head != b"\x7fELF":
                return "script"
            data = head + f.read(4 << 20)
    except OSError:
        return "missing"
    # a binary that links the JVM (an embedding launcher) is a JVM too
    if b"libjvm.so" in data or b"libjli.so" in data:
        return "jvm-embedder"
    name = os.path.basename(path)
    if name in WRAPPERS or name.rstrip("0123456789.") in WRAPPERS:
        return "script"
    return "native"


DEBUG_ROOT = Path("/usr/lib/debug/.build-id")


def debug_file_of(path) -> Optional[Path]:
    """The separate debug file of a library, found by its GNU build id under DEBUG_ROOT
    (Debian's libc6-dbg puts glibc's there), or None."""
    try:
        out = subprocess.run(["readelf", "-n", str(path)], capture_output=True, text=True).stdout
    except FileNotFoundError:
        return None
    m = re.search(r"Build ID:\s*([0-9a-f]{4,})", out)
    if not m:
        return None
    p = DEBUG_ROOT / m.group(1)[:2] / f"{m.group(1)[2:]}.debug"
    return p if p.is_file() else None


@lru_cache(maxsize=32)
def _symbols_cached(path: str, mtime: float) -> Dict[str, int]:
    syms = _nm_symbols(path)
    # functions the library keeps local (glibc's __clone3, __futex_abstimed_wait_common) are
    # named only in its debug file, at the same link-time addresses; the library's own names
    # come first
    dbg = debug_file_of(path)
    if dbg is not None:
        for name, addr in _nm_symbols(str(dbg)).items():
            syms.setdefault(name, addr)
    return syms


def _nm_symbols(path: str) -> Dict[str, int]:
    try:
        out = subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True)
    except FileNotFoundError:
        raise JvmosError("nm not found: install binutils (make deps does)")
    syms: Dict[str, int] = {}
    dupes = set()

    def take(text):
        default_version = set()
        for line in text.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "tTwWiI":
                # the dynamic table names versions (malloc@@GLIBC_2.2.5): the default version
                # (@@) is what a caller links to; an older one (@) yields to it
                name, at, ver = parts[2].partition("@")
                addr = int(parts[0], 16)
                if at:
                    is_default = ver.startswith("@")
                    if name in default_version or (not is_default and name in syms):
                        continue
                    if is_default:
                        default_version.add(name)
                        syms[name] = addr
                        continue
                if name in syms and syms[name] != addr:
                    dupes.add(name)
                syms[name] = addr

    take(out.stdout)
    if not syms:  # stripped: fall back to the dynamic symbol table
        take(subprocess.run(["nm", "-D", "--defined-only", path],
                            capture_output=True, text=True).stdout)
    for d in dupes:  # a name defined twice is ambiguous: do not probe it
        del syms[d]
    return syms


def symbols(path) -> Dict[str, int]:
    """Function symbols a shared library defines, with their addresses (full symbol table,
    else the dynamic one)."""
    path = str(path)
    try:
        mtime = os.stat(path).st_mtime
    except OSError:
        return {}
    return _symbols_cached(path, mtime)


_PROC_VERSION = re.compile(r"(\d+(\.\d+)*)")


# ---- USDT probes (SystemTap SDT notes): HotSpot's static probes, which survive `strip` ----

@dataclass(frozen=True)
class UsdtProbe:
    provider: str
    name: str
    pc: int           # link-time address of the probe's nop
    base: int         # link-time address of .stapsdt.base when the note was written
    semaphore: int    # 0: always armed; else the probe is inert until the counter is raised
    args: str         # e.g. "8@%r14 8@%rbx -4@%r13d -4@%r12d 8@-88(%rbp)"


_NOTE_FIELD = re.compile(r"(Provider|Name|Location|Arguments):[ \t]?(.*)$")
_LOCATION = re.compile(r"(0x[0-9a-fA-F]+),\s*Base:\s*(0x[0-9a-fA-F]+),\s*Semaphore:\s*"
                       r"(0x[0-9a-fA-F]+)")


def parse_stapsdt(text: str) -> List[UsdtProbe]:
    """The stapsdt notes in `readelf -n` output (with or without -W), in file order: one per
    probe site, so a probe inlined at two places has two notes of the same name."""
    probes: List[UsdtProbe] = []
    cur: Dict[str, str] = {}

    def flush():
        m = _LOCATION.search(cur.get("Location", ""))
        if "Provider" in cur and "Name" in cur and m:
            pc, base, sem = (int(x, 16) for x in m.groups())
            probes.append(UsdtProbe(cur["Provider"].strip(), cur["Name"].strip(), pc, base,
                                    sem, cur.get("Arguments", "").strip()))
        cur.clear()

    inside = False
    for line in text.splitlines():
        if "NT_STAPSDT" in line:
            flush()
            inside = True
            line = line.split("NT_STAPSDT", 1)[1].split(")", 1)[-1]
        elif re.match(r"^\s*\S+\s+0x[0-9a-fA-F]+\s+\S", line) or line.startswith("Displaying"):
            flush()      # the header of a note of another kind, or of another section
            inside = False
            continue
        m = _NOTE_FIELD.search(line)
        if inside and m:
            cur[m.group(1)] = m.group(2)
    flush()
    return probes


@lru_cache(maxsize=32)
def _usdt_cached(path: str, mtime: float) -> Dict[Tuple[str, str], List[UsdtProbe]]:
    try:
        out = subprocess.run(["readelf", "-n", "-W", path], capture_output=True, text=True)
    except FileNotFoundError:
        raise JvmosError("readelf not found: install binutils (make deps does)")
    found: Dict[Tuple[str, str], List[UsdtProbe]] = {}
    for p in parse_stapsdt(out.stdout):
        found.setdefault((p.provider, p.name), []).append(p)
    return found


def usdt_probes(path) -> Dict[Tuple[str, str], List[UsdtProbe]]:
    """USDT probes a library carries: (provider, name) -> its sites. Empty when it has none."""
    path = str(path)
    try:
        mtime = os.stat(path).st_mtime
    except OSError:
        return {}
    return _usdt_cached(path, mtime)
