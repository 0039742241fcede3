"""README.md prints only numbers that scripts/check_readme.py finds in the result files its own
paragraph, list item or table row cites, or that results/readme-unchecked.tsv lists with a
reason the check verifies (a setting in the source file that sets it, a file, a calculation)
(issue 45). A stale README figure and a stale allowlist entry each fail, and the check says
which number."""
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if "check_reproduction" not in sys.modules:
    _s = importlib.util.spec_from_file_location("check_reproduction",
                                                ROOT / "scripts" / "check_reproduction.py")
    _m = importlib.util.module_from_spec(_s)
    sys.modules["check_reproduction"] = _m
    _s.loader.exec_module(_m)
_spec = importlib.util.spec_from_file_location("check_readme", ROOT / "scripts" / "check_readme.py")
crm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(crm)
cr = crm.cr

DOC = crm.README.read_text(encoding="utf-8")


def planted(old: str, new: str) -> str:
    assert DOC.count(old) == 1, f"not exactly once in README.md: {old!r}"
    return DOC.replace(old, new)


def test_committed_readme_passes():
    report = crm.check()
    assert report.ok, "\n".join(map(str, report.failures))
    checked = sum(r.checked for r in report.sections)
    found = sum(r.found for r in report.sections)
    allowed = sum(sum(r.allowed.values()) for r in report.sections)
    assert checked > 200 and checked == found + allowed
    assert any(r.allowed.get("setting") for r in report.sections)
    assert any(r.allowed.get("calc") for r in report.sections)


def test_stale_readme_figure_fails_and_is_named():
    # the held-out keep-alive ratio, as if the README kept an older run's reading
    doc = planted("keep-alive reads 1.01 [−0.20, 2.22]", "keep-alive reads 1.48 [−0.20, 2.22]")
    report = crm.check(doc=doc)
    assert {(f.kind, f.number) for f in report.failures} == {("unfound", "1.48")}
    (f,) = report.failures
    assert f.section.endswith("/ held-out")


def test_figure_is_looked_up_in_its_own_citations_only():
    # 0.62 is h2's ratio in results/probe-effect; in a paragraph that cites only
    # results/demo-timing it fails
    # (in its own paragraph, which cites results/probe-effect, it is found: the committed
    # README passes, test_committed_readme_passes)
    assert "0.62 [0.49, 0.81]" in DOC and "results/probe-effect" in DOC
    doc = planted("`make demo` took 7 min 45 s", "`make demo` took 0.62 min 45 s")
    report = crm.check(doc=doc)
    assert {(f.kind, f.number) for f in report.failures} == {("unfound", "0.62")}


def test_stale_setting_fails():
    # the agent's default limit, if the README said 3%
    doc = planted("(default 2% of its CPU;", "(default 3% of its CPU;")
    report = crm.check(doc=doc)
    assert ("unfound", "3") in {(f.kind, f.number) for f in report.failures}


def test_stale_allowlist_entry_fails():
    entries = crm.read_allowlist()
    entries.append(cr.Allowed("Limits", "7.7", "setting: jvmos/doctor.py", 9999))
    report = crm.check(allowlist=entries)
    assert [(f.kind, f.number) for f in report.failures] == [("stale-allowlist", "7.7")]


def test_setting_reason_is_verified():
    entries = crm.read_allowlist()
    for a in entries:
        if a.section == "Verbs / agent" and a.number == "2":
            a.reason = 'setting: jvmos/agentconfig.py near "DEFAULT_INTERVAL_S"'   # 5.0, not 2
    report = crm.check(allowlist=entries)
    assert [(f.kind, f.number) for f in report.failures] == [("bad-reason", "2")]


def test_readme_sections_split_table_rows_and_parts():
    secs = {s.name: s for s in crm.readme_sections(DOC)}
    assert "jvmos run EXPERIMENT / held-out" in secs and "Verbs / agent" in secs
    # a paragraph's citations stay with it
    (first, text), = secs["jvmos run EXPERIMENT / held-out"].parts()
    dirs, missing = cr.cited_paths(text, cr.ROOT, "", crm._not_cited)
    assert not missing and cr.ROOT / "results/predictions/held-out-libc-hooks" in dirs
