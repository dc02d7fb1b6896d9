"""The anchors table: for every invariant of the catalog, where each of its rules comes from (checks.catalog's
`Invariant.anchors`), rendered for checks/README.md and the documentation (Markdown) and for the HTML report.
One source, so the three cannot disagree; tests/checks/test_anchors.py holds the README to `markdown()`.
"""
from __future__ import annotations

import html

from checks.catalog import BY_NAME, CATALOG, Anchor, Invariant

BEGIN, END = "<!-- anchors: generated from checks/catalog.py -->", "<!-- /anchors -->"

_KIND = {"tla": "TLA+", "kafka": "Kafka", "none": "—"}


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _where(a: Anchor) -> str:
    if not a.repo:
        return "no spec states it"
    return f"`{a.name}` ({a.repo}, `{a.path}`)"


def markdown() -> str:
    """The table, one row per anchor, between BEGIN and END markers (the README's copy is replaced whole)."""
    rows = ["| invariant | rules | source | property, action or method | note |", "|---|---|---|---|---|"]
    for inv in CATALOG:
        for i, a in enumerate(inv.anchors):
            rows.append("| " + " | ".join((
                f"`{inv.name}`" if i == 0 else "", _cell(a.covers) or "all", _KIND[a.kind], _cell(_where(a)),
                _cell(a.note))) + " |")
    return "\n".join([BEGIN, *rows, END])


def html_cell(name: str) -> str:
    """The anchors of the invariant `name` as the HTML report's table cell, escaped; empty for a name this
    catalog does not hold (a report of another ctrlaudit). Taken from the catalog, not from the check report's
    JSON, which is input."""
    inv = BY_NAME.get(name)
    items = []
    for a in inv.anchors if inv is not None else ():
        # (spans only: the report's pages hold a fixed set of tags, tests/ctrlaudit/test_report_hostile.py)
        where = (f'<span class="anchor-name">{html.escape(a.name)}</span> <span class="anchor-source">'
                 f'({html.escape(a.repo)}, {html.escape(a.path)})</span>') if a.repo else "no spec states it"
        covers = f"{html.escape(a.covers)}: " if a.covers else ""
        note = f' <span class="anchor-note">{html.escape(a.note)}</span>' if a.note else ""
        items.append(f"<li>{covers}{where}{note}</li>")
    return f'<ul class="anchors">{"".join(items)}</ul>' if items else ""


def as_json(inv: Invariant) -> list[dict[str, str]]:
    return [{"covers": a.covers, "kind": a.kind, "repo": a.repo, "path": a.path, "name": a.name, "note": a.note}
            for a in inv.anchors]


def write_readme(path: str) -> bool:
    """Replace the table between the markers of `path` (checks/README.md); True if it changed."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    new = text[:start] + markdown() + text[end:]
    if new != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(new)
    return new != text


if __name__ == "__main__":
    import sys
    from pathlib import Path

    if sys.argv[1:] != ["--write"]:
        print("usage: python -m checks.anchor_table --write   (rewrites the table of checks/README.md)", file=sys.stderr)
        sys.exit(2)
    write_readme(str(Path(__file__).with_name("README.md")))
