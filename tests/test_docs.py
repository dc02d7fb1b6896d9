"""The documentation: the site builds with --strict (a broken link or anchor fails it), its generated pages hold
what the code holds, the README fits on a screen, no file of the project speaks of numbered work sessions or
issues (figures are keyed by date, commit and machine; history lives in git), and the README's tour of the demo's
output runs as written."""
from __future__ import annotations

import html
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# A work session or an issue by its number (the word, then a space, hyphen or '#' or none, then digits), in any
# case; not a ZooKeeper session id, which ZooKeeper's own tools print in hex after the word (0x...).
NUMBERED = re.compile(r"\b(session|issue)s?[ -]?#?(?!0x)\d+", re.I)
# The tracked files whose words are the project's: code, SQL, docs, configuration, build files.
TEXT_SUFFIXES = {".py", ".md", ".sql", ".toml", ".yml", ".yaml", ".c", ".h", ".txt", ".java", ".xml", ".avsc", ".cfg",
                 ".ini", ".sh"}
TEXT_NAMES = {"Makefile", "Dockerfile"}
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _tracked_text_files() -> list[Path]:
    """Every file git tracks in the project with a suffix of TEXT_SUFFIXES or a name of TEXT_NAMES."""
    done = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    names = [n for n in done.stdout.split("\0") if n]
    return [ROOT / n for n in sorted(names)
            if (Path(n).suffix in TEXT_SUFFIXES or Path(n).name in TEXT_NAMES) and (ROOT / n).is_file()]


def _text(page: Path) -> str:
    """The words of a built HTML page, without its scripts and tags."""
    raw = re.sub(r"<script.*?</script>", " ", page.read_text(), flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", raw))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("site") / "site"
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_MKDOCS_2_WARNING="1")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out, done.stderr


def test_readme_fits_on_a_screen():
    lines = README.read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; its depth belongs in docs/"


def test_no_file_names_a_numbered_session_or_issue():
    """Code, comments, docstrings, tests, SQL, README, docs and bench/RESULTS.md say what, not which work session
    or issue: a figure is keyed by its date, commit and machine, and history lives in git."""
    files = _tracked_text_files()
    assert README in files and ROOT / "bench" / "RESULTS.md" in files and Path(__file__).resolve() in files
    found = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}" for p in files
             for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1) if NUMBERED.search(line)]
    assert not found, "\n".join(found)


@pytest.mark.slow
def test_the_site_builds_strict(site):
    out, log = site
    for page in ("index.html", "tutorial/index.html", "reference/cli/index.html", "reference/invariants/index.html",
                 "reference/events/index.html", "benchmarks/index.html", "architecture/index.html"):
        assert (out / page).is_file(), page
    assert (out / "report-demo.png").stat().st_size > 10_000
    found = [f"{p.relative_to(out)}: {m.group(0)}" for p in out.rglob("*.html") for m in NUMBERED.finditer(_text(p))]
    assert not found, found  # the generated parts too
    if CHROMIUM:
        assert "report screenshot made again" in log, log[-2000:]


@pytest.mark.slow
def test_the_cli_reference_holds_every_command_and_flag(site):
    from ctrlaudit.cli import cli
    from tests.ctrlaudit.conftest import subcommands

    text = _text(site[0] / "reference" / "cli" / "index.html")

    def walk(command, path):
        assert " ".join(path) in text, path
        for param in command.params:
            if getattr(param, "hidden", False):
                continue
            for opt in getattr(param, "opts", ()):
                if opt.startswith("-"):
                    assert opt in text, (path, opt)
        for name, sub in subcommands(command).items():
            walk(sub, [*path, name])

    walk(cli, ["ctrlaudit"])


@pytest.mark.slow
def test_the_catalog_and_the_contract_are_generated(site):
    import json

    from checks.catalog import CATALOG

    catalog = _text(site[0] / "reference" / "invariants" / "index.html")
    for inv in CATALOG:
        assert inv.name in catalog and inv.statement.split(";")[0][:60] in " ".join(catalog.split()), inv.name
    contract = _text(site[0] / "reference" / "events" / "index.html")
    for path in (ROOT / "schemas" / "avro").glob("*.avsc"):
        text = path.read_text()
        for name in re.findall(r'"name":\s*"([A-Za-z_][A-Za-z0-9_]*)"', text):
            assert name in contract, (path.name, name)
        assert json.loads(text)["doc"][:40] in contract
    bench = _text(site[0] / "benchmarks" / "index.html")
    assert "bench/checks.py" in bench and "bench/replay.py" in bench


@pytest.mark.slow
def test_the_readme_tour_runs_as_written(tmp_path, monkeypatch):
    """The tour's lines through the CLI on a simulated demo: its topic for orders, offsets of its history for the
    marks A and B, a partition whose leader moved for P."""
    from typer.testing import CliRunner

    from ctrlaudit.cli import app

    run = lambda *args: CliRunner().invoke(app, list(args))  # noqa: E731
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CTRLAUDIT_STORE", raising=False)
    (tmp_path / "demo-out" / "kraft").mkdir(parents=True)
    store = "demo-out/kraft/demo.duckdb"
    assert run("simulate", "--out", "demo-out/kraft/archive", "--seed", "7", "--topics", "3", "--partitions", "4",
               "--events", "3000").exit_code == 0
    assert run("load", "demo-out/kraft/archive", "--store", store, "--workers", "1").exit_code == 0
    assert run("check", store, "--json", "demo-out/kraft/check.json").exit_code in (0, 1)
    import json

    state = json.loads(run("state", "--store", store, "--format", "json").stdout)
    topic = state["partitions"][0]["topic"]
    last = state["as_of"]["source_offset"]
    moved = next(str(p) for p in range(4) if run("explain", "--store", store, "--topic", topic, "--partition",
                                                   str(p), "--last-leader-change").exit_code == 0)
    put = {"orders": topic, "A": str(last // 3), "B": str(2 * last // 3), "P": moved}

    block = re.search(r"## A ten-minute tour.*?```sh\n(.*?)```", README.read_text(), re.S).group(1)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("CTRLAUDIT_STORE", None)
    ran = []
    for line in block.splitlines():
        command = line.split("  #")[0].strip()
        if command.startswith("export "):  # read when the CLI starts: each line is its own process, as in a shell
            name, _, value = command.removeprefix("export ").partition("=")
            env[name] = value
            continue
        if not command.startswith("ctrlaudit "):
            continue
        args = [put.get(a, a) for a in shlex.split(command)[1:]]
        done = subprocess.run([sys.executable, "-m", "ctrlaudit", *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode in ((0, 1) if args[0] == "check" else (0,)), f"{command}\n{done.stderr[-2000:]}"
        ran.append(args[0])
    assert ran[:1] == ["state"] and {"state", "diff", "timeline", "explain", "check", "report"} <= set(ran)
    assert (tmp_path / "demo-out" / "kraft" / "orders.html").stat().st_size > 100_000
