"""Per-engine shims for the few list/set functions DuckDB and Spark SQL spell differently.

Invariant SQL is written once. Where it needs a list function it writes a template call such as
`{subset(a_isr, a_replicas)}`; `expand(sql, "duckdb"|"spark")` replaces each call (innermost
arguments first, so calls nest) with that engine's spelling. Everything outside braces is passed
through untouched, so the rest of the SQL is literally identical for both engines.

All list shims treat lists as sets of non-null ints (which is what replica/ISR lists are); results
that are lists come back sorted so both engines print them alike.
"""
from __future__ import annotations

import re
from collections.abc import Callable

DIALECTS = ("duckdb", "spark")

_COLUMN = re.compile(r"[A-Za-z_][A-Za-z_0-9]*(\.[A-Za-z_][A-Za-z_0-9]*)?")


def _duck_distinct(arg: str) -> str:
    """DuckDB: the distinct non-null elements of a list. For a column, a lambda (several times faster than
    list_distinct over these short lists); an expression stays with list_distinct, as the lambda would
    evaluate it once per element. The order differs: every caller sorts or counts."""
    if _COLUMN.fullmatch(arg):
        return f"list_filter({arg}, lambda v__, i__: v__ IS NOT NULL AND list_position({arg}, v__) = i__)"
    return f"list_distinct({arg})"


# DuckDB: the elements of {0} not in {1}, and those in it, as comprehensions (why: "subset" below); the
# shims that filter a list by another build on them
_DUCK_NOT_IN = "[x__ for x__ in {0} if not list_contains({1}, x__)]"
_DUCK_IN = "[x__ for x__ in {0} if list_contains({1}, x__)]"

# name -> (duckdb template, spark template); {0}, {1} are the expanded arguments (a template may also be a
# function of them).
SHIMS: dict[str, tuple[str | Callable[..., str], str | Callable[..., str]]] = {
    "size": ("len({0})", "size({0})"),
    "contains": ("list_contains({0}, {1})", "array_contains({0}, {1})"),
    # DuckDB spellings avoid list_distinct, list_has_all and list_intersect where they cost several times a
    # lambda over these short lists; results (NULLs included) are the same as theirs.
    "subset": (
        "CASE WHEN {1} IS NOT NULL THEN len(" + _DUCK_NOT_IN + ") = 0 END",
        "(size(array_except({0}, {1})) = 0)",
    ),
    "disjoint": ("(NOT list_has_any({0}, {1}))", "(size(array_intersect({0}, {1})) = 0)"),
    "set_eq": (
        lambda a, b: f"(list_sort({_duck_distinct(a)}) = list_sort({_duck_distinct(b)}))",
        "(array_sort(array_distinct({0})) = array_sort(array_distinct({1})))",
    ),
    "union": ("list_sort(list_distinct(list_concat({0}, {1})))", "array_sort(array_union({0}, {1}))"),
    "except": (
        "list_sort(list_distinct(" + _DUCK_NOT_IN + "))",
        "array_sort(array_except({0}, {1}))",
    ),
    # the elements of the first list not in the second, in order, duplicates kept; an element whose test is
    # NULL (the second list NULL) is left out on both engines
    "not_in": (_DUCK_NOT_IN, "filter({0}, x__ -> NOT array_contains({1}, x__))"),
    "intersect": (
        "list_sort(list_distinct(" + _DUCK_IN + "))",
        "array_sort(array_intersect({0}, {1}))",
    ),
    "distinct_size": (lambda a: f"len({_duck_distinct(a)})", "size(array_distinct({0}))"),
    # both lists one after the other, duplicates kept (NULL when either is NULL on Spark, as array_union)
    "concat": ("list_concat({0}, {1})", "concat({0}, {1})"),
    "show": ("('[' || array_to_string({0}, ', ') || ']')", "concat('[', array_join({0}, ', '), ']')"),
    "list1": ("list_value({0})", "array({0})"),
    "explode": ("unnest({0})", "explode({0})"),
    # 1-based positions of a list, one row each (Spark's sequence(1, 0) counts down, hence the filter).
    "explode_index": (
        "unnest(range(1, len({0}) + 1))",
        "explode(filter(sequence(1, greatest(size({0}), 1)), i__ -> i__ <= size({0})))",
    ),
    # an aggregate: the group's values as a sorted list
    "collect_sorted": ("list_sort(list({0}))", "array_sort(collect_list({0}))"),
    # the last non-null value of the window frame (followed by OVER in the SQL)
    "last_nn": ("last_value({0} IGNORE NULLS)", "last_value({0}, true)"),
    # a to b (integers, both included), one row each; no row when b < a
    "explode_range": ("unnest(range({0}, {1} + 1))", "explode(filter(sequence({0}, greatest({0}, {1})), x__ -> x__ <= {1}))"),
    # one comparable value for a row's columns: {digest(k, list1, ..., listk, scalar1, ...)}, the first k
    # arguments lists of non-null ints: a 64-bit hash, a narrow payload for windows (DuckDB's hash, Spark's
    # xxhash64). Both run a list's elements on into the next argument's ([1, 2], [3] hashes as [1], [2, 3]);
    # DuckDB hashes 0, false and NULL alike and [] as NULL, Spark skips a NULL. So each list is followed by its
    # length and its IS NULL flag, and each scalar by its flag: read from the end, the hashed values then
    # spell the columns back (a length says how many elements precede it), and different columns collide
    # only by chance (2^-64 a pair), never by their shape. Equal columns give equal values; unequal digests
    # mean unequal columns. (tests/checks/test_dialect.py: the shapes that collided without it, on both.)
    "digest": (
        lambda k, *xs: "hash(" + ", ".join(
            f"{x}, len({x}), {x} IS NULL" if i < int(k) else f"{x}, {x} IS NULL" for i, x in enumerate(xs)) + ")",
        lambda k, *xs: "xxhash64(" + ", ".join(
            f"{x}, coalesce(size({x}), -1), {x} IS NULL" if i < int(k) else f"{x}, {x} IS NULL"
            for i, x in enumerate(xs)) + ")",
    ),
    # {min_at_members(keys, values, members)}: the least value >= 0 of `values` at a 1-based position whose
    # element of `keys` is in `members` (positions past either list give none); NULL when there is none.
    # One expression per row instead of exploding the lists into rows and grouping them back.
    "min_at_members": (
        "list_min(list_filter({1}, lambda v__, i__: v__ >= 0 AND list_contains({2}, list_extract({0}, i__))))",
        "array_min(transform(sequence(1, greatest(size({0}), 1)), i__ -> CASE WHEN i__ <= size({0}) "
        "AND array_contains({2}, try_element_at({0}, i__)) AND try_element_at({1}, i__) >= 0 "
        "THEN try_element_at({1}, i__) END))",
    ),
    "null_ints": ("CAST(NULL AS INTEGER[])", "CAST(NULL AS ARRAY<INT>)"),
    "null_longs": ("CAST(NULL AS BIGINT[])", "CAST(NULL AS ARRAY<BIGINT>)"),
    "at": ("list_extract({0}, {1})", "try_element_at({0}, {1})"),
    # 1-based position of a value in a list, 0 when absent (both engines)
    "position": ("coalesce(list_position({0}, {1}), 0)", "CAST(array_position({0}, {1}) AS INT)"),
    # `name AS {recomputed()}(...)`: a CTE read again by each reader rather than kept (a scan, a copy of a
    # built table). DuckDB keeps every CTE read twice or more by default: at 100M events of one cluster a
    # kept copy of controller_epoch_monotonic's observations held 5.8 GB (0.9 GB read again, as fast), and
    # high_watermark_monotonic's copy of the built timeline took 45-61 s against 27-29 s. Spark's engine reads
    # the comment (checks.spark_ctes).
    "recomputed": ("NOT MATERIALIZED ", "/* recomputed */ "),
}

_CALL = re.compile(r"\{([a-z_0-9]+)\(")


def _split_args(text: str) -> list[str]:
    """Split on top-level commas (outside parentheses, brackets and quotes)."""
    args, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            args.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    if tail or args:
        args.append(tail)
    return args


def closing_paren(sql: str, open_paren: int) -> int:
    """Index of the `)` that closes the `(` at open_paren (parentheses inside quotes do not count)."""
    depth, quote = 0, None
    for i in range(open_paren, len(sql)):
        ch = sql[i]
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError(f"unbalanced parentheses near {sql[max(0, open_paren - 20):open_paren + 60]!r}")


def _call_end(sql: str, open_paren: int) -> int:
    """Index just past the `)}` that closes the call whose `(` is at open_paren."""
    i = closing_paren(sql, open_paren)
    if sql[i + 1:i + 2] != "}":
        raise ValueError(f"shim call not closed by ')}}': {sql[open_paren - 20:i + 2]!r}")
    return i + 2


def expand(sql: str, dialect: str) -> str:
    """`sql` with every `{name(args)}` replaced by the dialect's spelling."""
    if dialect not in DIALECTS:
        raise ValueError(f"unknown dialect {dialect!r}")
    which = DIALECTS.index(dialect)
    out, pos = [], 0
    while (m := _CALL.search(sql, pos)) is not None:
        name = m.group(1)
        if name not in SHIMS:
            raise ValueError(f"unknown shim {{{name}(...)}}")
        end = _call_end(sql, m.end() - 1)
        inner = sql[m.end():end - 2]
        args = [expand(a, dialect) for a in _split_args(inner)]
        out.append(sql[pos:m.start()])
        template = SHIMS[name][which]
        out.append(template(*args) if callable(template) else template.format(*args))
        pos = end
    out.append(sql[pos:])
    return "".join(out)
