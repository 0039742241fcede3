"""The package map a reader relies on (README "Layout"): one import style (absolute, so
grepping for jvmos.analyzers.summary finds every use) and no import cycle between jvmos's
modules, function-level imports included (a cycle hidden in a function is still a cycle)."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"jvmos": "jvmos", "jvmos/experiments": "jvmos.experiments",
            "analyzers": "jvmos.analyzers", "heuristic": "jvmos.heuristic"}
FROM = re.compile(r"^\s*from ([\w.]+) import \(?([\w, \n]+?)\)?\s*(?:#.*)?$", re.M)


def _modules():
    out = {}
    for folder, pkg in PACKAGES.items():
        for f in (ROOT / folder).glob("*.py"):
            out[pkg if f.stem == "__init__" else f"{pkg}.{f.stem}"] = f
    return out


def test_every_import_of_the_product_is_absolute():
    rel = [f"{f.relative_to(ROOT)}: {m.group(0).strip()}" for f in _modules().values()
           for m in re.finditer(r"^\s*from \.+[\w.]* import .*$", f.read_text(), re.M)]
    assert not rel, rel


def _graph():
    mods = _modules()
    g = {}
    for name, f in mods.items():
        deps = set()
        for m in FROM.finditer(f.read_text()):
            base = m.group(1)
            deps.add(base)
            deps |= {f"{base}.{n}" for n in re.findall(r"\w+", m.group(2))}
        for m in re.finditer(r"^\s*import (jvmos[\w.]*)", f.read_text(), re.M):
            deps.add(m.group(1))
        # importing P.sub from outside package P runs P's __init__ first, which may import
        # this module back (a cycle Python meets at run time)
        pkg = name.rsplit(".", 1)[0] if f.stem != "__init__" else name
        for d in list(deps):
            parts = d.split(".")
            for i in range(1, len(parts)):
                parent = ".".join(parts[:i])
                if parent in mods and not pkg.startswith(parent):
                    deps.add(parent)
        g[name] = {d for d in deps if d in mods and d != name}
    return g


def test_no_import_cycle():
    g = _graph()
    done, cycles = set(), []

    def visit(n, stack):
        for d in sorted(g[n]):
            if d in stack:
                cycles.append(stack[stack.index(d):] + [d])
            elif d not in done:
                visit(d, stack + [d])
        done.add(n)

    for n in sorted(g):
        if n not in done:
            visit(n, [n])
    assert not cycles, [" -> ".join(c) for c in cycles]


def test_the_graph_sees_function_level_imports():
    g = _graph()
    assert "jvmos.record" in g["jvmos.calibrate_constants"]
    assert "jvmos.session" in g["jvmos.enginecost"]      # imported at module level
    assert "jvmos.analyzers.io" in g["jvmos.analyzers.summary"]


def test_pyproject_installs_every_package_of_the_tree():
    """A wheel holds only the packages pyproject.toml lists: every folder of the installed
    tree that is a package (an __init__.py) must be listed, mapped to that folder."""
    import pytest
    tomllib = pytest.importorskip("tomllib")      # Python 3.11+; the venv's is 3.11
    root = Path(__file__).resolve().parents[2]
    conf = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = dict(conf["package-dir"])
    assert sorted(conf["packages"]) == sorted(listed)
    found = set()
    for name, folder in listed.items():
        for init in (root / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(root / folder)
            found.add(".".join([name, *rel.parts]) if rel.parts else name)
    assert found <= set(listed), sorted(found - set(listed))
    # jvmos records with its own engine: the package does not describe itself by bpftrace
    whole = tomllib.loads((root / "pyproject.toml").read_text())
    assert "bpftrace" not in whole["project"]["description"]
    assert not any("bpftrace" in m for m in whole["tool"]["pytest"]["ini_options"]["markers"])


def test_no_function_is_longer_than_120_lines():
    """Issue 32: a function a newcomer can read at once. Every function and method of the
    product (jvmos, its analyzers and heuristic, scripts/) and of the Go engine, from its
    `def`/`func` line to its last, at most 120 lines."""
    import ast
    long = []
    for folder in ("jvmos", "analyzers", "heuristic", "scripts"):
        for f in (ROOT / folder).rglob("*.py"):
            for n in ast.walk(ast.parse(f.read_text())):
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    size = n.end_lineno - n.lineno + 1
                    if size > 120:
                        long.append(f"{f.relative_to(ROOT)}:{n.lineno} {n.name} {size}")
    for f in (ROOT / "probes" / "engine").glob("*.go"):
        if f.name.endswith("_bpfel.go"):
            continue                    # bpf2go's output
        lines = f.read_text().splitlines()
        for i, line in enumerate(lines):
            if line.startswith("func "):
                end = next(j for j in range(i + 1, len(lines)) if lines[j] == "}")
                if end - i + 1 > 120:
                    long.append(f"{f.relative_to(ROOT)}:{i + 1} {line[5:40]} {end - i + 1}")
    assert not long, long


def test_results_hold_data_only():
    """Issue 32: results/ holds data; a procedure lives in jvmos/experiments or scripts/, where
    it is tested. The only scripts allowed are the workload scripts a run recorded (a run's
    workload/ folder, kept as the record of what ran)."""
    code = [p.relative_to(ROOT) for p in (ROOT / "results").rglob("*")
            if p.suffix in (".py", ".sh") and "workload" not in p.parent.name]
    assert not code, code
