"""Two checkouts of one commit build byte-identical BPF objects and engine (issue 32): the
Makefile's own rules run in two copies of the sources at paths of different lengths, and the
outputs are compared byte for byte. clang's debug info would otherwise hold the checkout's
absolute path (-ffile-prefix-map maps it to '.'), and Go's -trimpath drops the module path.
The common object and the Go types of its records come from bpf2go, run in each copy."""
import filecmp
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VMLINUX = ROOT / "build" / "vmlinux.h"

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not (shutil.which("clang") and VMLINUX.is_file()),
                                 reason="needs clang and build/vmlinux.h (make build)")]


def _checkout(dest: Path) -> Path:
    dest.mkdir(parents=True)
    shutil.copy(ROOT / "Makefile", dest)
    # bpf2go's outputs are left behind: each checkout generates its own
    shutil.copytree(ROOT / "probes", dest / "probes",
                    ignore=shutil.ignore_patterns("*_bpfel.*"))
    shutil.copytree(ROOT / "scripts", dest / "scripts")
    (dest / "build").mkdir()
    shutil.copy(VMLINUX, dest / "build")
    return dest


def test_two_checkouts_build_the_same_bytes(tmp_path):
    objs = [f"build/probes/{p.name[:-len('.c')]}.o"
            for p in sorted((ROOT / "probes").glob("*.bpf.c"))]
    assert objs, "no BPF program found"
    dirs = [_checkout(tmp_path / "a"), _checkout(tmp_path / "checkout-with-a-longer-path")]
    for d in dirs:
        r = subprocess.run(["make", "-s", *objs, "build/jvmos-engine"], cwd=d,
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
    for d in dirs:
        assert (d / "probes/engine/common_bpfel.go").is_file(), "bpf2go did not run"
    for o in objs + ["build/jvmos-engine", "probes/engine/common_bpfel.go"]:
        a, b = dirs[0] / o, dirs[1] / o
        assert filecmp.cmp(a, b, shallow=False), f"{o} differs between the two checkouts"
    # and the path of neither checkout is inside any of them
    for o in objs:
        data = (dirs[1] / o).read_bytes()
        assert str(dirs[1]).encode() not in data and str(dirs[0]).encode() not in data
