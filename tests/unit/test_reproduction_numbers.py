"""results/REPRODUCTION.md quotes only numbers that scripts/check_reproduction.py finds in the
files each section cites, in the allowlist with a reason it can verify, or pinned by a claim
(issue 25, "One source for every number"). A stale quote, a stale allowlist entry and a stale
claim each fail, and the check says which number."""
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("check_reproduction",
                                               ROOT / "scripts" / "check_reproduction.py")
cr = importlib.util.module_from_spec(_spec)
sys.modules["check_reproduction"] = cr
_spec.loader.exec_module(cr)

DOC = cr.DOC.read_text(encoding="utf-8")
HAVE_SEEDS = bool(cr.seed_numbers("004"))      # ../shared/seeds beside the repository


def planted(old: str, new: str) -> str:
    """The committed document with one quote replaced (the text must occur once)."""
    assert DOC.count(old) == 1, f"not exactly once in REPRODUCTION.md: {old!r}"
    return DOC.replace(old, new)


def reported(report) -> set[str]:
    return {f.number for f in report.failures}


def test_committed_document_passes():
    report = cr.check()
    assert report.ok, "\n".join(map(str, report.failures))
    # the check covers the whole document and every kind of evidence
    assert sum(r.checked for r in report.sections) > 2000
    assert sum(r.claims for r in report.sections) >= 10
    assert any(r.allowed.get("calc") for r in report.sections)
    if HAVE_SEEDS:
        assert any(r.allowed.get("seed") for r in report.sections)


def test_stale_figure2_percentage_fails():
    doc = planted("| 109.0 ms | **6.46%** |", "| 109.0 ms | **6.64%** |")
    report = cr.check(doc=doc)
    assert reported(report) == {"6.64"}
    assert any(f.kind == "claim" and "figure2-overhead-10x10" in f.where
               for f in report.failures)


def test_copyin_count_quoted_as_write_calls_fails():
    # 1,000,088 is in the files (the copyin estimate's I/O syscalls): only the claim on the
    # write(2) row can tell it is not the write count
    doc = planted("| 1,000,001 / 10 MB | 1,000,011 / 10 MB | 1,000,011 / 10 MB |",
                  "| 1,000,001 / 10 MB | 1,000,088 / 10 MB | 1,000,011 / 10 MB |")
    report = cr.check(doc=doc)
    assert reported(report) == {"1,000,088"}
    assert [f.kind for f in report.failures] == ["claim"]


def test_stale_number_in_prose_fails():
    doc = planted("at 40 rooms 337,003\nrun-queue waits", "at 40 rooms 337,030\nrun-queue waits")
    report = cr.check(doc=doc)
    assert reported(report) == {"337,030"}
    (f,) = report.failures
    assert f.kind == "unfound" and f.section.startswith("Figure 1")


def test_stale_page_fault_cost_fails():
    # the per-fault cost Table 6 used to quote
    doc = planted("× the calibrated cost of a first touch (1.307 µs,",
                  "× the calibrated cost of a first touch (1.46 µs,")
    report = cr.check(doc=doc)
    assert "1.46" in reported(report)
    assert reported(report) <= {"1.46"}


def test_stale_allowlist_entry_fails():
    entries = cr.read_allowlist()
    entries.append(cr.Allowed("Figure 2", "0.123", "git 9573343:results/tomcat/figure2.md", 9999))
    report = cr.check(allowlist=entries)
    assert [(f.kind, f.number) for f in report.failures] == [("stale-allowlist", "0.123")]


def test_allowlisted_number_removed_from_the_text_leaves_a_stale_entry():
    doc = planted("52,087 and 72,038 first-touch faults", "52,087 and 72,308 first-touch faults")
    report = cr.check(doc=doc)
    kinds = {(f.kind, f.number) for f in report.failures}
    assert kinds == {("unfound", "72,308"), ("stale-allowlist", "72,038")}


@pytest.mark.skipif(not HAVE_SEEDS, reason="no ../shared/seeds beside the repository")
def test_seed_and_calc_reasons_are_verified():
    entries = cr.read_allowlist()
    for a in entries:
        if a.section == "Seed 000" and a.number == "53.39":
            a.reason = "seed 001 Table 4.1"            # not a number of seed 001
        if a.section == "Figure 1" and a.number == "158":
            a.reason = "calc: (12.4 + 19.3) / 100 * 1000"    # 317, not 158
    report = cr.check(allowlist=entries)
    assert {(f.kind, f.number) for f in report.failures} == {("bad-reason", "53.39"),
                                                             ("bad-reason", "158")}


def test_claim_whose_file_value_moved_fails():
    claims = cr.read_claims()
    (c,) = [c for c in claims if c["id"] == "figure2-overhead-40x40"]
    c["expected"] = "4.40"                   # as if the document and the claim were edited
    doc = planted("| 722.5 ms | **4.04%** |", "| 722.5 ms | **4.40%** |")
    report = cr.check(doc=doc, claims=claims)
    msgs = [f.message for f in report.failures if f.kind == "claim"]
    assert len(msgs) == 1 and "figure2.csv gives 4.04" in msgs[0]


def test_missing_cited_path_fails():
    doc = planted("`results/heuristic/engine-bpf/\ntable7.md`", "`results/heuristic/engine-bpf/\n"
                  "table7.md` and results/heuristic/gone")
    report = cr.check(doc=doc)
    assert [(f.kind, f.number) for f in report.failures] == [("missing-path",
                                                               "results/heuristic/gone")]


@pytest.mark.parametrize("text,expected", [
    ("re-made 24 Nov 2026, 207 s", ["207"]),                        # date dropped
    ("OpenJDK 17.0.15 and Temurin 25 took 7.19 ms", ["7.19"]),       # versions dropped
    ("commit d7acf25 at 16:08, commit 9573343", []),                # hashes and clock times
    ("see Table 3 and Figures 3–4, eq. 4", []),                     # references
    ("at 10×10 and 640×480, 3 trials, 2 cores", []),                # labels, small integers
    ("1,000,011 calls of 10⁶", ["1,000,011"]),                      # thousands, powers of ten
    ("`--trials 3 --out results/x` gave 0.61–2.33", ["0.61", "2.33"]),
])
def test_what_the_scan_reads(text, expected):
    assert [q.text for q in cr.quotes_in("s", text, 1)] == expected


def test_units_carry_along_ranges_and_lists():
    qs = cr.quotes_in("s", "74.0 / 146.7 / 252.8 → 64.0 ms, and 0.1–94 ms", 1)
    assert {q.unit for q in qs} == {"ms"}


def test_scalings():
    vals = {None: sorted([0.064619, 7147369.5]), "ns": [661.68]}
    assert cr.matches(vals, 6.46, 2, "%")            # a fraction printed as a percent
    assert not cr.matches(vals, 6.64, 2, "%")
    assert cr.matches(vals, 7.15, 2, "ms")           # ns printed as ms
    assert cr.matches(vals, 0.66, 2, "µs")           # a value the file labels ns
    assert not cr.matches(vals, 0.66, 2, None)       # ... is not a unitless 0.66
    assert not cr.matches(vals, 7.1, 2, "ms")        # printed precision is kept


def test_calc_evaluates_plain_arithmetic_only():
    assert cr.calc("(12.4 + 19.3) / 200 * 1000") == pytest.approx(158.5)
    assert cr.calc("round(21.62e3 / 137.45, -1)") == 160
    with pytest.raises(ValueError):
        cr.calc("__import__('os')")
