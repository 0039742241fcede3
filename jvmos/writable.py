"""Where a verb is told to write (a run directory, the platform file, an export), checked
before anything is measured: a calibration of minutes lost to a path that could never be
written is the failure this prevents.

os.access is no answer for root, who may write anywhere but on a read-only filesystem or the
kernel's own (/proc, /sys): the check makes a temporary file (or, where directories are still
to be made, a temporary directory) where the first write will go, and removes it. Nothing is
left behind, nothing is created for the caller: the caller makes its directories when it
writes."""
import os
import re
import tempfile
from pathlib import Path
from typing import Optional, Tuple

from jvmos import JvmosError

# the kernel's filesystems: no file can be made in them, whatever errno the attempt gets
# (proc answers ENOENT, sysfs EACCES, neither says why)
KERNEL_FS = {"proc", "sysfs", "cgroup", "cgroup2", "debugfs", "tracefs", "securityfs",
             "pstore", "efivarfs", "configfs"}
TEST_PREFIX = ".jvmos-write-test-"


def mount_of(path: Path) -> Optional[Tuple[str, str]]:
    """(mount point, filesystem type) of the mount holding path (/proc/self/mountinfo)."""
    p = os.path.realpath(path)
    best = None
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                fields, rest = left.split(), right.split()
                if len(fields) < 5 or not rest:
                    continue
                mnt = re.sub(r"\\([0-7]{3})", lambda o: chr(int(o.group(1), 8)), fields[4])
                inside = p == mnt or p.startswith(mnt.rstrip("/") + "/")
                if inside and (best is None or len(mnt) >= len(best[0])):
                    best = (mnt, rest[0])
    except OSError:
        return None
    return best


def _why(e: OSError, where: Path) -> str:
    """e's text, and what it means where the errno alone would mislead."""
    m = mount_of(where)
    if m and m[1] in KERNEL_FS:
        return f"{m[0]} is the kernel's {m[1]} filesystem, where no file can be made " \
               f"({e.strerror})"
    if os.geteuid() == 0 and isinstance(e, PermissionError):
        return (f"{e.strerror}, even to root (a root-squashed network filesystem, an "
                "immutable directory or a security module)")
    return e.strerror or str(e)


def problem(path, kind: str = "file", make_parents: bool = True) -> Optional[str]:
    """Why path cannot be written (None when it can): kind "file" (written through a
    temporary file of its directory and a rename, as jvmos writes its files) or "dir" (a
    directory made if missing and written into). make_parents: the writer makes the missing
    directories above it (else they must exist)."""
    p = Path(os.path.abspath(path))
    if kind == "file":
        if p.is_dir():
            return f"{p} is a directory"
        folder = p.parent
    else:
        if p.exists() and not p.is_dir():
            return f"{p} exists and is not a directory"
        folder = p
    # the nearest existing directory above, and the first directory to make under it
    top, first = folder, None
    while not os.path.lexists(top) and top != top.parent:
        top, first = top.parent, top
    if not top.is_dir():
        return f"{top} is not a directory"
    if first is not None and not make_parents:
        return f"{folder} does not exist"
    try:
        if first is None:
            fd, tmp = tempfile.mkstemp(dir=top, prefix=TEST_PREFIX)
            os.close(fd)
            os.unlink(tmp)
        else:
            os.rmdir(tempfile.mkdtemp(dir=top, prefix=TEST_PREFIX))
    except OSError as e:
        what = f"a file in {top}" if first is None else first
        return f"cannot create {what}: {_why(e, top)}"
    return None


def check_writable(path, what: str, kind: str = "file", make_parents: bool = True) -> None:
    """JvmosError, one line naming the cause, when path (what: 'platform file', 'output
    directory', ...) cannot be written; see problem()."""
    why = problem(path, kind, make_parents)
    if why:
        raise JvmosError(f"cannot write to {what} {path}: {why}")
