"""Spark: a CTE that a query reads more than once is computed once.

The invariant queries are written once for both engines, as chains of CTEs. DuckDB materializes a CTE
that is read more than once; Spark 4.3 inlines a deterministic CTE at every reference, so a CTE read
four times (unclean_election_allowed's candidates: three scope probes and the final join) is computed
four times, its joins and windows included. `split` cuts a query into its top-level CTEs and its final
SELECT; `materialize_plan` names the CTEs worth computing once (read twice or more and doing more than
a filter over one scan: a join, an aggregate or a window; or read three times or more and filtering by
function calls; never one the query marks `{recomputed()}`, as DuckDB never keeps those); the engine
makes each of those a temporary view of that name
(checks.spark_engine.materialized), and runs the query with the remaining CTEs. A CTE name shadows a view
of the same name, so the query only reads the views once their CTEs are gone from its WITH. The text of each CTE is not changed: the rows are the same.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from checks.dialect import closing_paren

# a CTE's name and its `{recomputed()}` mark as checks.dialect spells it for Spark (a comment) or DuckDB
_NAME = re.compile(r"\s*([A-Za-z_][A-Za-z_0-9]*)\s+AS\s*(/\*\s*recomputed\s*\*/\s*|NOT\s+MATERIALIZED\s+)?\(",
                   re.IGNORECASE)
RECOMPUTED = "/* recomputed */ "  # checks.dialect's `{recomputed()}` for Spark: a CTE never computed once
_WITH = re.compile(r"\s*WITH\s", re.IGNORECASE)
# More than a filter and a projection over one relation: worth keeping rather than recomputing. A UNION
# of filtered scans is not (reassignment_legal's phases of every change: 4.4 s inlined, 4.8 s kept).
_HEAVY = re.compile(r"\b(JOIN|GROUP\s+BY|OVER|WINDOW|DISTINCT)\b", re.IGNORECASE)
# A scan whose filter calls functions (list sizes, contains, distinct counts), read three times or more: its
# rows are kept (distinct_replicas' duplicate lists, read once per list: 10.5 -> 5.5 s at 1M events). A scan
# filtered by plain column tests only is read again from the cached events, cheaper than its kept rows
# (isr_elr_sanity's states, read eight times: 5.0 s read again, 7.3 s kept).
_COMPUTED = re.compile(r"\bWHERE\b.*\b[A-Za-z_]+\s*\(", re.IGNORECASE | re.DOTALL)


def strip_comments(sql: str) -> str:
    """`sql` without its `--` comments (a comment may hold quotes and parentheses; a string may hold `--`)."""
    out, i, quote = [], 0, None
    while i < len(sql):
        ch = sql[i]
        if quote:
            out.append(ch)
            if ch == quote:
                quote = None
        elif ch in "'`\"":
            quote = ch
            out.append(ch)
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            i = len(sql) if end < 0 else end
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class Query:
    ctes: tuple[tuple[str, str], ...]  # (name, body) in order
    main: str
    recomputed: frozenset[str] = frozenset()  # the CTEs marked `{recomputed()}`: read again, never kept
    marker: str = RECOMPUTED  # how the query spells that mark (its dialect's)

    def text(self, skip: frozenset[str] = frozenset()) -> str:
        kept = [(n, b) for n, b in self.ctes if n not in skip]
        if not kept:
            return self.main
        return "WITH " + ",\n".join(f"{n} AS {self.marker if n in self.recomputed else ''}({b})"
                                     for n, b in kept) + "\n" + self.main


def split(sql: str) -> Query:
    """The query's top-level CTEs and its final SELECT (no CTE: `ctes` empty, `main` the query)."""
    text = strip_comments(sql)
    m = _WITH.match(text)
    if not m:
        return Query((), text.strip())
    pos, ctes, recomputed, marker = m.end(), [], set(), RECOMPUTED
    while True:
        n = _NAME.match(text, pos)
        if not n:
            raise ValueError(f"cannot read a CTE name near {text[pos:pos + 60]!r}")
        end = closing_paren(text, n.end() - 1)
        ctes.append((n.group(1), text[n.end():end].strip()))
        if n.group(2):
            recomputed.add(n.group(1))
            marker = n.group(2)
        pos = end + 1
        rest = text[pos:].lstrip()
        if not rest.startswith(","):
            return Query(tuple(ctes), rest.strip(), frozenset(recomputed), marker)
        pos = text.index(",", pos) + 1


def reads(name: str, text: str) -> int:
    """How many times `text` reads the relation `name` (after FROM or JOIN)."""
    return len(re.findall(rf"\b(?:FROM|JOIN)\s+{re.escape(name)}\b", text, re.IGNORECASE))


def materialize_plan(query: Query, reserved: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """The CTEs to compute once, in their order: read twice or more by the CTEs after them and the final
    SELECT and more than a filtered scan, or read three times or more and filtered by function calls; not
    one marked `{recomputed()}` (Query.recomputed). A name in `reserved` (a table or view the engine defined) is never one: its view would replace it."""
    out = []
    for i, (name, body) in enumerate(query.ctes):
        later = " ".join(b for _, b in query.ctes[i + 1:]) + " " + query.main
        n = reads(name, later)
        if name.lower() not in reserved and name not in query.recomputed and n >= 2 and (_HEAVY.search(body) or (n >= 3 and _COMPUTED.search(body))):
            out.append(name)
    return tuple(out)


def view_sql(query: Query, name: str, done: frozenset[str]) -> str:
    """The SELECT of the CTE `name`, with the CTEs before it that are not views yet (`done`) as its WITH."""
    names = [n for n, _ in query.ctes]
    upto = names.index(name)
    before = Query(tuple(c for c in query.ctes[:upto] if c[0] not in done), f"SELECT * FROM ({query.ctes[upto][1]}) v__",
                   query.recomputed, query.marker)
    return before.text()
