"""jvmos.writable: where a verb writes, checked before it measures; and the cause said to root
when /proc/PID/maps is refused (jvmos.jdk.maps_refused)."""
import errno
import os
import tempfile

import pytest

from jvmos import JvmosError, jdk, writable
from jvmos.writable import check_writable, problem


def listing(d):
    return sorted(str(p.relative_to(d)) for p in d.rglob("*"))


def test_a_writable_place_passes_and_nothing_is_left(tmp_path):
    (tmp_path / "d").mkdir()
    assert problem(tmp_path / "d" / "x.json") is None                      # a new file
    assert problem(tmp_path / "a" / "b" / "x.json") is None                # parents to make
    assert problem(tmp_path / "run", "dir") is None
    assert problem(tmp_path / "d", "dir") is None                          # an existing one
    assert listing(tmp_path) == ["d"]


@pytest.mark.parametrize("make, path, kind, says", [
    ("dir", "p", "file", "{t}/p is a directory"),
    ("file", "p/x.json", "file", "{t}/p is not a directory"),
    ("file", "p/a/b", "dir", "{t}/p is not a directory"),
    ("file", "p", "dir", "{t}/p exists and is not a directory"),
])
def test_the_wrong_kind_of_thing_is_named(tmp_path, make, path, kind, says):
    p = tmp_path / "p"
    p.mkdir() if make == "dir" else p.write_text("x")
    assert problem(tmp_path / path, kind) == says.format(t=tmp_path)
    assert listing(tmp_path) == ["p"]


def test_a_missing_directory_the_writer_does_not_make(tmp_path):
    assert problem(tmp_path / "no" / "x.prom", make_parents=False) == \
        f"{tmp_path / 'no'} does not exist"


@pytest.mark.skipif((writable.mount_of("/proc") or ("", ""))[1] != "proc",
                    reason="no proc filesystem at /proc")
def test_the_kernels_filesystem_is_named_not_its_errno():
    why = problem("/proc/1/nonexistent/x.json")
    assert why.startswith("cannot create /proc/1/nonexistent: /proc is the kernel's proc "
                          "filesystem, where no file can be made ("), why
    with pytest.raises(JvmosError, match=r"^cannot write to platform file /proc/x.json: "
                                         r"cannot create a file in /proc: /proc is the kernel"):
        check_writable("/proc/x.json", "platform file")


def refuse(err):
    def boom(*a, **k):
        raise err
    return boom


def test_a_read_only_filesystem(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "mkstemp", refuse(OSError(errno.EROFS,
                                                            os.strerror(errno.EROFS))))
    monkeypatch.setattr(writable, "mount_of", lambda p: ("/", "ext4"))
    assert problem(tmp_path / "x") == f"cannot create a file in {tmp_path}: " \
                                      "Read-only file system"


def test_permission_refused_to_root_is_not_explained_as_needing_root(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "mkdtemp", refuse(PermissionError(errno.EACCES,
                                                                    "Permission denied")))
    monkeypatch.setattr(writable, "mount_of", lambda p: ("/", "nfs"))
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    why = problem(tmp_path / "new" / "x")
    assert why.startswith(f"cannot create {tmp_path / 'new'}: Permission denied, even to root")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert problem(tmp_path / "new" / "x") == f"cannot create {tmp_path / 'new'}: " \
                                              "Permission denied"


def test_mount_of_the_root():
    assert writable.mount_of("/")[0] == "/"


# ---- /proc/PID/maps refused -----------------------------------------------------------------

DENIED = PermissionError(errno.EACCES, "Permission denied")
ALL_CAPS = (1 << 41) - 1


def test_maps_refused_to_a_user_tells_to_run_as_root(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert jdk.maps_refused(os.getpid(), DENIED) == "run jvmos as root"


def test_maps_refused_to_root_names_the_cause(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(jdk, "cap_eff", lambda: ALL_CAPS)
    why = jdk.maps_refused(os.getpid(), DENIED)
    assert "root" in why and "run jvmos as root" not in why
    assert why.startswith(f"Permission denied to root for pid {os.getpid()} (")
    assert "ptrace access check" in why
    monkeypatch.setattr(jdk, "cap_eff", lambda: ALL_CAPS & ~(1 << jdk.CAP_SYS_PTRACE))
    assert "without CAP_SYS_PTRACE" in jdk.maps_refused(os.getpid(), DENIED)


def test_maps_of_says_another_errno_as_it_is(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert jdk.maps_refused(1, OSError(errno.EIO, "Input/output error")) == "Input/output error"
