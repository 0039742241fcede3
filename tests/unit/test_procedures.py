"""The procedures behind committed results (scripts/procedures): the render step re-makes the
committed table from the committed data, byte for byte, and the measuring steps are at least
well-formed (they need root and minutes of recording, so `make test` does not run them)."""
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROC = ROOT / "scripts" / "procedures"


def test_cold_waits_render_remakes_the_committed_table(tmp_path):
    src = ROOT / "results" / "ipc" / "cold-waits"
    (tmp_path / "runs").mkdir()
    shutil.copy(src / "runs" / "cold-waits.json", tmp_path / "runs")
    r = subprocess.run([sys.executable, str(PROC / "ipc_cold_waits_render.py"),
                        str(tmp_path / "runs")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "cold-waits.md").read_text() == (src / "cold-waits.md").read_text()


def test_measuring_procedures_are_well_formed():
    r = subprocess.run([sys.executable, "-m", "py_compile", str(PROC / "ipc_cold_waits.py")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(["bash", "-n", str(PROC / "matmul_sampled.sh")], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    # each names the results directory it writes, which is committed
    assert "results/ipc/cold-waits/runs" in (PROC / "ipc_cold_waits.py").read_text()
    assert (ROOT / "results" / "ipc" / "cold-waits" / "runs").is_dir()
    assert "OUT=results/matmul/sampled" in (PROC / "matmul_sampled.sh").read_text()
    assert (ROOT / "results" / "matmul" / "sampled").is_dir()
