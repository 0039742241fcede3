"""scripts/surefire-summary.py: a skipped Java test is named with its reason, not hidden."""
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "surefire-summary.py"

REPORT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="org.x.FontTest" tests="3" errors="0" skipped="1" failures="0">
  <testcase name="draws" classname="org.x.FontTest"/>
  <testcase name="fonts" classname="org.x.FontTest">
    <skipped message="Assumption failed: no usable fonts: install fontconfig"/>
  </testcase>
  <testcase name="size" classname="org.x.FontTest"/>
</testsuite>
"""


def run(root):
    return subprocess.run([sys.executable, str(SCRIPT), str(root)], capture_output=True,
                          text=True)


def test_skipped_test_is_named_with_its_reason(tmp_path):
    d = tmp_path / "io" / "target" / "surefire-reports"
    d.mkdir(parents=True)
    (d / "TEST-org.x.FontTest.xml").write_text(REPORT)
    r = run(tmp_path)
    assert r.returncode == 0
    # 3 tests, 1 skipped -> 2 ran
    assert "java tests: 2 ran, 1 skipped, 0 failed, 0 errors (1 suites)" in r.stdout
    assert ("SKIPPED org.x.FontTest.fonts: Assumption failed: no usable fonts: install "
            "fontconfig") in r.stdout


def test_no_report_means_the_tests_did_not_run(tmp_path):
    r = run(tmp_path)
    assert r.returncode == 1
    assert "did not run" in r.stdout
