"""The shop's boundary activity in the seconds right after a load: attach first (start gate),
then drive one load, and read the live view's 1-s intervals after it.

  JVMOS_PLATFORM=build/test-platform.json .venv/bin/python scripts/procedures/start_signal_check.py \
      results/start-signal-check
"""
import json, subprocess, sys, time, shutil
from pathlib import Path
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from jvmos.experiments.shop import Shop
from jvmos.jdk import discover_jdks
java = str(discover_jdks()[0].home / "bin" / "java")
base = Path(sys.argv[1]); shutil.rmtree(base, ignore_errors=True); base.mkdir()
with Shop(java, base / "server", 65536) as shop:
    shop.load(4, 100)                           # the experiments' untraced warm-up
    for t, p in [(10, 10), (40, 40)]:
        out = base / f"after-{t}x{p}"
        rec = subprocess.Popen([sys.executable, "-m", "jvmos.cli", "record", "--pid", str(shop.pid),
                                "--interval", "1", "--count", "14", "--layers", "io,threads,links,mem",
                                "--out", str(out)], cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        while not (out / "manifest.json").exists() or not json.loads((out / "manifest.json").read_text()).get("start_time"):
            time.sleep(0.05)
        time.sleep(1.5)
        t0 = time.monotonic(); shop.load(t, p); t1 = time.monotonic()
        o, e = rec.communicate(timeout=900)
        (out / "load-timing.json").write_text(json.dumps({"load_start_after_tracing_s": 1.5, "load_s": t1 - t0}))
        print(out, rec.returncode, f"load {t}x{p} took {t1-t0:.2f}s", e[-300:], flush=True)
