"""Uprobes that trap only in the traced processes (bpftrace 0.17 cannot scope them).

A uprobe is placed on a file: every process that maps libc.so.6 or libjvm.so traps at it,
whatever pid the BPF program then filters on. The kernel can do better: a uprobe opened through
perf_event_open(2) for one pid is installed only in the address space of that process (the
uprobe's filter compares the mm), so other processes never trap. bpftrace 0.17 opens its
uprobes for every process (pid -1), even with -p.

jvmos keeps bpftrace as its only probe engine and moves the attachment:
  1. bpftrace attaches its uprobes to a *decoy*: a byte-identical copy of each library, kept
     in a cache directory, that no process maps. Those uprobes never fire.
  2. Once bpftrace is attached, jvmos asks the kernel which BPF program bpftrace attached to
     which decoy offset (bpf BPF_TASK_FD_QUERY on bpftrace's perf-event descriptors), takes a
     descriptor of that program (BPF_PROG_GET_FD_BY_ID) and opens the same uprobe (same
     offset, same entry/return kind) on the real library for each traced pid only
     (perf_event_open with the uprobe PMU, then PERF_EVENT_IOC_SET_BPF).
  3. jvmos holds those descriptors until the recording stops; closing them detaches.
The BPF programs, maps and output are bpftrace's own: nothing else changes. Probe names in the
output carry the decoy path; the manifest maps each decoy back to its library
(probes.scope.decoys) and the parser renames them.

Only x86-64 Linux (the syscall numbers below). Needs root (CAP_SYS_ADMIN for the program ids).
"""
import ctypes
import errno
import hashlib
import os
import shutil
import struct
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

from jvmos import JvmosError, sites

SYS_PERF_EVENT_OPEN = 298
SYS_BPF = 321
BPF_PROG_GET_FD_BY_ID = 13
BPF_OBJ_GET_INFO_BY_FD = 15
BPF_TASK_FD_QUERY = 20
BPF_ENABLE_STATS = 32
BPF_FD_TYPE_UPROBE, BPF_FD_TYPE_URETPROBE = 4, 5
PERF_EVENT_IOC_ENABLE = 0x2400
PERF_EVENT_IOC_SET_BPF = 0x40042408
PERF_FLAG_FD_CLOEXEC = 1 << 3
PMU_DIR = Path("/sys/bus/event_source/devices/uprobe")

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _syscall(*args) -> int:
    r = _libc.syscall(*args)
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r


class _TaskFdQuery(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_uint32), ("fd", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                ("buf_len", ctypes.c_uint32), ("buf", ctypes.c_uint64),
                ("prog_id", ctypes.c_uint32), ("fd_type", ctypes.c_uint32),
                ("probe_offset", ctypes.c_uint64), ("probe_addr", ctypes.c_uint64)]


class _ProgId(ctypes.Structure):
    _fields_ = [("prog_id", ctypes.c_uint32), ("next_id", ctypes.c_uint32),
                ("open_flags", ctypes.c_uint32), ("_pad", ctypes.c_uint32 * 13)]


class _InfoByFd(ctypes.Structure):
    _fields_ = [("bpf_fd", ctypes.c_uint32), ("info_len", ctypes.c_uint32),
                ("info", ctypes.c_uint64)]


class _ProgInfo(ctypes.Structure):
    # struct bpf_prog_info up to run_cnt (the kernel fills what the length covers)
    _fields_ = [("type", ctypes.c_uint32), ("id", ctypes.c_uint32),
                ("tag", ctypes.c_uint8 * 8), ("jited_prog_len", ctypes.c_uint32),
                ("xlated_prog_len", ctypes.c_uint32), ("jited_prog_insns", ctypes.c_uint64),
                ("xlated_prog_insns", ctypes.c_uint64), ("load_time", ctypes.c_uint64),
                ("created_by_uid", ctypes.c_uint32), ("nr_map_ids", ctypes.c_uint32),
                ("map_ids", ctypes.c_uint64), ("name", ctypes.c_char * 16),
                ("ifindex", ctypes.c_uint32), ("gpl_compatible", ctypes.c_uint32),
                ("netns_dev", ctypes.c_uint64), ("netns_ino", ctypes.c_uint64),
                ("nr_jited_ksyms", ctypes.c_uint32), ("nr_jited_func_lens", ctypes.c_uint32),
                ("jited_ksyms", ctypes.c_uint64), ("jited_func_lens", ctypes.c_uint64),
                ("btf_id", ctypes.c_uint32), ("func_info_rec_size", ctypes.c_uint32),
                ("func_info", ctypes.c_uint64), ("nr_func_info", ctypes.c_uint32),
                ("nr_line_info", ctypes.c_uint32), ("line_info", ctypes.c_uint64),
                ("jited_line_info", ctypes.c_uint64), ("nr_jited_line_info", ctypes.c_uint32),
                ("line_info_rec_size", ctypes.c_uint32),
                ("jited_line_info_rec_size", ctypes.c_uint32), ("nr_prog_tags", ctypes.c_uint32),
                ("prog_tags", ctypes.c_uint64), ("run_time_ns", ctypes.c_uint64),
                ("run_cnt", ctypes.c_uint64)]


def _bpf(cmd: int, attr: ctypes.Structure) -> int:
    return _syscall(SYS_BPF, cmd, ctypes.byref(attr), ctypes.sizeof(attr))


def _attr(type_: int, config: int, path, offset: int):
    """struct perf_event_attr (PERF_ATTR_SIZE_VER5, 112 bytes) for a uprobe of the PMU:
    type, size, config (the retprobe bit), sample_period 1, flags (disabled), wakeup_events 1,
    config1 = the library's path, config2 = the probe's file offset."""
    a = (ctypes.c_uint8 * 112)()
    struct.pack_into("<IIQQ", a, 0, type_, 112, config, 1)
    struct.pack_into("<Q", a, 40, 1)
    struct.pack_into("<IIQQ", a, 48, 1, 0, ctypes.addressof(path), offset)
    return a


def available() -> Optional[str]:
    """None when pid-scoped uprobes can be opened here, else why not."""
    if os.uname().machine != "x86_64":
        return f"pid-scoped uprobes are implemented for x86-64 only (this is {os.uname().machine})"
    if not (PMU_DIR / "type").exists():
        return f"the kernel has no uprobe PMU ({PMU_DIR} is missing)"
    return None


def _pmu() -> Tuple[int, int]:
    type_ = int((PMU_DIR / "type").read_text())
    fmt = (PMU_DIR / "format" / "retprobe").read_text().strip()      # "config:0"
    return type_, 1 << int(fmt.split(":")[1])


# --- decoys --------------------------------------------------------------------------------------
def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "jvmos" / "decoys"


def decoy_of(lib: Path) -> Path:
    """A byte-identical copy of lib that no process maps, made once per library version."""
    st = os.stat(lib)
    key = hashlib.sha256(f"{lib}:{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"
                         .encode()).hexdigest()[:16]
    d = cache_dir() / key
    dst = d / Path(lib).name
    if dst.exists() and dst.stat().st_size == st.st_size:
        return dst
    try:
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / f".{dst.name}.{os.getpid()}"
        shutil.copyfile(lib, tmp)
        os.replace(tmp, dst)
    except OSError as e:
        raise JvmosError(f"cannot make the decoy copy of {lib} in {d}: {e.strerror or e}")
    return dst


def decoys_for(libs) -> Dict[str, str]:
    """{decoy path: library path} for these libraries (decoy_of each)."""
    return {str(decoy_of(real)): str(real) for real in libs}


def retarget(script: str, decoy_of_path: Dict[str, str]) -> str:
    """The script with each library path of a uprobe, uretprobe or usdt attach point replaced
    by its decoy (only attach points: a path in a comment or a string stays)."""
    out = []
    for line in script.splitlines(keepends=True):
        if line.lstrip().startswith(("uprobe:", "uretprobe:", "usdt:")):
            for real, decoy in decoy_of_path.items():
                line = line.replace(f":{real}:", f":{decoy}:")
        out.append(line)
    return "".join(out)


# --- moving bpftrace's uprobes ------------------------------------------------------------------
def bpftrace_uprobes(bt_pid: int) -> List[dict]:
    """bpftrace's uprobe attachments: {fd, prog_id, ret, path, offset} per perf-event descriptor."""
    found = []
    buf = ctypes.create_string_buffer(4096)
    for name in os.listdir(f"/proc/{bt_pid}/fd"):
        try:
            if "perf_event" not in os.readlink(f"/proc/{bt_pid}/fd/{name}"):
                continue
        except OSError:
            continue
        q = _TaskFdQuery(pid=bt_pid, fd=int(name), flags=0, buf_len=len(buf),
                         buf=ctypes.addressof(buf))
        try:
            _bpf(BPF_TASK_FD_QUERY, q)
        except OSError:
            continue
        if q.fd_type in (BPF_FD_TYPE_UPROBE, BPF_FD_TYPE_URETPROBE):
            found.append({"fd": int(name), "prog_id": q.prog_id,
                          "ret": q.fd_type == BPF_FD_TYPE_URETPROBE,
                          "path": buf.value.decode(errors="replace"), "offset": q.probe_offset})
    return found


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


class Scope:
    """The pid-scoped copies of bpftrace's decoy uprobes; close() detaches them."""

    def __init__(self, decoys: Dict[str, str], move_sites: bool = True):
        self.decoys = dict(decoys)          # decoy path -> real library path
        # move each probe to the first instruction the kernel emulates (jvmos.sites), instead
        # of one it must single-step; what was moved, and why, goes to the manifest
        self.move_sites = move_sites
        self.sites: Dict[str, str] = {}
        self.fds: List[int] = []
        self.prog_fds: Dict[int, int] = {}  # prog id -> fd
        self.attached: List[dict] = []      # one per (probe, pid)
        self.pids: List[int] = []
        self.stats_fd: Optional[int] = None
        self.late: List[dict] = []          # processes scoped after the recording began
        self.detach_s: Optional[float] = None
        self.detach_child: Optional[int] = None
        self.lock = threading.Lock()         # attach (the tree thread) against close
        self.closed = False
        self._row: dict = {}

    def attach(self, bt_pid: int, pids: Iterable[int]) -> int:
        """Open every decoy uprobe of bpftrace for these pids; returns how many were opened.
        All or nothing per pid: a pid that is gone (or fails) keeps none of its uprobes (an
        entry probe without its return probe would unbalance the scripts' nesting). A failure
        other than a vanished process is an error. Nothing is opened once the scope closed."""
        with self.lock:
            if self.closed:
                return 0
            type_, retbit = _pmu()
            probes = [p for p in bpftrace_uprobes(bt_pid) if p["path"] in self.decoys]
            n = 0
            for pid in pids:
                if pid in self.pids:
                    continue
                mine, rows = [], []
                try:
                    for p in probes:
                        fd = self._open(type_, retbit, p, pid)
                        if fd is None:              # the process is gone
                            raise ProcessLookupError(pid)
                        mine.append(fd)
                        rows.append(dict(self._row, pid=pid))
                except ProcessLookupError:
                    for fd in mine:
                        _close(fd)
                    continue
                except BaseException:
                    for fd in mine:
                        _close(fd)
                    raise
                self.fds += mine
                self.attached += rows
                self.pids.append(pid)
                n += len(mine)
            return n

    def _open(self, type_: int, retbit: int, p: dict, pid: int) -> Optional[int]:
        """One scoped uprobe with bpftrace's program on it, enabled; None if pid is gone."""
        if p["prog_id"] not in self.prog_fds:
            self.prog_fds[p["prog_id"]] = _bpf(BPF_PROG_GET_FD_BY_ID, _ProgId(prog_id=p["prog_id"]))
        lib = self.decoys[p["path"]]
        shift = 0
        if self.move_sites:
            shift, why = sites.probe_site(lib, p["offset"])
            if shift:
                self.sites[f"{lib}:{p['offset']:#x}"] = why
        at = p["offset"] + shift
        real = ctypes.create_string_buffer(lib.encode())
        attr = _attr(type_, retbit if p["ret"] else 0, real, at)
        try:
            fd = _syscall(SYS_PERF_EVENT_OPEN, ctypes.byref(attr), pid, -1, -1, PERF_FLAG_FD_CLOEXEC)
        except OSError as e:
            if e.errno == errno.ESRCH:
                return None
            raise JvmosError(f"cannot open a uprobe on {lib} +{p['offset']:#x} for pid {pid}: "
                             f"{e.strerror}")
        for req, arg, what in ((PERF_EVENT_IOC_SET_BPF, self.prog_fds[p["prog_id"]],
                                "attach bpftrace's program to"),
                               (PERF_EVENT_IOC_ENABLE, 0, "enable")):
            if _libc.ioctl(fd, req, arg) != 0:
                err = ctypes.get_errno()
                _close(fd)
                raise JvmosError(f"cannot {what} the uprobe on {lib} +{p['offset']:#x} for pid "
                                 f"{pid}: {os.strerror(err)}")
        self._row = {"path": lib, "offset": p["offset"], "site": at, "ret": p["ret"],
                     "prog_id": p["prog_id"]}
        return fd

    def enable_stats(self) -> None:
        """Let the kernel count every run of every BPF program (run_cnt) while the scope is
        open: the check that no other process ran jvmos's programs. Costs two clock reads per
        program run, on every BPF program of the host: off unless asked for."""
        class _Stats(ctypes.Structure):
            _fields_ = [("type", ctypes.c_uint32)]
        self.stats_fd = _bpf(BPF_ENABLE_STATS, _Stats(type=0))

    def run_counts(self) -> Dict[int, int]:
        """Kernel-counted runs per program id (0 unless stats were enabled)."""
        out = {}
        for pid_, fd in self.prog_fds.items():
            info = _ProgInfo()
            q = _InfoByFd(bpf_fd=fd, info_len=ctypes.sizeof(info), info=ctypes.addressof(info))
            try:
                _bpf(BPF_OBJ_GET_INFO_BY_FD, q)
                out[pid_] = int(info.run_cnt)
            except OSError:
                pass
        return out

    def detach(self, background: bool = False) -> None:
        """Close every perf event. Closing one waits for an RCU grace period in the kernel
        (the uprobe is unregistered synchronously, ~0.1-0.2 s each here, under a lock that
        serialises them), and the probe keeps firing meanwhile. background: a forked child
        inherits the descriptors and does the slow closing; this process's own copies close at
        once (a reference each), so jvmos does not wait. Counting has stopped by then
        (common.bt's stop), so nothing the child's seconds see is counted; in --pid mode the
        target still traps until the child is done (detach_seconds says how long it took
        when measured here, null when left to the child)."""
        with self.lock:
            self.closed = True
            fds, self.fds = self.fds, []
        if not fds:
            return
        if background:
            try:
                pid = os.fork()
            except OSError:
                pid = -1
            if pid == 0:
                # the child forks the closer and leaves at once (reaped below, no zombie);
                # the closer keeps only these descriptors, closed without allocating
                try:
                    if os.fork() == 0:
                        os.setsid()
                        keep = sorted(fds)
                        lo = 0
                        for k in keep:
                            os.closerange(lo, k)
                            lo = k + 1
                        os.closerange(lo, 1 << 20)
                        for fd in keep:
                            _close(fd)
                finally:
                    os._exit(0)
            if pid > 0:
                os.waitpid(pid, 0)
                for fd in fds:
                    _close(fd)
                self.detach_child = pid
                return
        t0 = time.monotonic()
        with ThreadPoolExecutor(max_workers=min(64, len(fds))) as ex:
            list(ex.map(_close, fds))
        self.detach_s = round(time.monotonic() - t0, 3)

    def close(self, background: bool = False) -> None:
        """Detach, and let go of the programs and the stats (after as_dict, which reads the
        programs' run counts)."""
        self.detach(background)
        for fd in list(self.prog_fds.values()) + \
                ([self.stats_fd] if self.stats_fd is not None else []):
            _close(fd)
        self.prog_fds, self.stats_fd = {}, None

    def as_dict(self) -> dict:
        d = {"mode": "process", "decoys": self.decoys, "pids": list(self.pids),
             "uprobes_scoped": len(self.attached), "late": list(self.late),
             "sites_moved": dict(sorted(self.sites.items())),
             "detach_seconds": self.detach_s}
        if self.stats_fd is not None:
            # how often the kernel ran each program while the stats were on, with what it is
            # attached to: a program run by another process would show up here
            where = {}
            for a in self.attached:
                where.setdefault(a["prog_id"], {"path": a["path"], "offset": a["offset"],
                                                "ret": a["ret"]})
            d["program_runs"] = [dict(where.get(pid_, {}), prog_id=pid_, runs=n)
                                 for pid_, n in sorted(self.run_counts().items())]
        return d
