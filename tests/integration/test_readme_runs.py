"""The README's commands, run (issue 32): every `jvmos` command the README shows is either run
here as a user would type it, on a bounded program of the test's own, or named below with
the reason it is not (a service, a foreign pid, minutes of measuring, covered by its own
test). A README command in neither list fails, so the README cannot drift from what the tool
does. Placeholders (app.jar, RUN_DIR, RUN, a dated run directory) are replaced by the test's
recordings; everything else is typed as written. tests/unit/test_readme_commands.py parses
every command against the CLI as well."""
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, can_trace, run_jvmos

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")]

sys.path.insert(0, str(ROOT / "tests" / "unit"))
from test_readme_commands import COMMANDS, VERBS  # noqa: E402

# not run here, and why (each is a README command as the parse test lists it)
NOT_RUN = {
    "jvmos agent": "a service that runs until stopped: tests/integration/test_agent.py runs it",
    "jvmos agent --config /etc/jvmos/agent.toml": "a service (test_agent.py runs it with a config)",
    "jvmos agent --match user=app --layers io,threads": "a service (test_agent.py: --match)",
    "jvmos agent --match user=app,main=com.example.* --match jar=*/orders.jar --layers io,threads":
        "a service (test_agent.py: --match)",
    "jvmos agent --sample": "a service (test_agent.py: test_sample_serves_a_cpu_profile_as_pprof)",
    "jvmos agent --otlp-endpoint http://127.0.0.1:4318":
        "a service (test_agent.py: test_otlp_push_reaches_a_real_collector)",
    "jvmos record --pid 4242 --duration 30": "a foreign pid (test_record.py attaches --pid)",
    "jvmos run": "the verb alone, named in prose",
    "jvmos run blocking-io": "the full-scale experiment, minutes (test_experiments.py: --quick)",
    "jvmos run interventions": "minutes of paired runs (test_interventions.py)",
    "jvmos run accuracy": "minutes of paired runs with the sampler",
    "jvmos run probe-effect": "minutes of paired runs (its unit tests, results/probe-effect)",
    "jvmos run jni-census --quick": "over a minute (test_experiments.py runs the census)",
    "jvmos calibrate --force": "measures everything again, minutes",
    "jvmos calibrate --trials 3": "make demo's first calibration, about a minute and a half "
                                  "(the test session calibrates with it: conftest.py)",
    "jvmos calibrate --probes": "minutes (test_calibrate.py)",
    "jvmos calibrate --sampler": "make test's calibration runs it (Makefile; conftest.py "
                                 "without one); test_agent.py checks what it measured",
    "jvmos calibrate --constants --chunk 8192": "minutes (test_calibrate.py)",
    "jvmos calibrate --in-situ": "tens of minutes of servers (test_theta.py fits a small one)",
    "jvmos predict --from-run RUN --what-if NAME": "NAME stands for any change: the line "
                                                   "above runs two of them",
}

APP = r"""
import java.io.FileOutputStream;
public class App {
    public static void main(String[] a) throws Exception {
        byte[] b = new byte[64];
        try (FileOutputStream out = new FileOutputStream(a.length > 0 ? a[0] : "/dev/null")) {
            for (int i = 0; i < 5000; i++) out.write(b);
        }
    }
}
"""


@pytest.fixture(scope="module")
def app_dir(tmp_path_factory):
    """app.jar: a program that makes exactly 5,000 writes of 64 bytes and ends."""
    d = tmp_path_factory.mktemp("readme")
    (d / "App.java").write_text(APP)
    subprocess.run(["javac", "-d", str(d / "classes"), str(d / "App.java")], check=True)
    subprocess.run(["jar", "--create", "--file", str(d / "app.jar"), "--main-class", "App",
                    "-C", str(d / "classes"), "."], check=True)
    return d


def _typed(cmd: str, cwd: Path, env: dict, timeout: float = 120) -> subprocess.CompletedProcess:
    argv = shlex.split(cmd)
    assert argv[0] == "jvmos"
    r = subprocess.run([str(ROOT / ".venv/bin/jvmos"), *argv[1:]], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"`{cmd}` exited {r.returncode}: {r.stderr[-1500:]}"
    return r


def _recorded(before: set) -> Path:
    runs = ROOT / "results" / "runs"
    new = [p for p in runs.glob("*-record") if p not in before
           and "app.jar" in (p / "manifest.json").read_text()]
    assert len(new) == 1, new
    return new[0]


def test_every_readme_command_runs_or_says_why_not(app_dir, own_platform, tmp_path):
    import os
    env = dict(os.environ, **own_platform)
    seen = {cmd for _, cmd in COMMANDS}
    ran = set()

    def run(cmd: str, **subs) -> subprocess.CompletedProcess:
        assert cmd in seen, f"`{cmd}` is no longer in the README: update this test"
        ran.add(cmd)
        typed = cmd
        for k, v in subs.items():
            typed = typed.replace(k, str(v))
        return _typed(typed, cwd=app_dir, env=env)

    runs = ROOT / "results" / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    made = []
    try:
        for _ in range(2):          # a before and an after for diff
            before = set(runs.glob("*-record"))
            run("jvmos record -- java -jar app.jar")
            made.append(_recorded(before))
        rec, other = made
        s = json.loads((rec / "summary.json").read_text())
        assert s["status"] == "complete"
        run("jvmos doctor")
        text = run("jvmos report results/runs/20261122-150000-record",
                   **{"results/runs/20261122-150000-record": rec}).stdout
        # the program's 5,000 writes, each one JNI copy (the JVM adds its own: jar, startup)
        jni = re.search(r"^\| jni_copy \| ([\d,]+) \|", text, re.M)
        assert jni and int(jni.group(1).replace(",", "")) >= 5000, text[:2000]
        run("jvmos report --html RUN_DIR", RUN_DIR=rec)
        assert (rec / "report.html").is_file()
        run("jvmos export RUN_DIR --format openmetrics", RUN_DIR=rec)
        om = (rec / "metrics.prom").read_text()
        assert om.rstrip().endswith("# EOF") and "jni_copy" in om, om[-300:]
        run("jvmos record -h")
        run("jvmos calibrate")
        run("jvmos report results/memory/runs/h2",
            **{"results/memory/runs/h2": ROOT / "results/memory/runs/h2"})
        run("jvmos index results/matmul", **{"results/matmul": _copy(ROOT / "results/matmul",
                                                                     tmp_path)})
        bio = _copy(ROOT / "results/blocking-io", tmp_path)
        (bio / "table3.md").unlink()
        run("jvmos run blocking-io --render results/blocking-io",
            **{"results/blocking-io": bio})
        assert "Table 3" in (bio / "table3.md").read_text()      # written again
        run("jvmos predict --connections 100 --chunks 133 --exec-time-ms 1000")
        run("jvmos predict --from-run results/tomcat/runs/40x40",
            **{"results/tomcat/runs/40x40": ROOT / "results/tomcat/runs/40x40"})
        run("jvmos predict --from-run RUN", RUN=rec)
        # a change's prediction needs the layers that count its uses: a committed server run
        run("jvmos predict --from-run RUN --what-if thread-pool,keep-alive --keep 8",
            RUN=ROOT / "results/tomcat/runs/40x40")
        run("jvmos diff RUN_BEFORE RUN_AFTER", RUN_BEFORE=rec, RUN_AFTER=other)
        # keep-alive's prediction needs the links layer: the committed recordings of the
        # keep-alive intervention, each taken as three repeats
        ka = ROOT / "results/interventions/keep-alive"
        three = lambda p: ",".join([str(p)] * 3)      # noqa: E731 (repeats of one run)
        run("jvmos diff b1,b2,b3 a1,a2,a3 --what-if keep-alive --units 2000,2000 --unit page "
            "--out /tmp/d", **{"b1,b2,b3": three(ka / "recorded-A/rec"),
                               "a1,a2,a3": three(ka / "recorded-B/rec"), "/tmp/d": tmp_path / "d"})
        assert (tmp_path / "d" / "diff.md").is_file()
        pprof = "jvmos export RUN_DIR --format pprof"
        sampled = _sampled(app_dir, env, tmp_path)
        run(pprof, RUN_DIR=sampled)
        assert (sampled / "profile.pb.gz").is_file()
    finally:
        for p in made:
            shutil.rmtree(p, ignore_errors=True)
    left = seen - ran - set(NOT_RUN)
    # a verb named alone in prose ("`jvmos report` reprints it"): the parse test checks it
    bare = {c for c in left if len(shlex.split(c)) == 2 and shlex.split(c)[1] in VERBS}
    assert not (left - bare), f"README commands neither run nor excused: {sorted(left - bare)}"
    assert not (set(NOT_RUN) - seen), f"excused but no longer in the README: " \
                                      f"{sorted(set(NOT_RUN) - seen)}"


def _copy(src: Path, tmp: Path) -> Path:
    """An experiment folder copied, so that the page index writes is not left in the tree."""
    dst = tmp / src.name
    shutil.copytree(src, dst)
    return dst


def _sampled(app_dir: Path, env: dict, tmp: Path) -> Path:
    out = tmp / "sampled"
    r = run_jvmos(["record", "--mode", "sample", "--out", str(out), "--", "java", "-jar",
                   str(app_dir / "app.jar")], env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-1500:]
    return out
