"""What the container needs of jvmos: a JDK of another mount namespace is never run as if it
were this one's (jdk.runs_elsewhere, calibrate.ensure_calibrated), and the build is handed
only the CAs the host trusts beyond Debian's (scripts/extra-cas.py)."""
import subprocess
import sys
from pathlib import Path

import pytest

from jvmos import calibrate
from jvmos.jdk import Jvm, runs_elsewhere

ROOT = Path(__file__).resolve().parents[2]


def test_a_jdk_through_proc_root_runs_elsewhere_and_a_local_one_here():
    away = Jvm(libjvm=Path("/proc/42/root/usr/lib/jvm/j/lib/server/libjvm.so"),
               home=Path("/proc/42/root/usr/lib/jvm/j"), version="17")
    here = Jvm(libjvm=Path("/usr/lib/jvm/j/lib/server/libjvm.so"), home=Path("/usr/lib/jvm/j"))
    assert "another mount namespace" in runs_elsewhere(away)
    assert runs_elsewhere(here) is None


def test_ensure_calibrated_runs_no_jdk_of_another_namespace(tmp_path, monkeypatch):
    away = Jvm(libjvm=Path("/proc/42/root/usr/lib/jvm/j/lib/server/libjvm.so"),
               home=Path("/proc/42/root/usr/lib/jvm/j"), version="17")
    ran = []
    monkeypatch.setattr(calibrate, "calibrate_nio", lambda j: ran.append(("nio", j)) or {})
    monkeypatch.setattr(calibrate, "calibrate_jni", lambda j, p, log: ran.append(("jni", j)))
    monkeypatch.setattr(calibrate, "save", lambda f, p: None)
    from jvmos import enginecost
    monkeypatch.setattr(enginecost, "incomplete", lambda probes, layers: False)
    platform = {"copy": {"nio_heap_to_direct": {}, "jni_region": {}}, "engine_probes": {}}
    said = []
    got = calibrate.ensure_calibrated(platform, tmp_path / "p.json", [away], ["io"], "count",
                                      log=said.append)
    assert ran == [] and got["copy"]["nio_heap_to_direct"] == {}
    assert any("counted, without a time" in m for m in said)


PEM = ("-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n")


def test_extra_cas_prints_only_what_debian_does_not_ship(tmp_path):
    shipped = sorted(Path("/usr/share/ca-certificates/mozilla").glob("*.crt"))
    if not shipped:
        pytest.skip("no ca-certificates package here")
    debian = shipped[0].read_text()
    mine = PEM.format("TUlJQmZha2VDQWZvcnRoZXRlc3Q=")
    bundle = tmp_path / "bundle.crt"
    bundle.write_text(debian + mine)
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "extra-cas.py"), str(bundle)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == mine.split()
    assert "1 of the 2 certificates" in r.stderr
