"""Every jvmos command the README shows a user parses: the verb's own parser (and, for
`jvmos run EXPERIMENT`, the experiment's) accepts it as written. A command the README names
that the tool would refuse is a defect the user meets first. Usage synopses (with [ ], | or
...) and placeholders' meaning are not checked; the syntax is."""
import re
import shlex
import sys
from pathlib import Path

import pytest

from jvmos import JvmosError, cli
from jvmos.experiments import EXPERIMENTS

ROOT = Path(__file__).resolve().parents[2]


def readme_commands():
    """(line number, command) of every `jvmos ...` the README gives: inline code spans and
    the lines of code blocks that start with it (a trailing comment or continuation cut)."""
    text = (ROOT / "README.md").read_text()
    out = []
    in_block = False
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip().startswith("```"):
            in_block = not in_block
            i += 1
            continue
        if in_block:
            s = line.strip()
            if s.startswith("jvmos "):
                cmd = s
                while cmd.endswith("\\") and i + 1 < len(lines):   # a continued command
                    i += 1
                    cmd = cmd[:-1] + " " + lines[i].strip()
                out.append((i + 1, cmd.split("  #")[0].split(" # ")[0].strip()))
        else:
            for span in re.findall(r"`(jvmos [^`]+)`", line):
                out.append((i + 1, span))
        i += 1
    return [(n, c) for n, c in out
            if not any(x in c for x in ("[", "|", "...", "…", "VERB", "EXPERIMENT"))]


COMMANDS = readme_commands()
VERBS = {"doctor", "record", "report", "index", "export", "calibrate", "predict", "diff",
         "agent", "run"}


def test_the_readme_shows_commands():
    verbs = {shlex.split(c)[1] for _, c in COMMANDS}
    # every verb a user runs appears in a command that can be checked
    assert {"record", "report", "run", "calibrate", "predict", "agent", "diff"} <= verbs, verbs


@pytest.mark.parametrize("line,cmd", COMMANDS, ids=[f"L{n}" for n, _ in COMMANDS])
def test_each_readme_command_parses(line, cmd):
    argv = shlex.split(cmd)[1:]
    if len(argv) == 1:
        # the verb named in prose ("`jvmos report` reprints it"): the verb must exist
        assert argv[0] in VERBS, f"README line {line}: no verb '{argv[0]}'"
        return
    if "--" in argv:                 # the launched command is the user's, not jvmos's
        argv = argv[:argv.index("--") + 1] + ["true"]
    try:
        if argv[0] == "run" and len(argv) > 1:
            assert argv[1] in EXPERIMENTS, f"README line {line}: no experiment '{argv[1]}'"
            parse = sys.modules[EXPERIMENTS[argv[1]].__module__].parse
            parse(argv[2:])
        else:
            cli.build_parser().parse_args(argv)
    except SystemExit as e:
        if e.code not in (0, None):        # -h prints the help and exits 0
            pytest.fail(f"README line {line}: `{cmd}` is refused by its parser: exit {e.code}")
    except JvmosError as e:
        pytest.fail(f"README line {line}: `{cmd}` is refused by its parser: {e}")


def test_the_readme_stays_a_users_page():
    """Issue 32: the README is for users, at most 350 lines; methods, fields, the agent's
    detail and history live in docs/ and CHANGELOG.md."""
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 350, len(lines)
    # what jvmos is and costs, not when it was measured: dates belong to CHANGELOG.md and
    # results/REPRODUCTION.md
    dated = [l for l in lines if re.search(r"\b\d{1,2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|"
                                           r"Oct|Nov|Dec)\b", l)]
    assert not dated, dated
    for doc in ("docs/run-directory.md", "docs/methodology.md", "docs/layout.md",
                "docs/agent.md", "CHANGELOG.md"):
        assert (ROOT / doc).is_file(), doc
        assert doc.split("/")[-1] in "\n".join(lines), f"the README points to {doc}"
