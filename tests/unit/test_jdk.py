import mmap
import os
import shutil
import stat
from pathlib import Path

import pytest

from jvmos import JvmosError, jdk
from jvmos.jdk import Jvm, executable_kind, jvm_from_libjvm, maps_of


def _libc_of_this_process():
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and os.path.basename(parts[5].strip()).startswith("libc.so"):
                return parts[5].strip()
    return None


def test_maps_of_this_process_lists_its_libc_and_interpreter():
    libc = _libc_of_this_process()
    if libc is None:
        pytest.skip("this python does not map a shared libc")
    paths = maps_of(os.getpid())
    assert libc in paths
    assert any(os.path.basename(p).startswith("libc.so") for p in paths)
    assert all(p.startswith("/") for p in paths)
    assert len(paths) == len(set(paths))           # each file once, however many mappings
    assert "[heap]" not in paths and "[stack]" not in paths


def test_maps_of_strips_deleted_suffix(tmp_path):
    p = tmp_path / "mapped.bin"
    p.write_bytes(b"\0" * 4096)
    with open(p, "r+b") as f:
        m = mmap.mmap(f.fileno(), 4096)
    try:
        assert str(p) in maps_of(os.getpid())
        p.unlink()
        paths = maps_of(os.getpid())
        assert str(p) in paths
        assert not any(x.endswith("(deleted)") for x in paths)
    finally:
        m.close()


def _unused_pid():
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    for pid in range(pid_max - 1, 1, -1):
        if not os.path.exists(f"/proc/{pid}"):
            return pid
    pytest.skip("no free pid")


def test_maps_of_a_pid_that_does_not_exist():
    pid = _unused_pid()
    with pytest.raises(JvmosError, match=f"no process with pid {pid}"):
        maps_of(pid)


def test_executable_kind_of_bin_sh():
    # /bin/sh is an ELF binary on Debian (dash), but a shell runs other commands, which may be
    # JVMs: it counts as a script (a wrapper), like a shell script would
    assert executable_kind("/bin/sh") == "script"
    assert executable_kind("sh") == "script"                    # looked up on PATH


def _elf_copy(tmp_path, name):
    src = shutil.which("true") or "/bin/true"
    with open(src, "rb") as f:
        if f.read(4) != b"\x7fELF":
            pytest.skip("true is not an ELF binary")
    exe = tmp_path / name
    exe.write_bytes(Path(src).read_bytes())
    exe.chmod(0o755)
    return exe


@pytest.mark.parametrize("name,kind", [("launcher", "native"), ("true", "native"),
                                       ("timeout", "script"), ("bash", "script"),
                                       ("python3.11", "script"), ("env", "script")])
def test_executable_kind_of_elf_binaries_and_wrappers(tmp_path, name, kind):
    assert executable_kind(str(_elf_copy(tmp_path, name))) == kind


def test_executable_kind_of_missing_files(tmp_path):
    assert executable_kind(str(tmp_path / "nope")) == "missing"
    assert executable_kind("jvmos-no-such-command-anywhere") == "missing"


def test_executable_kind_of_a_script(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\nexec java -version\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    assert executable_kind(str(script)) == "script"
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert executable_kind(str(empty)) == "script"


def test_executable_kind_of_an_elf_that_links_the_jvm(tmp_path):
    exe = _elf_copy(tmp_path, "launcher")
    assert executable_kind(str(exe)) == "native"
    with open(exe, "ab") as f:
        f.write(b"\0libjvm.so\0")
    assert executable_kind(str(exe)) == "jvm-embedder"


def fake_jdk(root: Path, version="21.0.2", vendor="Eclipse Adoptium", layout="modern"):
    home = root / "jdk"
    if layout == "modern":
        lib = home / "lib"
        libjvm = lib / "server" / "libjvm.so"
    else:                                            # JDK 8: <home>/jre/lib/amd64/server
        lib = home / "jre" / "lib" / "amd64"
        libjvm = lib / "server" / "libjvm.so"
    libjvm.parent.mkdir(parents=True)
    libjvm.write_bytes(b"\x7fELF")
    (lib / "libjava.so").write_bytes(b"\x7fELF")
    (lib / "libnio.so").write_bytes(b"\x7fELF")
    (home / "bin").mkdir()
    (home / "bin" / "java").write_bytes(b"\x7fELF")
    (home / "release").write_text(f'JAVA_VERSION="{version}"\nIMPLEMENTOR="{vendor}"\n'
                                  'OS_NAME="Linux"\n')
    return home, libjvm, lib


def test_jvm_from_libjvm_of_a_modern_jdk(tmp_path):
    home, libjvm, lib = fake_jdk(tmp_path)
    j = jvm_from_libjvm(libjvm)
    assert j.home == home and j.libjvm == libjvm
    assert (j.version, j.vendor) == ("21.0.2", "Eclipse Adoptium")
    assert j.libjava == lib / "libjava.so"
    assert j.libnio == lib / "libnio.so"
    assert j.as_dict() == {"home": str(home), "libjvm": str(libjvm), "version": "21.0.2",
                           "vendor": "Eclipse Adoptium", "libjava": str(lib / "libjava.so"),
                           "libnio": str(lib / "libnio.so")}


def test_jvm_from_libjvm_of_a_jdk8(tmp_path):
    home, libjvm, lib = fake_jdk(tmp_path, version="1.8.0_402", layout="jdk8")
    j = jvm_from_libjvm(libjvm)
    assert j.home == home
    assert j.version == "1.8.0_402"
    assert j.libjava == lib / "libjava.so"
    assert j.libnio == lib / "libnio.so"


def test_jvm_from_libjvm_without_release_or_libjava(tmp_path):
    libjvm = tmp_path / "x" / "lib" / "server" / "libjvm.so"
    libjvm.parent.mkdir(parents=True)
    libjvm.write_bytes(b"")
    j = jvm_from_libjvm(libjvm)
    assert j.home == tmp_path / "x"
    assert (j.version, j.vendor) == ("unknown", "")
    assert j.libjava is None and j.libnio is None
    assert j.as_dict()["libjava"] is None and j.as_dict()["libnio"] is None


def test_jvm_from_libjvm_with_explicit_libjava(tmp_path):
    home, libjvm, lib = fake_jdk(tmp_path)
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "libjava.so").write_bytes(b"")
    j = jvm_from_libjvm(libjvm, other / "libjava.so")
    assert j.libjava == other / "libjava.so"
    assert j.libnio is None                  # looked for beside libjava.so


def test_executable_kind_of_a_jdk_launcher(tmp_path):
    home, libjvm, lib = fake_jdk(tmp_path)
    assert executable_kind(str(home / "bin" / "java")) == "jvm"
    j = jdk.jvm_of_executable(str(home / "bin" / "java"))
    assert isinstance(j, Jvm) and j.home == home and j.version == "21.0.2"


# ---- USDT notes (readelf -n): HotSpot's static probes, which survive strip

USDT_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "usdt"


def test_parse_stapsdt_reads_every_note_of_a_real_libjvm_excerpt():
    text = (USDT_FIXTURES / "readelf-n-libjvm-openjdk17.txt").read_text()
    probes = jdk.parse_stapsdt(text)
    # six stapsdt notes in the excerpt; the GNU build-id note before them is not one
    assert [(p.provider, p.name) for p in probes] == [
        ("hotspot_jni", "GetStringRegion__return"), ("hotspot_jni", "GetStringRegion__return"),
        ("hotspot_jni", "GetByteArrayRegion__entry"),
        ("hotspot_jni", "GetByteArrayRegion__return"),
        ("hotspot_jni", "SetIntArrayRegion__entry"), ("hotspot", "thread__start")]
    gbar = probes[2]
    assert gbar.pc == 0x8d3781 == 9254785
    assert gbar.base == 0x1066ab7          # = the address of .stapsdt.base in that file
    assert gbar.semaphore == 0             # armed: no counter to raise
    # (env, array, start, len, buf): len is the 4th, a signed 32-bit register
    assert gbar.args.split() == ["8@%r14", "8@%rbx", "-4@%r13d", "-4@%r12d", "8@-88(%rbp)"]
    assert probes[3].args == ""            # __return of a void function carries nothing
    # one probe inlined at two places: two sites of one name
    assert probes[0].pc == 0x8bc190 and probes[1].pc == 0x8bc255
    assert probes[5].args.split()[-1] == "1@%al"


def test_parse_stapsdt_wide_output_keeps_the_provider_on_the_note_line():
    text = (USDT_FIXTURES / "readelf-nW-excerpt.txt").read_text()
    probes = jdk.parse_stapsdt(text)
    assert [(p.provider, p.name, p.pc) for p in probes] == [
        ("hotspot_jni", "GetByteArrayRegion__entry", 0x8d3781),
        ("hotspot_jni", "GetByteArrayRegion__return", 0x8d37ee)]


def test_parse_stapsdt_semaphore_and_no_notes():
    text = ("Displaying notes found in: .note.stapsdt\n"
            "  Owner                Data size \tDescription\n"
            "  stapsdt              0x00000038\tNT_STAPSDT (SystemTap probe descriptors)\n"
            "    Provider: demo\n    Name: hit\n"
            "    Location: 0x0000000000001139, Base: 0x0000000000002004, "
            "Semaphore: 0x0000000000004010\n    Arguments: -4@%edi\n")
    (p,) = jdk.parse_stapsdt(text)
    assert (p.provider, p.name, p.pc, p.base, p.semaphore, p.args) == (
        "demo", "hit", 0x1139, 0x2004, 0x4010, "-4@%edi")
    assert jdk.parse_stapsdt("Displaying notes found in: .note.gnu.build-id\n") == []
    assert jdk.parse_stapsdt("") == []


def _installed_libjvms():
    return [j.libjvm for j in jdk.discover_jdks()]


def test_usdt_probes_of_installed_libjvm_agree_with_readelf():
    """On the real libjvm.so files of this machine (when any is installed)."""
    libs = _installed_libjvms()
    if not libs or not shutil.which("readelf"):
        pytest.skip("no JDK or no readelf here")
    import subprocess
    for lib in libs:
        notes = jdk.usdt_probes(lib)
        out = subprocess.run(["readelf", "-n", str(lib)], capture_output=True, text=True).stdout
        # one parsed site per NT_STAPSDT line readelf prints
        assert sum(len(v) for v in notes.values()) == out.count("NT_STAPSDT")
        for (prov, name), sites in notes.items():
            for s in sites:
                assert f"Name: {name}" in out and f"Location: 0x{s.pc:016x}" in out


def test_usdt_probes_of_a_missing_file_is_empty(tmp_path):
    assert jdk.usdt_probes(tmp_path / "nope.so") == {}


def test_a_librarys_debug_file_is_found_by_its_build_id(tmp_path, monkeypatch):
    """glibc's local functions (__clone3, the futex waits) come from its separate debug file,
    found under DEBUG_ROOT by the library's GNU build id; none there, none found."""
    import subprocess as sp
    lib = jdk.libc_of(None)
    note = sp.run(["readelf", "-n", str(lib)], capture_output=True, text=True).stdout
    bid = next(line.split()[-1] for line in note.splitlines() if "Build ID" in line)
    monkeypatch.setattr(jdk, "DEBUG_ROOT", tmp_path)
    assert jdk.debug_file_of(lib) is None
    (tmp_path / bid[:2]).mkdir()
    (tmp_path / bid[:2] / f"{bid[2:]}.debug").write_bytes(b"")
    assert jdk.debug_file_of(lib) == tmp_path / bid[:2] / f"{bid[2:]}.debug"


def test_symbols_merge_the_debug_files_locals_and_keep_default_versions():
    """jdk.symbols: the library's own names first (a name in two versions is the default
    one, as the engine's placement takes it), then the debug file's local functions."""
    import subprocess as sp
    lib = jdk.libc_of(None)
    dyn = sp.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True,
                 text=True).stdout.split("\n")
    default = [int(x.split()[0], 16) for x in dyn if x.endswith(" sched_getaffinity@@GLIBC_2.3.4")]
    syms = jdk.symbols(lib)
    if default:
        assert syms["sched_getaffinity"] == default[0]
    dbg = jdk.debug_file_of(lib)
    if dbg is None:
        pytest.skip("no libc6-dbg: the merge of local functions cannot be checked")
    local = sp.run(["nm", "--defined-only", str(dbg)], capture_output=True, text=True).stdout
    addr = next(int(x.split()[0], 16) for x in local.splitlines() if x.endswith(" __clone3"))
    assert syms["__clone3"] == addr and "__clone3" not in jdk._nm_symbols(str(lib))
