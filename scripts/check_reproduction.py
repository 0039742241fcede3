#!/usr/bin/env python3
"""Check that every number results/REPRODUCTION.md quotes is in the files it cites.

Issue 25, "One source for every number": the prose quotes only numbers that this check finds
in the cited result files; a stale quote fails `tests/unit/test_reproduction_numbers.py`.

Three checks, per `## ` section of REPRODUCTION.md (the text before the first `## ` is the
section "intro"; `###` subsections belong to their `##` section):

1. Scan. Every number the section prints must occur, at its printed precision, in the result
   files under the paths the section cites.
   - Cited paths: every `results/...` path in the section (commands included: `--out
     results/x`), and the image links (`](tomcat/figure2.png)` is results/tomcat). A cited file
     stands for its directory. A cited path that does not exist is a failure (a path under
     /tmp is not a cited path).
   - Files searched: every .md, .csv and .json under a cited directory, recursively. That
     includes each recording's runs/*/summary.json (the prose quotes raw recordings too) and
     manifest.json, without the manifest's probe addresses, pids and host facts (numbers no
     prose quotes, which would only let wrong quotes pass by chance). Not searched: the
     tracers' raw output (any `raw/` directory), the probe plans (probes.plan.json), a
     workload's stdout.txt or .jsonl (an allowlist entry "in PATH" names those). Numbers are
     read from CSV cells, JSON values, keys and strings, and Markdown text. The whole check
     reads 2,000-odd files in about 3 s.
   - Precision: a quote printed with d decimals is found when some file value v, times one of
     the scalings its unit allows, lies within half a unit of the d-th decimal of it
     (|v * k - q| <= 0.5 * 10**-d). Signs are ignored (a "−94.8 ms" is found as 94.8).
   - Scalings, by the unit printed right after the number, or after the next number it is
     joined to ("0.61–2.33", "74.0 / 146.7 ms", "13.8 → 15.5%", "12.4 + 19.3 ms", "931.9 of
     940.5 ms"):
       no unit, ×                1 only
       %                         1, or 100 (a fraction in the file)
       ns, µs, ms, s             the file's value in ns, µs, ms or s (k = 10**(3 i), |i| <= 3)
       B, kB/KB, MB, GB          1, or the file's bytes / 10**3, 10**6, 10**9
       KiB, MiB, GiB             1, or the file's bytes / 2**10, 2**20, 2**30
       k, M (as in "204k")       1/10**3, 1/10**6
     A file value whose unit the file states (a JSON key ending in _ns, _us, _ms, _s,
     _seconds, _bytes or _pct; a unit printed after it in a Markdown or text cell) is compared
     in that unit only (or at face value by a quote with no unit, as in a table whose
     header names the unit): a time of 661.68 ns is a quote of "0.66 µs" or of "661.7",
     never of "661.7 ms". Nothing else: no rounding to other precisions, no per-call
     or per-thread divisions. Those are derived numbers and go in the allowlist with their
     arithmetic.
   - Not numbers for this check (dropped before the scan, by rule):
       inline code spans (commands, options, file names), link targets;
       dates and clock times ("24 Nov", "Nov 2026", "2026-11-22", "16:08");
       years (a bare four-digit integer from 1990 to 2030);
       versions: dotted triples ("17.0.15") and a number right after a product name (see
         VERSIONED: JDK, OpenJDK, Temurin, Tomcat, Debian, Linux, bpftrace, Kryo, ...) unless
         a unit, a range or a comparison follows it ("XML-RPC 178 / 492" is a measurement);
         the kernel version is an allowlisted machine fact instead ("kernel 49.6 µs" is not a
         version);
       references: the number after Table(s), Figure(s), eq., equation(s), section(s), §,
         issue, seed, run(s), footnote markers and superscripts (¹, 10⁶);
       labels: "10×10", "640×480" (a×b with no space);
       commit hashes (after "commit", or any word mixing letters and digits: "d7acf25");
       bare integers 0–9 printed with no unit (counts in the prose's own words, design
         parameters: they match any file by chance, so checking them proves nothing).
2. Allowlist (results/reproduction-unchecked.tsv: section, number as printed, reason). A
   number the scan does not find passes only if it is listed for its section; an entry
   covers every occurrence of its number in its section. Reasons are checked where they can
   be, and an occurrence the reason holds for counts as allowlisted, not found:
       "seed NNN ..."   the number must occur in that seed's text
                        (../shared/seeds/NNN_*.txt) at its printed precision, scalings 1,
                        10**3 and 10**-3 (the seeds print seconds where the tables print ms);
                        without the seeds' text the entry is counted as unverified;
       "calc: EXPR ..." EXPR (numbers, + - * /, brackets, round(x, n), min, max; text after
                        ";" is a comment) must evaluate to the number at its printed
                        precision;
       "git HASH:PATH"  the number must be in PATH as committed in HASH (an earlier run that
                        results/ no longer holds), with the scan's scalings; without git
                        history (a shallow clone) the entry is counted as unverified;
       "in PATH"        the number must be in that file of the repository, of any kind (a
                        workload's stdout.txt or .jsonl, which the scan does not read; a
                        log; docs/, CHANGELOG.md, the Makefile);
       "setting: PATH [near \"TEXT\"]"
                        an option's default, a command's argument, a version pin: the number
                        must be in the source file PATH that sets it, on a line holding TEXT
                        when given (the README's settings; scripts/check_readme.py);
       anything else    (a machine fact, a run's wall time, an uncommitted run) is counted as
                        unverified.
   A failure: an entry whose number no longer appears in its section (stale), or whose reason
   does not hold for any occurrence. An unverified entry whose number is also found in the
   files is listed as redundant by --verbose (not a failure).
3. Claims (results/reproduction-claims.json): specific quotes pinned to a file and a locator
   (a Markdown table's row and column, a CSV row and column, or a JSON path; or an arithmetic
   expression over several) with the expected display. The quote is located in the section
   (a table's row and column there too, or the n-th number after an anchor text); it must
   equal the expected display, and the file's value, scaled and rounded to the quote's
   decimals, must print the same. This catches what the scan cannot: a number that is
   somewhere in the files but is not the one the prose says it is (the copyin row's 1,000,088
   quoted as the write(2) calls), or the right number under the wrong label.

What the scan can and cannot show: a two- or three-digit quote checked against a section that
cites hundreds of recordings will often be found by chance. `--power` reports, per section,
how many of its quotes would still be found with their last digit changed, or moved by 10%.
The claims are the check on the numbers that matter most.

CLI: `python scripts/check_reproduction.py [--verbose] [--power]` prints a per-section report
(numbers checked; found in the files; allowlisted, by kind of reason; claims; failures) and
every failure, and exits 1 on any failure.

The same check runs on README.md (scripts/check_readme.py, issue 45): `check(spec=...)` takes
the document, its allowlist and claims, how it is cut into sections, and which of a section's
parts a number is looked up in (there, the paths each paragraph, list item or table row cites).
"""
from __future__ import annotations

import argparse
import ast
import bisect
import csv
import functools
import json
import math
import operator
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "results" / "REPRODUCTION.md"
ALLOWLIST = ROOT / "results" / "reproduction-unchecked.tsv"
CLAIMS = ROOT / "results" / "reproduction-claims.json"
SEEDS = ROOT.parent / "shared" / "seeds"

# --------------------------------------------------------------------------------------------
# Units and scalings

TIME_UNITS = {"ns": 0, "µs": 1, "μs": 1, "us": 1, "ms": 2, "s": 3}
BYTE_DEC = {"B": 0, "kB": 1, "KB": 1, "MB": 2, "GB": 3}
BYTE_BIN = {"KiB": 1, "MiB": 2, "GiB": 3}


def scalings(unit: str | None) -> tuple[float, ...]:
    """The factors k allowed between a file value v and a quote q printed in `unit`: q = v * k."""
    if unit in TIME_UNITS:
        i = TIME_UNITS[unit]
        return tuple(10.0 ** (3 * (j - i)) for j in range(4))
    if unit in BYTE_DEC:
        return (1.0, 10.0 ** (-3 * BYTE_DEC[unit])) if BYTE_DEC[unit] else (1.0,)
    if unit in BYTE_BIN:
        return (1.0, 2.0 ** (-10 * BYTE_BIN[unit]))
    if unit == "%":
        return (1.0, 100.0)
    if unit == "k":
        return (1e-3,)
    if unit == "M":
        return (1e-6,)
    return (1.0,)


# --------------------------------------------------------------------------------------------
# Reading numbers from the prose

MONTHS = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*"
VERSIONED = (r"OpenJDK|JDK|Temurin|Java|JVM|Tomcat|Debian|Linux|bpftrace|jvmos|Kryo|"
             r"XStream|Jython|pygount|XML-RPC|Solaris|JikesRVM|Python|scipy|DaCapo|Sun JVM|"
             r"Apache XML-RPC|Sun")
REFERENCE = r"Tables?|Figures?|Fig\.|eq\.|equations?|[Ss]ections?|§|[Ii]ssues?|[Ss]eeds?"

# What is blanked out before numbers are read. Each pattern's match is replaced by spaces of
# the same length, so that columns and line numbers stay put.
DROP = [
    ("code", re.compile(r"`[^`\n]*`")),
    ("link target", re.compile(r"\]\([^)\n]*\)")),
    ("ISO date", re.compile(r"\b\d{4}-\d{2}-\d{2}\b")),
    ("clock time", re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?\b")),
    ("date", re.compile(r"\b\d{1,2}(?:\s*[–-]\s*\d{1,2})?\s+" + MONTHS + r"(?:\s+\d{4})?\b")),
    ("date", re.compile(r"\b" + MONTHS + r"\s+\d{4}\b")),
    ("version", re.compile(r"\b\d+\.\d+\.\d+(?:\.\d+)*\b")),
    # a product's version: not when a unit, a range or a comparison follows ("kernel 49.6 vs
    # 52.2 µs", "XML-RPC 178 / 492", "Java 220 ± 29 ns" are measurements)
    ("version", re.compile(r"(?:\b(?:" + VERSIONED + r")\s*)\d+(?:\.\d+)*\+?(?!\d|[.,]\d)"
                           r"(?!\s*(?:[–/±×%~-]|µs|ms|ns|s\b|[kMG]Hz|MB|kB|B\b|of\b|per\b|"
                           r"vs\b|against\b|and\b|to\b))")),
    ("reference", re.compile(r"(?:(?<![\w])(?:" + REFERENCE + r")\s*)\d+(?:\.\d+)?"
                             r"(?:\s*(?:–|-|and|,)\s*\d+(?:\.\d+)?)*")),
    ("reference", re.compile(r"(?<![\w])[Rr]uns?\s+\d+(?:\s*[–-]\s*\d+)?(?![\d.,])")),
    ("commit", re.compile(r"\b[Cc]ommits?\s+[0-9a-f]{7,40}\b(?:\s*(?:and|,)\s*[0-9a-f]{7,40}\b)*")),
    ("label", re.compile(r"\b\d+×\d+(?:×\d+)?\b")),
    ("power of ten", re.compile(r"\b\d+[⁰¹²³⁴⁵⁶⁷⁸⁹]+")),
    ("footnote", re.compile(r"[¹²³]")),
    ("word with digits", re.compile(r"\b(?!\d+(?:\.\d+)?[kM]\b)(?=[A-Za-z_]*\d)(?=\w*[A-Za-z_])"
                                    r"\w+\b")),
]

NUM = re.compile(r"(?<![\w.])[−+-]?(\d[\d,]*(?:\.\d+)?)")
UNIT = re.compile(r"[ \u00a0\u2009-]?(ns|µs|μs|us|ms|s|KiB|MiB|GiB|kB|KB|MB|GB|B|%|×|k|M)"
                  r"(?![A-Za-z0-9])")
# What may join a number to the next one of the same unit ("0.61–2.33", "74.0 / 146.7 ms").
JOIN = re.compile(r"\s*(?:–|-|\+|/|→|\.\.|,|\bto\b|\band\b|\bor\b|\bof\b|\bagainst\b"
                  r"|\bvs\.?)\s*[−+]?$")
THOUSANDS = re.compile(r"^\d{1,3}(?:,\d{3})+(?:\.\d+)?$")


@dataclass
class Quote:
    section: str
    line: int          # 1-based line in the document
    col: int
    text: str          # as printed, without sign or unit: "1,000,011", "6.46"
    value: float
    decimals: int
    unit: str | None


def _blank(m: re.Match) -> str:
    return re.sub(r"[^\n]", " ", m.group(0))


def scrub(text: str) -> str:
    """The text with everything that is not a number for this check blanked out."""
    for _, pat in DROP:
        text = pat.sub(_blank, text)
    return text


def _parse_number(tok: str) -> list[tuple[str, int]]:
    """A token's numbers, with their offsets in the token: one if its commas group thousands,
    else one per comma-separated part ("1,2" is two numbers)."""
    if "," not in tok or THOUSANDS.match(tok):
        return [(tok, 0)]
    out, off = [], 0
    for part in tok.split(","):
        if part:
            out.append((part, off))
        off += len(part) + 1
    return out


def quotes_in(section: str, text: str, first_line: int) -> list[Quote]:
    """Every number of `text` the scan checks (see the module docstring for what is not)."""
    clean = scrub(text)
    raw: list[tuple[int, str, str | None, int]] = []    # (start, printed, unit, end)
    for m in NUM.finditer(clean):
        for tok, off in _parse_number(m.group(1)):
            if not re.fullmatch(r"\d+(?:,\d{3})*(?:\.\d+)?", tok):
                continue
            start = m.start(1) + off
            end = start + len(tok)
            u = UNIT.match(clean, end)
            raw.append((start, tok, u.group(1) if u else None, end))
    out: list[Quote] = []
    # A number without a unit takes the unit of the next number it is joined to.
    units = [r[2] for r in raw]
    for i in range(len(raw) - 2, -1, -1):
        if units[i] is None and units[i + 1] is not None:
            between = clean[raw[i][3]:raw[i + 1][0]]
            if JOIN.match(between) and len(between) <= 12:
                units[i] = units[i + 1]
    line_starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    for (start, tok, _, _end), unit in zip(raw, units):
        plain = tok.replace(",", "")
        value = float(plain)
        decimals = len(plain.split(".")[1]) if "." in plain else 0
        if unit is None and decimals == 0 and value < 10:
            continue                                      # bare small integer
        if unit is None and decimals == 0 and "," not in tok and 1990 <= value <= 2030:
            continue                                      # a year
        ln = bisect.bisect_right(line_starts, start) - 1
        out.append(Quote(section, first_line + ln, start - line_starts[ln] + 1, tok, value,
                         decimals, unit))
    return out


# --------------------------------------------------------------------------------------------
# Sections and the paths they cite


@dataclass
class Section:
    name: str          # the heading without "## ", or "intro"
    first_line: int    # 1-based line of the heading (1 for the intro)
    text: str
    # The parts whose own citations their numbers are checked against: (first line, text).
    # None: the whole section is one part (REPRODUCTION); the README checks each paragraph,
    # list item, table row and code block against the paths it cites itself.
    blocks: list[tuple[int, str]] | None = None

    def parts(self) -> list[tuple[int, str]]:
        return self.blocks if self.blocks is not None else [(self.first_line, self.text)]


def sections(doc: str) -> list[Section]:
    out, cur, start, buf = [], "intro", 1, []
    for i, line in enumerate(doc.split("\n"), 1):
        if line.startswith("## "):
            out.append(Section(cur, start, "\n".join(buf)))
            cur, start, buf = line[3:].strip(), i, []
        buf.append(line)
    out.append(Section(cur, start, "\n".join(buf)))
    return out


def section_matches(section: str, key: str) -> bool:
    """A section is named, in the allowlist and the claims, by the start of its heading."""
    return section == key or section.startswith(key)


PATH = re.compile(r"results/[A-Za-z0-9_.*/-]*[A-Za-z0-9_*]")
IMAGE = re.compile(r"\]\(([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*)\)")


def _not_cited(p: str) -> bool:
    """REPRODUCTION's own files are no evidence for it."""
    return p in ("results/REPRODUCTION.md",) or p.startswith("results/reproduction-")


def cited_paths(text: str, root: Path = ROOT, link_base: str = "results/",
                not_cited=_not_cited) -> tuple[list[Path], list[str]]:
    """The directories a section cites, and the cited paths that do not exist. Links are
    relative to `link_base` (REPRODUCTION sits in results/; the README's links are relative
    to the repository, and only those into results/ are citations)."""
    found: list[str] = [m.group(0) for m in PATH.finditer(text)]
    found += [q for q in (link_base + m.group(1) for m in IMAGE.finditer(text))
              if q.startswith("results/")]
    dirs: list[Path] = []
    missing: list[str] = []
    for p in found:
        if not_cited(p):
            continue
        matches = sorted(root.glob(p)) if "*" in p else [root / p]
        matches = [m for m in matches if m.exists()]
        if not matches:
            missing.append(p)
            continue
        for m in matches:
            d = m if m.is_dir() else m.parent
            if d not in dirs:
                dirs.append(d)
    # a directory inside another cited one adds nothing
    dirs = [d for d in dirs if not any(o != d and o in d.parents for o in dirs)]
    return dirs, missing


# --------------------------------------------------------------------------------------------
# Numbers in the result files

FILE_NUM = re.compile(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?(?:[eE][+-]?\d+)?)")
# A JSON value's unit, from its key: "wall_ns", "latency_us", "attach_seconds", "io_bytes".
KEY_UNIT = [(re.compile(r"(?:^|_)ns$"), "ns"), (re.compile(r"(?:^|_)us$"), "µs"),
            (re.compile(r"(?:^|_)ms$"), "ms"), (re.compile(r"(?:^|_)(?:s|sec|seconds)$"), "s"),
            (re.compile(r"(?:^|_)bytes$"), "B"), (re.compile(r"(?:^|_)pct$"), "%")]
UNIT_ALIAS = {"μs": "µs", "us": "µs", "KB": "kB"}

MANIFEST_NOISE = ("processes", "jvms_probed", "host", "command", "attach_pid")
Values = dict  # unit tag (None: not known) -> set, then sorted list, of absolute values


def _add(out: Values, tag: str | None, v: float) -> None:
    if math.isfinite(v):
        out.setdefault(tag, set()).add(abs(v))


def _numbers_in_text(s: str, out: Values) -> None:
    """Numbers of a text, each tagged with the unit printed right after it, if any."""
    for m in FILE_NUM.finditer(s):
        tok = m.group(1)
        for part, off in _parse_number(tok):
            try:
                v = float(part.replace(",", ""))
            except ValueError:
                continue
            u = UNIT.match(s, m.start(1) + off + len(part))
            unit = UNIT_ALIAS.get(u.group(1), u.group(1)) if u else None
            _add(out, unit if unit in TIME_UNITS or unit in BYTE_DEC or unit in BYTE_BIN
                 or unit == "%" else None, v)


def _walk_json(x, out: Values, key: str = "") -> None:
    if isinstance(x, bool) or x is None:
        return
    if isinstance(x, (int, float)):
        tag = next((u for pat, u in KEY_UNIT if pat.search(key)), None)
        _add(out, tag, float(x))
    elif isinstance(x, str):
        _numbers_in_text(x, out)
    elif isinstance(x, dict):
        for k, v in x.items():
            _numbers_in_text(k, out)
            _walk_json(v, out, k)
    elif isinstance(x, list):
        for v in x:
            _walk_json(v, out, key)


def file_numbers_of(name: str, text: str) -> dict:
    """The numbers of a file's text, by unit tag, read as its suffix says."""
    out: Values = {}
    if name.endswith(".json"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            _numbers_in_text(text, out)
        else:
            if name.endswith("manifest.json") and isinstance(data, dict):
                # probe addresses, pids and host facts: numbers no prose quotes, which would
                # only let wrong quotes pass by chance
                data = {k: v for k, v in data.items() if k not in MANIFEST_NOISE}
                if isinstance(data.get("probes"), dict):    # its counts, not its addresses
                    data["probes"] = {k: v for k, v in data["probes"].items()
                                      if isinstance(v, (int, float))}
            _walk_json(data, out)
    elif name.endswith(".csv"):
        for row in csv.reader(text.splitlines()):
            for cell in row:
                try:
                    _add(out, None, float(cell))
                except ValueError:
                    _numbers_in_text(cell, out)
    else:
        _numbers_in_text(text, out)
    return {k: sorted(v) for k, v in out.items()}


@functools.lru_cache(maxsize=None)
def file_numbers(path: Path) -> dict:
    return file_numbers_of(path.name, path.read_text(encoding="utf-8", errors="replace"))


def data_files(d: Path) -> list[Path]:
    return sorted(p for p in d.rglob("*")
                  if p.suffix in (".md", ".csv", ".json") and p.is_file()
                  and "raw" not in p.relative_to(d).parts and p.name != "probes.plan.json")


@functools.lru_cache(maxsize=None)
def values_under(dirs: tuple[Path, ...]) -> dict:
    vals: Values = {}
    for d in dirs:
        for p in data_files(d):
            for tag, vs in file_numbers(p).items():
                vals.setdefault(tag, set()).update(vs)
    return {k: sorted(v) for k, v in vals.items()}


def within(vals: list[float], lo: float, hi: float) -> bool:
    i = bisect.bisect_left(vals, lo)
    return i < len(vals) and vals[i] <= hi


def _factor(tag: str, unit: str) -> float | None:
    """q = v * factor for a file value tagged `tag` quoted in `unit`; None: not comparable."""
    if tag in TIME_UNITS and unit in TIME_UNITS:
        return 10.0 ** (3 * (TIME_UNITS[tag] - TIME_UNITS[unit]))
    if tag in BYTE_DEC and unit in BYTE_DEC:
        return 10.0 ** (3 * (BYTE_DEC[tag] - BYTE_DEC[unit]))
    if tag in BYTE_BIN and unit in BYTE_BIN:
        return 2.0 ** (10 * (BYTE_BIN[tag] - BYTE_BIN[unit]))
    if tag == "B" and unit in BYTE_BIN:
        return 2.0 ** (-10 * BYTE_BIN[unit])
    if tag == unit == "%":
        return 1.0
    return None


def scales_for(tag: str | None, unit: str | None) -> tuple[float, ...]:
    """The factors between file values of a tag and a quote's unit (module docstring)."""
    unit = UNIT_ALIAS.get(unit, unit)
    if tag is None:
        return scalings(unit)
    if unit is None or unit == "×":
        return (1.0,)
    f = _factor(tag, unit)
    return (f,) if f is not None else ()


def matches(vals, value: float, decimals: int, unit: str | None,
            scales: tuple[float, ...] | None = None) -> bool:
    """Whether a quote is in `vals` (a sorted list, compared with `scales`; or a dict of
    unit-tagged sorted lists, compared with the scalings each tag allows)."""
    half = 0.5 * 10.0 ** -decimals
    eps = 1e-9 * max(1.0, value)
    groups = [(vals, scales)] if isinstance(vals, list) else \
        [(vs, scales_for(tag, unit)) for tag, vs in vals.items()]
    for vs, ks in groups:
        for k in ks:
            if within(vs, (value - half - eps) / k, (value + half + eps) / k):
                return True
    return False


# --------------------------------------------------------------------------------------------
# The allowlist


@dataclass
class Allowed:
    section: str
    number: str
    reason: str
    line: int          # in the TSV


def read_allowlist(path: Path = ALLOWLIST) -> list[Allowed]:
    out = []
    if not path.exists():
        return out
    for i, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) < 3:
            raise ValueError(f"{path.name}:{i}: expected section<TAB>number<TAB>reason")
        out.append(Allowed(parts[0].strip(), parts[1].strip(), parts[2].strip(), i))
    return out


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Div: operator.truediv, ast.USub: operator.neg, ast.UAdd: operator.pos}


def _eval(node, env: dict | None = None):
    if isinstance(node, ast.Expression):
        return _eval(node.body, env)
    if isinstance(node, ast.Name) and env is not None and node.id in env:
        return env[node.id]
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_eval(node.left, env), _eval(node.right, env))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_eval(node.operand, env))
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in ("round", "min", "max") and not node.keywords):
        args = [_eval(a, env) for a in node.args]
        return {"round": round, "min": min, "max": max}[node.func.id](*(
            [args[0], int(args[1])] if node.func.id == "round" and len(args) == 2 else args))
    raise ValueError("only numbers, + - * /, brackets, round(x, n), min and max")


def calc(expr: str, env: dict | None = None) -> float:
    """An arithmetic expression's value: numbers (thousands separators allowed), + - * /,
    brackets, round(x, n), min, max, and the names of `env`."""
    expr = re.sub(r"(?<=\d),(?=\d{3}\b)", "", expr).replace("−", "-").replace("×", "*")
    return float(_eval(ast.parse(expr.strip(), mode="eval"), env))


@functools.lru_cache(maxsize=None)
def seed_numbers(seed: str) -> list[float]:
    files = sorted(SEEDS.glob(f"{seed}_*.txt"))
    if not files:
        return []
    text = files[0].read_text(encoding="utf-8", errors="replace")
    out: Values = {}
    _numbers_in_text(text, out)
    vals = set().union(*out.values()) if out else set()
    # The seeds also print decimals with a leading point (".872").
    for m in re.finditer(r"(?<![\w.\d])\.(\d+)", text):
        vals.add(float("0." + m.group(1)))
    return sorted(vals)


@functools.lru_cache(maxsize=None)
def git_numbers(commit: str, path: str) -> dict | None:
    """The numbers of `path` as committed in `commit` (None: no git, or no such file)."""
    try:
        r = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{path}"],
                           capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode != 0:
        return None
    return file_numbers_of(path, r.stdout.decode("utf-8", errors="replace"))


def verify_reason(a: Allowed, unit: str | None = None) -> tuple[str, str | None]:
    """(kind, problem): kind is seed, calc, git, file, setting or unverified; problem is None
    when it holds."""
    text = a.number.replace(",", "")
    try:
        value = float(text)
    except ValueError:
        return "unverified", f"not a number: {a.number!r}"
    decimals = len(text.split(".")[1]) if "." in text else 0
    m = re.match(r"seed (\d{3})\b", a.reason)
    if m:
        vals = seed_numbers(m.group(1))
        if not vals:
            return "seed-unavailable", None     # no ../shared/seeds here: not checkable
        if not matches(vals, value, decimals, None, (1.0, 1e3, 1e-3)):
            return "seed", f"{a.number} is not in seed {m.group(1)}'s text"
        return "seed", None
    m = re.match(r"calc:\s*([^;]+)", a.reason)
    if m:
        try:
            got = calc(m.group(1))
        except (ValueError, SyntaxError, ZeroDivisionError) as e:
            return "calc", f"cannot evaluate {m.group(1).strip()!r}: {e}"
        half = 0.5 * 10.0 ** -decimals
        if abs(abs(got) - value) > half + 1e-9 * max(1.0, value):
            return "calc", f"{m.group(1).strip()} = {got:.6g}, not {a.number}"
        return "calc", None
    m = re.match(r"git ([0-9a-f]{7,40}):(\S+)", a.reason)
    if m:
        found_any = False
        for path in m.group(2).rstrip(";,.").split(","):
            vals = git_numbers(m.group(1), path)
            if vals is None:
                continue
            found_any = True
            if matches(vals, value, decimals, unit):
                return "git", None
        if not found_any:
            return "git-unavailable", None      # a shallow clone, or no git: not checkable
        return "git", f"{a.number} is not in {m.group(1)}:{m.group(2)}"
    m = re.match(r'setting:\s*([\w./+-]+?)[;,.]?(?:\s+near\s+"([^"]+)")?(?:\s*;|$)',
                 a.reason)
    if m:
        # an option's default, a command's argument, a version pin: the number is in the
        # source file that sets it, on a line holding the `near` text when one is given
        path = ROOT / m.group(1)
        if not path.is_file():
            return "setting", f"no file {m.group(1)}"
        lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
        if m.group(2):
            lines = [ln for ln in lines if m.group(2) in ln]
            if not lines:
                return "setting", f'no line of {m.group(1)} holds "{m.group(2)}"'
        vals: Values = {}
        for ln in lines:
            _numbers_in_text(re.sub(r"(?<=\d)_(?=\d)", "", ln), vals)    # 1_000_000
        if not matches({None: sorted(set().union(*vals.values()))} if vals else {},
                       value, decimals, unit):
            return "setting", (f"{a.number} is not in {m.group(1)}"
                               + (f' on a line holding "{m.group(2)}"' if m.group(2) else ""))
        return "setting", None
    m = re.match(r"in ((?:results|tests|jvmos|workloads|probes|scripts|docs)/\S+"
                 r"|(?:CHANGELOG\.md|Makefile|Dockerfile|pyproject\.toml)\b)", a.reason)
    if m:
        path = ROOT / m.group(1).rstrip(";,.")
        if not path.is_file():
            return "file", f"no file {m.group(1)}"
        if not matches(file_numbers(path), value, decimals, unit):
            return "file", f"{a.number} is not in {m.group(1)}"
        return "file", None
    return "unverified", None


# --------------------------------------------------------------------------------------------
# Claims


def md_tables(text: str) -> list[tuple[list[str], list[list[str]], int]]:
    """Markdown tables of `text`: (header cells, body rows, line index of the header)."""
    lines = text.split("\n")
    out = []
    i = 0
    while i < len(lines) - 1:
        if lines[i].lstrip().startswith("|") and re.match(r"^\s*\|[\s:|-]+\|\s*$", lines[i + 1]):
            header = _cells(lines[i])
            rows = []
            j = i + 2
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                rows.append(_cells(lines[j]))
                j += 1
            out.append((header, rows, i))
            i = j
        else:
            i += 1
    return out


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s.replace("**", "")).strip()


def table_cell(text: str, row: str, column: str | int, table: str | None = None
               ) -> tuple[str, int] | None:
    """The cell of the first table (whose header contains `table`, if given) with a row whose
    first cell starts with `row` and a column whose header starts with `column` (or index),
    and the cell's line index in `text`."""
    for header, rows, at in md_tables(text):
        if table and not any(table in h for h in header):
            continue
        if isinstance(column, int):
            ci = column
        else:
            cis = [i for i, h in enumerate(header) if _norm(h).startswith(column)]
            if not cis:
                continue
            ci = cis[0]
        for k, r in enumerate(rows):
            if _norm(r[0]).startswith(row) and ci < len(r):
                return r[ci], at + 2 + k
    return None


def _cell_number(cell: str, nth: int) -> float:
    """The nth number of a result file's cell (its sign kept)."""
    try:
        return float(cell)
    except ValueError:
        toks = [m.group(0) for m in re.finditer(r"[−-]?\d[\d,]*(?:\.\d+)?", cell)]
        return float(toks[nth].replace(",", "").replace("−", "-"))


def file_value(spec: dict, root: Path = ROOT) -> float:
    """The value a claim pins: `path` and one of `json` (a list of keys), a CSV `row` (column
    -> value) and `column`, or a Markdown table's `row` label and `column` header (with
    `table`, a text its header must contain); `nth` picks a number in a cell that holds
    several; `scale` multiplies (1e-6: ns to ms)."""
    path = root / spec["path"]
    nth = spec.get("nth", 0)
    if "json" in spec:
        x = json.loads(path.read_text(encoding="utf-8"))
        for k in spec["json"]:
            x = x[k]
        v = float(x)
    elif spec["path"].endswith(".csv"):
        with path.open(encoding="utf-8") as f:
            rows = [r for r in csv.DictReader(f)
                    if all(r.get(k) == want for k, want in spec["row"].items())]
        if len(rows) != 1:
            raise KeyError(f"{len(rows)} rows match {spec['row']}")
        v = _cell_number(rows[0][spec["column"]], nth)
    else:
        cell = table_cell(path.read_text(encoding="utf-8"), spec["row"], spec["column"],
                          spec.get("table"))
        if cell is None:
            raise KeyError(f"no row {spec['row']!r} / column {spec['column']!r}")
        v = _cell_number(cell[0], nth)
    return v * spec.get("scale", 1.0)


def numbers_of(cell: str) -> list[str]:
    """The numbers of a snippet as printed (sign dropped), for the claims' `nth`."""
    return [q.text for q in quotes_in("", cell, 1)] or \
        [m.group(1) for m in NUM.finditer(scrub(cell))]


def fmt(value: float, decimals: int, commas: bool) -> str:
    return f"{abs(value):,.{decimals}f}" if commas else f"{abs(value):.{decimals}f}"


@dataclass
class Failure:
    kind: str          # unfound, stale-allowlist, bad-reason, claim, missing-path
    section: str
    number: str        # the number as the document prints it (or the entry's)
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.kind}: [{self.section[:40]}] {self.where} {self.number}: {self.message}"


def doc_quote(sec: Section, d: dict) -> tuple[str, int] | str:
    """The number a claim's `doc` locator points at in the section, and its line; or why not.
    Locators: a table's `row` (start of its first cell) and `column` (start of its header, or
    an index), with `table` (text its header must contain); or `after`, an anchor text that
    occurs once in the section. `nth` counts the checkable numbers from there."""
    if "row" in d:
        got = table_cell(sec.text, d["row"], d["column"], d.get("table"))
        if got is None:
            return f"no table row {d['row']!r} / column {d['column']!r}"
        snippet, li = got
    else:
        i = sec.text.find(d["after"])
        if i < 0 or sec.text.find(d["after"], i + 1) >= 0:
            return f"anchor {d['after']!r} not found exactly once"
        snippet = sec.text[i + len(d["after"]):]
        li = sec.text[:i + len(d["after"])].count("\n")
    nums = numbers_of(snippet)
    n = d.get("nth", 0)
    if n >= len(nums):
        return "no number there"
    return nums[n], sec.first_line + li


def check_claim(c: dict, secs: list[Section], root: Path = ROOT,
                owns=section_matches) -> list[Failure]:
    cid, exp = c["id"], c["expected"]
    sec = next((s for s in secs if owns(s.name, c["section"])), None)
    if sec is None:
        return [Failure("claim", c["section"], exp, cid, "no such section")]
    got = doc_quote(sec, c["doc"])
    if isinstance(got, str):
        return [Failure("claim", sec.name, exp, cid, got)]
    shown, line = got
    where = f"line {line} ({cid})"
    fails = []
    if shown != exp:
        fails.append(Failure("claim", sec.name, shown, where,
                             f"the document says {shown} where the claim expects {exp}: "
                             f"{c.get('what', '')}"))
    try:
        if "expr" in c:
            env = {k: file_value(v, root) for k, v in c["files"].items()}
            v = calc(c["expr"], env)
            src = f"{c['expr']} over {sorted({f['path'] for f in c['files'].values()})}"
        else:
            v = file_value(c["file"], root)
            src = c["file"]["path"]
    except (OSError, KeyError, IndexError, TypeError, ValueError, ZeroDivisionError) as e:
        return fails + [Failure("claim", sec.name, exp, where, f"cannot read the value: {e}")]
    decimals = len(exp.split(".")[1]) if "." in exp else 0
    printed = fmt(v, decimals, "," in exp)
    if printed != exp:
        fails.append(Failure("claim", sec.name, exp, where,
                             f"{src} gives {printed} ({v:.6g}), not {exp}: the claim is stale"))
    return fails


def read_claims(path: Path = CLAIMS, key: str = "claims") -> list[dict]:
    if not path.exists():
        return []
    return json.loads(path.read_text(encoding="utf-8")).get(key, [])


# --------------------------------------------------------------------------------------------
# The check


@dataclass
class SectionReport:
    name: str
    dirs: list[Path]
    checked: int = 0
    found: int = 0
    allowed: dict = field(default_factory=dict)     # kind -> count
    failures: list[Failure] = field(default_factory=list)
    redundant: list[Allowed] = field(default_factory=list)
    claims: int = 0
    quotes: list[Quote] = field(default_factory=list)
    unfound_values: list[Quote] = field(default_factory=list)
    part_dirs: list[tuple] = field(default_factory=list)    # per quote: its part's cited dirs


@dataclass
class Report:
    sections: list[SectionReport]
    failures: list[Failure]

    @property
    def ok(self) -> bool:
        return not self.failures


@dataclass
class DocSpec:
    """A document this check reads: where it is, its allowlist and claims, how it is cut into
    sections, and what its links are relative to."""
    doc: Path
    allowlist: Path
    claims: Path
    split: object = None                 # text -> list[Section]; None: `sections`
    link_base: str = "results/"
    not_cited: object = _not_cited       # a cited path that is no evidence (str -> bool)
    claims_key: str = "claims"
    exact_sections: bool = False         # allowlist and claims name a section in full

    def owns(self, section: str, key: str) -> bool:
        return section == key if self.exact_sections else section_matches(section, key)

    @property
    def tsv(self) -> str:
        return self.allowlist.name


REPRODUCTION = DocSpec(DOC, ALLOWLIST, CLAIMS)


def check(doc: str | None = None, allowlist: list[Allowed] | None = None,
          claims: list[dict] | None = None, root: Path = ROOT,
          spec: DocSpec = REPRODUCTION) -> Report:
    doc = spec.doc.read_text(encoding="utf-8") if doc is None else doc
    allowlist = read_allowlist(spec.allowlist) if allowlist is None else allowlist
    claims = read_claims(spec.claims, spec.claims_key) if claims is None else claims
    secs = (spec.split or sections)(doc)
    reports: list[SectionReport] = []
    failures: list[Failure] = []
    used: set[int] = set()
    for s in secs:
        r = SectionReport(s.name, [])
        # each quote with the values of the files its part cites
        quoted: list[tuple[Quote, dict]] = []
        for first, text in s.parts():
            dirs, missing = cited_paths(text, root, spec.link_base, spec.not_cited)
            for p in missing:
                r.failures.append(Failure("missing-path", s.name, p, "",
                                          "cited path does not exist"))
            r.dirs += [d for d in dirs if d not in r.dirs]
            bv = values_under(tuple(dirs))
            for q in quotes_in(s.name, text, first):
                quoted.append((q, bv))
                r.part_dirs.append(tuple(dirs))
        qvals = {id(q): v for q, v in quoted}
        mine = [(i, a) for i, a in enumerate(allowlist) if spec.owns(s.name, a.section)]
        r.quotes = [q for q, _ in quoted]
        present = {q.text for q in r.quotes}
        held: dict[int, str | None] = {}     # entry -> None once one occurrence verified it
        for q, vals in quoted:
            r.checked += 1
            entry = next(((i, a) for i, a in mine if a.number == q.text), None)
            if entry is not None:
                # an entry covers every occurrence of its number in the section, each checked
                # with its own unit; an occurrence its reason does not hold for may still be
                # found in the files
                kind, problem = verify_reason(entry[1], q.unit)
                if problem is None:
                    held[entry[0]] = None
                    r.allowed[kind] = r.allowed.get(kind, 0) + 1
                    continue
                held.setdefault(entry[0], problem)
            if matches(vals, q.value, q.decimals, q.unit):
                r.found += 1
            elif entry is None:
                r.unfound_values.append(q)
                r.failures.append(Failure(
                    "unfound", s.name, q.text, f"line {q.line}",
                    "not in the cited files at this precision"
                    + (f" (unit {q.unit})" if q.unit else "") + ", and not in the allowlist"))
        for i, a in mine:
            used.add(i)
            if a.number not in present:
                r.failures.append(Failure("stale-allowlist", s.name, a.number,
                                          f"{spec.tsv}:{a.line}",
                                          "allowlisted but no longer in the section"))
            elif held.get(i) is not None:
                r.failures.append(Failure("bad-reason", s.name, a.number,
                                          f"{spec.tsv}:{a.line}", held[i]))
            else:
                qs = [q for q in r.quotes if q.text == a.number]
                if verify_reason(a, qs[0].unit)[0] in ("unverified", "git-unavailable",
                                                       "seed-unavailable") and all(
                        matches(qvals[id(q)], q.value, q.decimals, q.unit) for q in qs):
                    r.redundant.append(a)
        for c in claims:
            if spec.owns(s.name, c["section"]):
                r.claims += 1
                r.failures.extend(check_claim(c, secs, root, spec.owns))
        failures.extend(r.failures)
        reports.append(r)
    for i, a in enumerate(allowlist):
        if i not in used and not any(spec.owns(s.name, a.section) for s in secs):
            failures.append(Failure("stale-allowlist", a.section, a.number,
                                    f"{spec.tsv}:{a.line}", "no such section"))
    return Report(reports, failures)


def allowed_by_kind(allowed: dict) -> list[int]:
    """A section's allowlisted quotes as seed, calc, git + in, setting, other (unverified)."""
    g = allowed.get
    return [g("seed", 0), g("calc", 0), g("git", 0) + g("file", 0), g("setting", 0),
            g("unverified", 0) + g("git-unavailable", 0) + g("seed-unavailable", 0)]


def power(r: SectionReport) -> tuple[int, int, int]:
    """How many of the section's checked quotes would still be found (by chance) with their
    last printed digit changed by one (up, or down for a 9), and how many moved by +10% (at
    the same precision); and how many quotes there are."""
    digit = ten = 0
    for q, dirs in zip(r.quotes, r.part_dirs):
        vals = values_under(dirs)
        last = int(q.text.replace(",", "")[-1])
        step = 10.0 ** -q.decimals * (1 if last < 9 else -1)
        digit += matches(vals, q.value + step, q.decimals, q.unit)
        moved = round(q.value * 1.1, q.decimals)
        ten += moved != q.value and matches(vals, moved, q.decimals, q.unit)
    return digit, ten, len(r.quotes)


def main(argv: list[str] | None = None, spec: DocSpec = REPRODUCTION,
         description: str | None = None) -> int:
    ap = argparse.ArgumentParser(description=description or __doc__.split("\n")[0])
    ap.add_argument("--verbose", "-v", action="store_true",
                    help="list the redundant allowlist entries too")
    ap.add_argument("--power", action="store_true",
                    help="per section, how many quotes would still be found with their last "
                         "digit changed, or moved by 10%%")
    a = ap.parse_args(argv)
    rep = check(spec=spec)
    w = 44
    print(f"{'section':<{w}} {'checked':>7} {'found':>5} {'allowlisted':>11}"
          f" {'(seed calc git+in setting other)':>32} {'claims':>6} {'failures':>8}"
          + ("  still found: last digit / +10%" if a.power else ""))
    tot = [0] * 10
    for r in rep.sections:
        row = [r.checked, r.found, sum(r.allowed.values()), *allowed_by_kind(r.allowed),
               r.claims, len(r.failures)]
        line = (f"{r.name[:w]:<{w}} {row[0]:7d} {row[1]:5d} {row[2]:11d}"
                f"   ({row[3]:4d} {row[4]:4d} {row[5]:3d} {row[6]:7d} {row[7]:5d})"
                f" {row[8]:6d} {row[9]:8d}")
        if a.power:
            digit, ten, n = power(r)
            line += f"  {digit}/{n} / {ten}/{n}"
        print(line)
        tot = [t + v for t, v in zip(tot, row)]
    print(f"{'total':<{w}} {tot[0]:7d} {tot[1]:5d} {tot[2]:11d}   ({tot[3]:4d} {tot[4]:4d}"
          f" {tot[5]:3d} {tot[6]:7d} {tot[7]:5d}) {tot[8]:6d} {tot[9]:8d}")
    for f in rep.failures:
        print(f)
    if a.verbose:
        for r in rep.sections:
            for e in r.redundant:
                print(f"redundant: [{r.name[:40]}] {e.number} is also in the files ({e.reason})")
    return 0 if rep.ok else 1


if __name__ == "__main__":
    sys.exit(main())
