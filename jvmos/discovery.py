"""How the agent finds the HotSpot JVMs of a host: /proc's processes, each identified once
(a java launcher or a process that maps libjvm.so), its user, main class and jar."""
import math
import os
import stat
import time
import zipfile
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from jvmos import JvmosError

# discovery: a process younger than this is looked at every scan until it maps libjvm.so; an
# older one that is not a JVM once every FULL_RECHECK_S
YOUNG_S = 30.0
FULL_RECHECK_S = 60.0
LAUNCHERS = ("java", "javaw")


def error_text(e: BaseException) -> str:
    """A JvmosError's message as it is; anything else with its type (an unexpected error)."""
    return str(e) if isinstance(e, JvmosError) else f"{type(e).__name__}: {e}"


# --------------------------------------------------------------------------- discovery

def java_main(argv: Sequence[str]) -> Tuple[str, str]:
    """(main class, jar) of a java launcher's arguments (argv without argv[0]): the first
    argument that is not an option (or an option's value) is the main class, `-jar X` names a
    jar, `-m M/C` a module's main class; '' for what the command line does not say."""
    takes_value = {"-cp", "-classpath", "--class-path", "-p", "--module-path",
                   "--upgrade-module-path", "--add-modules", "--limit-modules", "--add-reads",
                   "--add-exports", "--add-opens", "--patch-module", "--source",
                   "--enable-native-access", "--describe-module", "-d"}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "-jar":
            return "", argv[i + 1] if i + 1 < len(argv) else ""
        if a in ("-m", "--module"):
            return (argv[i + 1] if i + 1 < len(argv) else ""), ""
        if a.startswith("--module="):
            return a.split("=", 1)[1], ""
        if a in takes_value:
            i += 2
            continue
        if a.startswith("-") or a.startswith("@"):
            i += 1
            continue
        return a, ""
    return "", ""


# files the agent reads on behalf of a process another user may control (its passwd, its jar,
# its JDK's release file) are read only when regular, without blocking, and only this much
READ_CAP = 1 << 20
MANIFEST_CAP = 64 << 10


def _read(path: str, binary: bool = False):
    """A file's first READ_CAP bytes. Not a regular file (a FIFO a user put in a jar's place
    would block a plain open for ever): OSError."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode) and not path.startswith("/proc/"):
            raise OSError(f"{path} is not a regular file")
        chunks, size = [], 0
        while size < READ_CAP:     # procfs hands a long command line over a page at a time
            b = os.read(fd, READ_CAP - size)
            if not b:
                break
            chunks.append(b)
            size += len(b)
        data = b"".join(chunks)
    finally:
        os.close(fd)
    return data if binary else data.decode(errors="replace")


def proc_stat(pid: int) -> Optional[Tuple[str, int, int]]:
    """(state, ppid, start time in clock ticks since boot) of /proc/PID/stat, None if gone."""
    try:
        s = _read(f"/proc/{pid}/stat")
        f = s[s.rindex(")") + 2:].split()
        return f[0], int(f[1]), int(f[19])
    except (OSError, ValueError, IndexError):
        return None


def cmdline_of(pid: int) -> List[str]:
    try:
        raw = _read(f"/proc/{pid}/cmdline", binary=True)
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0")[:-1]]


def uid_of(pid: int) -> Optional[int]:
    try:
        for line in _read(f"/proc/{pid}/status").splitlines():
            if line.startswith("Uid:"):
                return int(line.split()[2])        # the effective uid
    except (OSError, ValueError, IndexError):
        pass
    return None


def _same_user_ns(pid: int) -> bool:
    try:
        return os.readlink(f"/proc/{pid}/ns/user") == os.readlink("/proc/self/ns/user")
    except OSError:
        return False


def user_name(pid: int, uid: Optional[int]) -> str:
    """The name of uid in the process's own /etc/passwd (a container's names its users) when
    the process shares the agent's user namespace (else its passwd's numbers are not the
    host's, and its owner chose the names), then in the agent's, else the number."""
    if uid is None:
        return ""
    own = [f"/proc/{pid}/root/etc/passwd"] if _same_user_ns(pid) else []
    for path in own + ["/etc/passwd"]:
        try:
            for line in _read(path).splitlines():
                f = line.split(":")
                if len(f) > 2 and f[2] == str(uid):
                    return f[0]
        except (OSError, UnicodeDecodeError):
            continue
    return str(uid)


def jar_main_class(pid: int, jar: str) -> Tuple[str, str]:
    """(Main-Class of the jar's manifest or '', the jar's path as the agent reaches it),
    reading the jar through the process's cwd or root (its own mount namespace)."""
    path = jar if jar.startswith("/") else f"/proc/{pid}/cwd/{jar}"
    if jar.startswith("/"):
        via_root = f"/proc/{pid}/root{jar}"
        if os.path.exists(via_root):
            path = via_root
    else:       # the absolute path the process means, for --match jar=/abs/path
        try:
            path_abs = os.path.join(os.readlink(f"/proc/{pid}/cwd"), jar)
        except OSError:
            path_abs = path
    try:
        # a regular file only (never block on a FIFO), the manifest only if small, and any
        # error of a corrupt archive (zlib's included) leaves the main class unknown
        if not stat.S_ISREG(os.stat(path).st_mode):
            return "", path
        with zipfile.ZipFile(path) as z:
            if z.getinfo("META-INF/MANIFEST.MF").file_size > MANIFEST_CAP:
                return "", path
            text = z.read("META-INF/MANIFEST.MF").decode("utf-8", errors="replace")
    except Exception:
        return "", path if jar.startswith("/") else path_abs
    if not jar.startswith("/"):
        path = path_abs
    # manifest lines are wrapped at 72 bytes: a continuation starts with one space
    text = text.replace("\r\n", "\n").replace("\n ", "")
    for line in text.splitlines():
        k, _, v = line.partition(":")
        if k.strip() == "Main-Class":
            return v.strip(), path
    return "", path


_HZ = os.sysconf("SC_CLK_TCK")


def boot_time() -> float:
    try:
        for line in _read("/proc/stat").splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return time.time() - time.monotonic()


def uptime_s() -> float:
    try:
        return float(_read("/proc/uptime").split()[0])
    except (OSError, ValueError, IndexError):
        return time.monotonic()


@dataclass
class JvmProc:
    """A HotSpot JVM process as discovery found it."""
    pid: int
    start_ticks: int
    start_time: float             # epoch seconds
    uid: Optional[int]
    user: str
    cmdline: List[str]
    main_class: str
    jar: str
    jar_path: str
    jvm: object                   # jvmos.jdk.Jvm

    @property
    def key(self) -> Tuple[int, int]:
        return (self.pid, self.start_ticks)

    @property
    def home_seen(self) -> str:
        """The JDK home as the JVM itself names it (without /proc/PID/root, through which an
        agent in another mount namespace reaches it)."""
        home = str(getattr(self.jvm, "home", ""))
        prefix = f"/proc/{self.pid}/root"
        return home[len(prefix):] or "/" if home.startswith(prefix + "/") else home

    @property
    def jdk_version(self) -> str:
        return getattr(self.jvm, "version", "") or "unknown"

    def labels(self) -> Dict[str, str]:
        return {"pid": str(self.pid), "main_class": self.main_class or "unknown",
                "jdk_version": self.jdk_version}

    def describe(self) -> str:
        what = self.main_class or (os.path.basename(self.jar) if self.jar else "main unknown")
        return (f"pid {self.pid} ({what}, JDK {self.jdk_version}, user "
                f"{self.user or self.uid})")


def identify(pid: int, start_ticks: int, boot: float) -> Optional[JvmProc]:
    """The JvmProc of pid if it maps a HotSpot libjvm.so, else None."""
    from jvmos.jdk import jvm_of_pid
    try:
        jvm = jvm_of_pid(pid)
    except JvmosError:
        return None
    if jvm is None:
        return None
    argv = cmdline_of(pid)
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        exe = argv[0] if argv else ""
    main, jar, jar_path = "", "", ""
    if os.path.basename(exe) in LAUNCHERS or (argv and os.path.basename(argv[0]) in LAUNCHERS):
        main, jar = java_main(argv[1:])
        if jar:
            main, jar_path = jar_main_class(pid, jar)
            if not main:
                main = os.path.basename(jar)
    uid = uid_of(pid)
    return JvmProc(pid=pid, start_ticks=start_ticks, start_time=boot + start_ticks / _HZ,
                   uid=uid, user=user_name(pid, uid), cmdline=argv, main_class=main, jar=jar,
                   jar_path=jar_path, jvm=jvm)


@dataclass
class _Seen:
    start_ticks: int
    exe: Optional[str]
    checked: float                        # monotonic time of the last look at its maps
    young_until: float                    # looked at every scan until then (monotonic)
    proc: Optional[JvmProc] = None        # a JVM: what was learnt of it
    unreadable: bool = False              # said once: its JVM's files could not be read
    kernel: bool = False                  # a kernel thread: never a JVM, never looked at again


class Discovery:
    """The live HotSpot JVMs, by (pid, start time): what scan() returns. Per-process state is
    kept for live processes only (pruned every scan)."""

    def __init__(self, skip: Callable[[], set] = lambda: set(),
                 log: Callable[[str], None] = lambda m: None):
        self.skip, self.log = skip, log
        self.seen: Dict[int, _Seen] = {}
        self.boot = boot_time()

    def forget(self, pid: int) -> None:
        """pid exec'd: a new program, looked at again from the next scan on (every scan for
        YOUNG_S: a launcher maps libjvm.so a moment after its exec)."""
        s = self.seen.get(pid)
        if s is not None:
            s.proc, s.checked, s.young_until = None, -math.inf, time.monotonic() + YOUNG_S

    def scan(self) -> Dict[Tuple[int, int], JvmProc]:
        """One look at /proc. A process seen before costs one readlink of its executable (a
        JVM also a read of its command line): its stat, which the kernel builds at some cost,
        is read only for a new pid or a new executable; a kernel thread is skipped after
        its first look."""
        now = time.monotonic()
        up = None
        skip = self.skip()
        live = set()
        found: Dict[Tuple[int, int], JvmProc] = {}
        try:
            names = os.listdir("/proc")
        except OSError:
            return found
        for name in names:
            if not name.isdigit():
                continue
            pid = int(name)
            if pid in skip:
                continue
            s = self.seen.get(pid)
            if s is not None and s.kernel:
                live.add(pid)
                continue
            try:
                exe = os.readlink(f"/proc/{pid}/exe")
            except OSError:
                exe = None        # a kernel thread, a zombie, gone, or not ours to read
            if s is None or exe != s.exe:
                st = proc_stat(pid)
                if st is None:
                    continue
                if st[0] in ("Z", "X"):
                    live.add(pid)
                    continue
                state, ppid, start = st
                if s is None or s.start_ticks != start:
                    if up is None:
                        up = uptime_s()
                    s = self.seen[pid] = _Seen(
                        start_ticks=start, exe=exe, checked=-math.inf,
                        young_until=now + max(0.0, YOUNG_S - (up - start / _HZ)),
                        kernel=exe is None and (ppid == 2 or pid == 2))
                else:
                    # the same process with a new executable: it exec'd
                    s.exe, s.proc, s.checked = exe, None, -math.inf
                    s.young_until = now + YOUNG_S
            live.add(pid)
            if exe is None:
                continue
            if s.proc is not None:
                if cmdline_of(pid) == s.proc.cmdline:
                    found[s.proc.key] = s.proc
                    continue
                # it exec'd the same executable: a new program, looked at as a young one
                s.proc, s.checked, s.young_until = None, -math.inf, now + YOUNG_S
            if s.checked == -math.inf or now < s.young_until \
                    or now - s.checked >= FULL_RECHECK_S:
                s.checked = now
                try:
                    s.proc = identify(pid, s.start_ticks, self.boot)
                except Exception as e:     # noqa: BLE001 - one process never ends discovery
                    # e.g. a JDK in a directory the agent may not read: said once per look
                    s.proc = None
                    if not s.unreadable:
                        self.log(f"pid {pid}: maps a libjvm.so that cannot be read "
                                 f"({error_text(e)}): left alone")
                    s.unreadable = True
                if s.proc is not None:
                    found[s.proc.key] = s.proc
        for pid in [p for p in self.seen if p not in live]:
            del self.seen[pid]
        return found
