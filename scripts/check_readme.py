#!/usr/bin/env python3
"""Check that every number README.md prints is in the result file it cites, or is a setting.

Issue 45: the README's figures are checked as REPRODUCTION's are (scripts/check_reproduction.py,
whose scan, scalings, allowlist reasons and claims this reuses), with one difference: a number
is looked for only in the files cited by its own part of the README, not by its whole section.
A part is a paragraph, a list item, a table row or a code block; its citations are the
`results/...` paths it names (a cited file stands for its directory, as in REPRODUCTION), and
its links into results/. The README's sections are its `##`/`###` headings; each row of a table
is a section of its own, "HEADING / FIRST CELL" (`Verbs / agent`, `jvmos run EXPERIMENT /
interventions`), so that an allowlist entry covers the numbers of one row only. The allowlist
and the claims name a section in full (not by the start of its heading, as REPRODUCTION's). Paths under
results/runs/ are where a command writes (examples), not citations.

A number not found there passes only if results/readme-unchecked.tsv lists it for its section
with a reason the check verifies (the kinds of check_reproduction.py, and one more):
    setting: PATH [near "TEXT"]   an option's default, a command's argument, a version pin or
                                  a size the README states: the number is in the source file
                                  PATH of the repository that sets it (jvmos/dutycycle.py, the
                                  Makefile), on a line holding TEXT when given.
    seed NNN / calc: EXPR / git HASH:PATH / in PATH   as in REPRODUCTION's allowlist.
Anything else is counted as unverified. Claims pinning a README figure to a file's cell are in
results/reproduction-claims.json under "readme_claims" (located by an anchor text in the
section, as REPRODUCTION's).

CLI: `python scripts/check_readme.py [--verbose] [--power]`: the same report as
check_reproduction.py; exits 1 on any failure. tests/unit/test_readme_numbers.py runs it.
"""
from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
if "check_reproduction" in sys.modules:
    cr = sys.modules["check_reproduction"]
else:
    _spec = importlib.util.spec_from_file_location("check_reproduction",
                                                   _HERE / "check_reproduction.py")
    cr = importlib.util.module_from_spec(_spec)
    sys.modules["check_reproduction"] = cr
    _spec.loader.exec_module(cr)

ROOT = cr.ROOT
README = ROOT / "README.md"
ALLOWLIST = ROOT / "results" / "readme-unchecked.tsv"

HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
BULLET = re.compile(r"^\s*(?:[*+-]|\d+\.)\s+")
FENCE = re.compile(r"^\s*```")
TABLE_SEP = re.compile(r"^\s*\|[\s:|-]+\|\s*$")


def _key(cell: str) -> str:
    """A table row's name: its first cell without markup."""
    return re.sub(r"\s+", " ", cell.replace("`", "").replace("**", "")).strip()


def readme_sections(doc: str) -> list[cr.Section]:
    """The README's sections (a heading's text; each table row apart), each with its parts."""
    lines = doc.split("\n")
    out: list[cr.Section] = []
    name, start = "intro", 1
    body: list[int] = []           # line indexes of the current heading's section
    parts: list[tuple[int, str]] = []
    cur: list[int] = []            # line indexes of the part being read

    def close_part():
        if cur:
            parts.append((cur[0] + 1, "\n".join(lines[i] for i in cur)))
            cur.clear()

    def close_section():
        close_part()
        out.append(cr.Section(name, start, "\n".join(lines[i] for i in body), list(parts)))
        parts.clear()
        body.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        h = HEADING.match(line)
        if h:
            close_section()
            name, start = _key(h.group(2)), i + 1
            body.append(i)
            parts.append((i + 1, line))
            i += 1
            continue
        if FENCE.match(line):                       # a code block is one part
            close_part()
            j = i + 1
            while j < len(lines) and not FENCE.match(lines[j]):
                j += 1
            cur.extend(range(i, min(j, len(lines) - 1) + 1))
            body.extend(cur)
            close_part()
            i = j + 1
            continue
        if line.lstrip().startswith("|"):           # a table: each row is a section
            close_part()
            header = i
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                if i == header or TABLE_SEP.match(lines[i]):
                    body.append(i)
                    parts.append((i + 1, lines[i]))
                else:
                    cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
                    out.append(cr.Section(f"{name} / {_key(cells[0])}", i + 1, lines[i],
                                          [(i + 1, lines[i])]))
                i += 1
            continue
        body.append(i)
        if not line.strip():
            close_part()
        elif BULLET.match(line):
            close_part()
            cur.append(i)
        else:
            cur.append(i)
        i += 1
    close_section()
    return out


def _not_cited(p: str) -> bool:
    """Where commands write (results/runs/...) is an example, not a result file; REPRODUCTION
    (checked on its own) would stand for the whole of results/."""
    return cr._not_cited(p) or p == "results/runs" or p.startswith("results/runs/")


SPEC = cr.DocSpec(README, ALLOWLIST, cr.CLAIMS, split=readme_sections, link_base="",
                  not_cited=_not_cited, claims_key="readme_claims", exact_sections=True)


def check(doc: str | None = None, allowlist: list | None = None, claims: list | None = None):
    return cr.check(doc=doc, allowlist=allowlist, claims=claims, spec=SPEC)


def read_allowlist() -> list:
    return cr.read_allowlist(ALLOWLIST)


def read_claims() -> list:
    return cr.read_claims(cr.CLAIMS, "readme_claims")


def main(argv: list[str] | None = None) -> int:
    return cr.main(argv, spec=SPEC, description=__doc__.split("\n")[0])


if __name__ == "__main__":
    sys.exit(main())
