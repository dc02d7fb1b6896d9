"""The packages' arrows: the import-linter contracts of pyproject.toml (the CLI over the checks over the sources
over replay over the event contract; no product package imports dev tooling), no import circle between
modules, and a wheel of product packages only."""
from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("schemas", "replay", "services", "checks", "ctrlaudit")
# C extensions (setup.py): grimp sees `from pkg import _ext` as an import of the package itself
EXTENSIONS = ("_flatdecode", "_fastbuild", "_kraftdecode")


def test_the_layer_contracts_are_kept():
    done = subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command as c; c()", "--no-cache"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout, done.stdout[-2000:]


def _circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected sets of more than one module (Tarjan's algorithm, iteratively)."""
    def imported(m: str) -> list[str]:
        out = []
        for n in sorted(graph.find_modules_directly_imported_by(m)):
            if n not in graph.modules:
                continue
            if n == m.rsplit(".", 1)[0] and all(any(e in d["line_contents"] for e in EXTENSIONS)
                                                for d in graph.get_import_details(importer=m, imported=n)):
                continue
            out.append(n)
        return out

    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(imported(root)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(imported(w))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_no_import_circle():
    graph = grimp.build_graph(*PRODUCT, "devtools", cache_dir=None)
    assert _circles(graph) == []


def test_the_circle_finder_finds_a_circle(tmp_path, monkeypatch):
    for name, body in (("a", "from circ import b\n"), ("b", "from circ import c\n"), ("c", "import circ.a\n")):
        (tmp_path / "circ").mkdir(exist_ok=True)
        (tmp_path / "circ" / f"{name}.py").write_text(body)
    (tmp_path / "circ" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _circles(grimp.build_graph("circ", cache_dir=None)) == [["circ.a", "circ.b", "circ.c"]]


def test_the_wheel_holds_the_product_only():
    from setuptools import find_packages

    found = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    packages = find_packages(str(ROOT), include=found["include"])
    assert {p.split(".")[0] for p in packages} == set(PRODUCT), sorted(packages)
    assert not [p for p in packages if p.split(".")[0] in ("devtools", "tests", "bench")]


@pytest.mark.parametrize("package", PRODUCT)
def test_no_product_package_imports_dev_tooling(package):
    graph = grimp.build_graph(*PRODUCT, "devtools", cache_dir=None)
    chains = graph.find_shortest_chains(importer=package, imported="devtools", as_packages=True)
    assert not chains, sorted(chains)


# Function-level imports: a module imports what it uses at its top, so that its dependencies (and any circle
# they would make) are in plain sight; the exceptions: a module of an optional extra (pyproject.toml's
# [project.optional-dependencies]), imported where it is used so that the core install runs without it, with
# a comment naming the extra on its line or the line above: `# extra: spark`; and an import that a process's
# start would pay for and that process never use (capture's worker starts on every restart and catch-up),
# with a comment saying so in the same place: `# deferred: why`.
IMPORTS_AT_TOP = ("schemas", "replay", "services", "checks", "ctrlaudit")
_EXTRA = re.compile(r"#.*\bextra: (\w+)")
_DEFERRED = re.compile(r"#.*\bdeferred: \S")


def function_level_imports(path: Path, extras: frozenset[str]) -> list[str]:
    """'line: statement' for each import inside a function of the file that names no extra of `extras`."""
    text = path.read_text()
    lines = text.splitlines()
    found = []
    for node in ast.walk(ast.parse(text, str(path))):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for inner in ast.walk(node):
            if not isinstance(inner, (ast.Import, ast.ImportFrom)):
                continue
            around = lines[inner.lineno - 2:inner.end_lineno]  # the line above, and the statement's own
            named = {m.group(1) for line in around for m in [_EXTRA.search(line)] if m}
            if not named & extras and not any(_DEFERRED.search(line) for line in around):
                found.append(f"{inner.lineno}: {lines[inner.lineno - 1].strip()}")
    return sorted(set(found), key=lambda f: int(f.split(":")[0]))


def _extras() -> frozenset[str]:
    return frozenset(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])


def test_product_code_imports_at_the_top_but_for_the_extras():
    extras = _extras()
    found = {}
    for folder in IMPORTS_AT_TOP:
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if got := function_level_imports(path, extras):
                found[rel] = got
    assert not found, found


def test_the_import_finder_finds_a_function_level_import(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text("import os\n\n\ndef f():\n    import json\n    from pyspark import sql  # extra: spark\n"
                      "    # extra: capture\n    import kazoo\n    import faust  # extra: nonesuch\n\n\n"
                      "class C:\n    def g(self):\n        from a import (b,\n                       c)\n"
                      "\n\ndef h():\n    # deferred: the start's CPU\n    import pyarrow\n    import zlib  # deferred:\n")
    assert function_level_imports(sample, frozenset({"spark", "capture"})) == [
        "5: import json", "9: import faust  # extra: nonesuch", "14: from a import (b,",
        "21: import zlib  # deferred:"]
