"""MkDocs hooks: the pages generated from the code at build time, and the report's screenshot.

A page asks for a generated part with a marker on a line of its own:

- `<!-- generated: invariant-catalog -->`: every invariant of checks/catalog.py (name, anchor, TLA+ citation,
  statement, data needed, allowances, whether the live checker and Spark's shards judge it);
- `<!-- generated: invariant-anchors -->`: the anchors table (checks/anchor_table.py), the one checks/README.md
  holds: where every rule comes from;
- `<!-- generated: event-contract -->`: every record and enum of schemas/avro/*.avsc with each field's type,
  default and doc;
- `<!-- generated: bench-latest -->`: the newest section of each benchmark in bench/RESULTS.md (its date,
  command, commit and first table).

After the build, the screenshot of the HTML report (report-demo.png) is made again with Debian's headless
Chromium from a small simulated history when chromium and playwright are there; otherwise the committed image
stays. CTRLAUDIT_DOCS_SCREENSHOT=0 keeps the committed image.
"""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # the code of this tree, also for mkdocs-click's import of ctrlaudit.cli
    sys.path.insert(0, str(ROOT))

log = logging.getLogger("mkdocs.hooks.ctrlaudit")

_MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.M)


def _cell(text: str) -> str:
    """Text for one Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


# --- the invariant catalog -------------------------------------------------------------------------------

_DATA = {"M": "metadata events", "C": "configs and metadata.version", "B": "offset samples"}


def invariant_catalog() -> str:
    from checks.catalog import CATALOG
    from checks.deadlines import show_duration

    out = ["| invariant | anchor | TLA+ | data | live | Spark |", "|---|---|---|---|---|---|"]
    for inv in CATALOG:
        out.append("| " + " | ".join((
            f"[`{inv.name}`](#{inv.name})",
            inv.anchor or "—",
            _cell(inv.tla) or "—",
            inv.data,
            "yes" if inv.live else "no",
            "by shards" if inv.sharded else "Spark SQL",
        )) + " |")
    out += ["", "Data: " + ", ".join(f"{k} = {v}" for k, v in _DATA.items()) + ". Live: also judged one event at a "
            "time by the watch agent. Spark: checked by shards of partitions, each an embedded DuckDB, or as Spark "
            "SQL over all events."]
    out.append("")
    for inv in CATALOG:
        out += [f"### `{inv.name}` {{ #{inv.name} }}", "",
                f"- **Anchor**: {inv.anchor or 'none (ctrlaudit’s own)'}",
                "- **Where it comes from**:",
                *[f"    - {a.covers + ': ' if a.covers else ''}"
                  + (f"`{a.name}` ({a.repo}, `{a.path}`)" if a.repo else "no spec states it")
                  + (f". {a.note}" if a.note else "") for a in inv.anchors],
                f"- **Statement**: {inv.statement}",
                *([f"- **Severity**: warning (bounded liveness); **default deadline** "
                   f"{show_duration(inv.deadline.default_ms)} (`--deadline {inv.name}=DURATION`): "
                   f"{inv.deadline.why}"] if inv.deadline else []),
                f"- **Data needed**: {' + '.join(_DATA[d] for d in inv.data.split('+'))}; payload kinds "
                + (", ".join(f"`{k}`" for k in inv.needs) or "any"),
                "- **Allowances**: " + ("none" if not inv.allowances else ""),
                *[f"    - {a}" for a in inv.allowances],
                f"- **Definition**: `checks/invariants/{inv.name}.sql`"
                + (f"; live: `checks/invariants/{inv.name}.py`" if inv.live else ""),
                f"- **Judges history** (a gap its evidence spans makes a finding *no data*): "
                f"{'yes' if inv.history else 'no, one event alone'}",
                ""]
    return "\n".join(out)


def invariant_anchors() -> str:
    from checks.anchor_table import markdown

    return markdown()


# --- the event contract --------------------------------------------------------------------------------------

_PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}


def _type_name(t: Any, named: dict[str, dict]) -> str:
    if isinstance(t, str):
        if t in _PRIMITIVES:
            return f"`{t}`"
        short = t.rsplit(".", 1)[-1]
        return f"[`{short}`](#{short.lower()})"
    if isinstance(t, list):
        return " or ".join(_type_name(x, named) for x in t)
    kind = t["type"]
    if kind in ("record", "enum", "fixed"):
        return _type_name(t["name"], named)
    if kind == "array":
        return f"array of {_type_name(t['items'], named)}"
    if kind == "map":
        return f"map of {_type_name(t['values'], named)}"
    if "logicalType" in t:
        return f"`{kind}` ({t['logicalType']})"
    return _type_name(kind, named)


def _collect(t: Any, named: dict[str, dict]) -> None:
    """Named types in the order they are defined."""
    if isinstance(t, list):
        for x in t:
            _collect(x, named)
    elif isinstance(t, dict):
        if t["type"] in ("record", "enum", "fixed"):
            named.setdefault(t["name"], t)
        for f in t.get("fields", ()):
            _collect(f["type"], named)
        for key in ("items", "values"):
            if key in t:
                _collect(t[key], named)


def event_contract() -> str:
    out: list[str] = []
    for path in sorted((ROOT / "schemas" / "avro").glob("*.avsc")):
        schema = json.loads(path.read_text())
        named: dict[str, dict] = {}
        _collect(schema, named)
        out += [f"## `{path.name}`", "",
                f"Top-level record: `{schema.get('namespace', '')}.{schema['name']}`; "
                f"{sum(1 for t in named.values() if t['type'] == 'record')} records, "
                f"{sum(1 for t in named.values() if t['type'] == 'enum')} enums.", ""]
        for name, t in named.items():
            out += [f"### {name}", ""]
            if t.get("doc"):
                out += [t["doc"], ""]
            if t["type"] == "enum":
                out.append("Enum: " + ", ".join(f"`{s}`" for s in t["symbols"])
                           + (f"; default `{t['default']}`." if "default" in t else "."))
                out.append("")
                continue
            if t["type"] == "fixed":
                out += [f"Fixed, {t['size']} bytes.", ""]
                continue
            out += ["| field | type | default | doc |", "|---|---|---|---|"]
            for f in t["fields"]:
                default = f"`{json.dumps(f['default'])}`" if "default" in f else "—"
                out.append(f"| `{f['name']}` | {_type_name(f['type'], named)} | {default} | "
                           f"{_cell(f.get('doc', ''))} |")
            out.append("")
    return "\n".join(out)


# --- the newest benchmark figures ------------------------------------------------------------------------

# The benchmarks quoted, by the label bench/RESULTS.md gives their sections, and the command that writes them.
BENCHMARKS = (
    ("checks", "bench/checks.py"),
    ("replay", "bench/replay.py"),
    ("load floors", "bench/load_floors.py"),
    ("decode", "bench/decode.py"),
    ("decode (ZooKeeper transaction log)", "bench/decode.py --zk-dir"),
    ("capture (backlog)", "bench/capture.py"),
    ("capture (burst)", "bench/capture.py"),
    ("report", "bench/report.py"),
)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?: \d{2}:\d{2})?")
_REV = re.compile(r"\b(?:rev|commit) ([0-9a-f]{7,40})\b", re.I)


def _sections(text: str) -> list[tuple[int, str, str, list[str]]]:
    """(line number, label, date, body lines) of every section of bench/RESULTS.md."""
    out: list[tuple[int, str, str, list[str]]] = []
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if re.match(r"#{2,3} ", line)] + [len(lines)]
    for a, b in zip(starts, starts[1:]):
        heading = lines[a].lstrip("#").strip()
        label, _, rest = heading.partition(" — ")
        body = lines[a + 1:b]
        first = next((line for line in body if line.strip()), "")
        date = _DATE.search(rest) or _DATE.search(first)
        if date:
            out.append((a + 1, label.strip(), date.group(0), body))
    return out


def _commit(line: int) -> str:
    """The commit that wrote this line of bench/RESULTS.md (git blame), or ''."""
    try:
        done = subprocess.run(["git", "blame", "--porcelain", "-L", f"{line},{line}", "bench/RESULTS.md"],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    head = done.stdout.split(" ", 1)[0] if done.returncode == 0 else ""
    return head[:7] if re.fullmatch(r"[0-9a-f]{40}", head) and set(head) != {"0"} else ""


def _command(body: list[str]) -> str:
    for line in body:
        for c in re.findall(r"`([^`]*bench/[^`]*)`", line):
            return c
    return ""


def _first_table(body: list[str]) -> list[str]:
    table: list[str] = []
    for line in body:
        if line.startswith("|"):
            table.append(line)
        elif table:
            break
    return table


def bench_latest() -> str:
    sections = _sections((ROOT / "bench" / "RESULTS.md").read_text())
    out = ["| benchmark | newest run | commit | command |", "|---|---|---|---|"]
    quoted: list[str] = []
    for label, script in BENCHMARKS:
        mine = [s for s in sections if s[1] == label]
        if not mine:
            continue
        line, _, date, body = max(mine, key=lambda s: (s[2], s[0]))  # the newest; the later one on a tie
        rev = _REV.search("\n".join(body))
        commit = rev.group(1)[:7] if rev else _commit(line)
        command = _command(body) or script
        out.append(f"| [{label}](#{_slug(label)}) | {date} UTC | {f'`{commit}`' if commit else '—'} | `{_cell(command)}` |")
        quoted += [f"### {label} {{ #{_slug(label)} }}", "",
                   f"{date} UTC, bench/RESULTS.md line {line}" + (f", commit `{commit}`" if commit else "")
                   + f". Command: `{command}`.", ""]
        machine = next((m for m in body if m.startswith("Machine:")), "")
        if machine:
            quoted += [machine.split(" Command:")[0], ""]
        quoted += [*_first_table(body), ""]
    return "\n".join(out + [""] + quoted)


def _slug(label: str) -> str:
    return "bench-" + re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")


GENERATORS = {"invariant-catalog": invariant_catalog, "invariant-anchors": invariant_anchors, "event-contract": event_contract, "bench-latest": bench_latest}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    def generate(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in GENERATORS:
            raise ValueError(f"{page.file.src_path}: no generator {name!r} (docs/hooks/ctrlaudit_docs.py)")
        return GENERATORS[name]()

    return _MARKER.sub(generate, markdown)


# --- the report's screenshot ------------------------------------------------------------------------------

SCREENSHOT = "report-demo.png"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _screenshot(out: Path) -> None:
    from playwright.sync_api import sync_playwright

    cli = [sys.executable, "-m", "ctrlaudit"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH")))))
    with tempfile.TemporaryDirectory(prefix="ctrlaudit-docs-") as tmp:
        t = Path(tmp)
        for args in (["simulate", "--out", str(t / "archive"), "--seed", "3", "--events", "3000", "--topics", "3",
                      "--partitions", "4"],
                     ["load", str(t / "archive"), "--store", str(t / "s.duckdb"), "--workers", "1"],
                     ["check", str(t / "s.duckdb"), "--json", str(t / "check.json")],
                     ["report", "--store", str(t / "s.duckdb"), "--check-json", str(t / "check.json"),
                      "--out", str(t / "incident.html")]):
            done = subprocess.run(cli + args, cwd=t, env=env, capture_output=True, text=True, timeout=120)
            if done.returncode not in (0, 1):  # check: 1 = violations, still a verdict to show
                raise RuntimeError(f"ctrlaudit {args[0]}: {done.stderr.strip()[-500:]}")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            try:
                page = browser.new_page(viewport={"width": 1300, "height": 1700})
                page.goto((t / "incident.html").as_uri())
                page.wait_for_function("document.querySelectorAll('figure.plot .main-svg').length >= 2",
                                       timeout=30_000)
                page.wait_for_timeout(500)
                page.screenshot(path=str(out))
            finally:
                browser.close()


def on_post_build(config: Any) -> None:
    if os.environ.get("CTRLAUDIT_DOCS_SCREENSHOT", "1") == "0":
        log.info("report screenshot: CTRLAUDIT_DOCS_SCREENSHOT=0, the committed image kept")
        return
    if CHROMIUM is None:
        log.info("report screenshot: no chromium, the committed image kept")
        return
    target = Path(config["site_dir"]) / SCREENSHOT
    fresh = target.with_suffix(".new.png")
    started = time.monotonic()
    try:
        _screenshot(fresh)
    except Exception as exc:  # no playwright, a browser that does not start: the committed image stays
        fresh.unlink(missing_ok=True)
        log.info(f"report screenshot not made again ({type(exc).__name__}: {exc}); the committed image kept")
        return
    fresh.replace(target)
    log.info(f"report screenshot made again from a simulated history in {time.monotonic() - started:.1f} s")
