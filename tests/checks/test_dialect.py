"""The dialect shims' spellings (checks/dialect.py), against real DuckDB (and real Spark for `digest`).

`digest` stands in for a row's state columns in state_continuity's window: two different states must not
get the same digest by their shape. DuckDB's bare hash gave these pairs equal values, and Spark's bare
xxhash64 the list pairs; each is checked here on both engines.
"""
from __future__ import annotations

import itertools

import duckdb
import pytest

from checks.dialect import expand

# Lists of non-null ints as the state columns hold them, NULL included; broker 0 is common in real clusters.
_LISTS = [None, [], [0], [1], [0, 0], [0, 1], [1, 0], [1, 2], [2, 1], [0, 1, 2], [1, 0, 0]]


def _literal(v: list[int] | None) -> str:
    return "NULL::INTEGER[]" if v is None else f"{v}::INTEGER[]"


def _digests(rows: list[tuple], scalars: int = 0, spark=None) -> list[int]:
    """The digest of each row (lists first, then `scalars` integer columns), in order: DuckDB's, or Spark's
    when a session is given."""
    lists = len(rows[0]) - scalars
    cols = [f"c{i}" for i in range(len(rows[0]))]
    if spark is not None:
        from pyspark.sql.types import ArrayType, IntegerType, StructField, StructType

        schema = StructType([StructField(c, ArrayType(IntegerType(), False) if i < lists else IntegerType())
                             for i, c in enumerate(cols)] + [StructField("n", IntegerType())])
        df = spark.createDataFrame([(*r, i) for i, r in enumerate(rows)], schema)
        expr = expand(f"{{digest({lists}, {', '.join(cols)})}}", "spark")
        return [r[0] for r in df.orderBy("n").selectExpr(f"{expr} AS d").collect()]
    sql = expand(f"SELECT {{digest({lists}, {', '.join(cols)})}} FROM t", "duckdb")
    con = duckdb.connect()
    types = ["INTEGER[]"] * lists + ["INTEGER"] * scalars
    con.execute(f"CREATE TABLE t ({', '.join(f'{c} {t}' for c, t in zip(cols, types))}, n INTEGER)")
    con.executemany(f"INSERT INTO t VALUES ({', '.join('?' for _ in cols)}, ?)", [(*r, i) for i, r in enumerate(rows)])
    return [v for (v,) in con.execute(sql.replace("FROM t", "FROM t ORDER BY n")).fetchall()]


@pytest.fixture(params=["duckdb", pytest.param("spark", marks=pytest.mark.spark)])
def engine(request):
    """None for DuckDB, the session's Spark for Spark."""
    return request.getfixturevalue("spark") if request.param == "spark" else None


def _key(row: tuple) -> tuple:
    return tuple(tuple(v) if isinstance(v, list) else v for v in row)


def test_the_shapes_a_bare_hash_confuses_get_different_digests(engine) -> None:
    pairs = [
        (([1, 2], [3]), ([1], [2, 3])),      # a list's elements run on into the next list's
        (([1, 0], []), ([1], [0])),          # 0 hashes like false (the IS NULL flag) and like []'s tail
        (([1, 0], [0]), ([1], [0, 0])),
        (([0, 0], [0]), ([0], [0, 0])),
        (([], []), (None, [])),              # [] hashes like NULL
        (([0], []), ([], [0])),
    ]
    for a, b in pairs:
        da, db = _digests([a, b], spark=engine)
        assert da != db, (a, b)


def test_every_pair_of_small_states_gets_different_digests(engine) -> None:
    # Three list columns then two scalar columns (NULL, 0, 1), every combination: equal digests only for equal rows.
    rows = [(*ls, *ss) for ls in itertools.product(_LISTS, repeat=3) for ss in itertools.product([None, 0, 1], repeat=2)]
    rows = rows[::7]  # ~1,900 rows: every list and scalar value still appears in every column
    seen: dict[int, tuple] = {}
    for row, digest in zip(rows, _digests(rows, scalars=2, spark=engine)):
        other = seen.setdefault(digest, _key(row))
        assert other == _key(row), f"{other} and {_key(row)} have the same digest"
    assert len(seen) == len(rows)


def test_equal_states_get_equal_digests(engine) -> None:
    rows = [([1, 2], [], None, 3, None), ([1, 2], [], None, 3, None), ([2, 1], [], None, 3, None)]
    d = _digests(rows, scalars=2, spark=engine)
    assert d[0] == d[1] != d[2] and None not in d


def _min_at_members(keys, values, members):
    """valid_high_watermark's reference: the least value >= 0 at a position whose key is a member."""
    if keys is None or values is None or members is None:
        return None
    got = [values[i] for i, k in enumerate(keys)
           if i < len(values) and values[i] is not None and values[i] >= 0 and k in members]
    return min(got) if got else None


def test_min_at_members_is_the_least_member_value() -> None:
    # keys (replicas), values (LEOs, BIGINT), members (ISR): duplicates, -1, NULLs, lists of unequal length
    keys = [None, [], [1], [1, 2], [2, 1], [1, 1], [0, 1, 2], [3, 0]]
    values = [None, [], [5], [5, -1], [-1, 5], [7, 3], [4, None, 2], [1, 2, 3], [0]]
    members = [None, [], [1], [0, 2], [1, 2, 0]]
    rows = list(itertools.product(keys, values, members))
    con = duckdb.connect()
    con.execute("CREATE TABLE t (k INTEGER[], v BIGINT[], m INTEGER[], n INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", [(*r, i) for i, r in enumerate(rows)])
    sql = expand("SELECT {min_at_members(k, v, m)} FROM t ORDER BY n", "duckdb")
    got = [v for (v,) in con.execute(sql).fetchall()]
    assert got == [_min_at_members(*r) for r in rows]


def test_not_in_keeps_the_first_lists_elements_missing_from_the_second() -> None:
    # order and duplicates of the first list kept; a NULL second list leaves nothing (its tests are NULL)
    rows = list(itertools.product(_LISTS, _LISTS))
    con = duckdb.connect()
    con.execute("CREATE TABLE t (a INTEGER[], b INTEGER[], n INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?)", [(*r, i) for i, r in enumerate(rows)])
    got = [v for (v,) in con.execute(expand("SELECT {not_in(a, b)} FROM t ORDER BY n", "duckdb")).fetchall()]
    want = [None if a is None else [] if b is None else [x for x in a if x not in b] for a, b in rows]
    assert got == want
