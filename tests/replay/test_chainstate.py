"""replay.chainstate: the stretches of a stored chain that are not verified data (holes, broken links),
found by SQL over the stored events, whatever the read before said."""
from __future__ import annotations

import duckdb

from replay.chainstate import _stretches


def _store(rows: list[tuple[str, int, str, str]]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("CREATE TABLE events (cluster_id VARCHAR, seq BIGINT, prev_hash VARCHAR, hash VARCHAR)")
    con.executemany("INSERT INTO events VALUES (?, ?, ?, ?)", rows)
    return con


def _chain(cluster: str, seqs: list[int], broken: frozenset[int] = frozenset()) -> list[tuple[str, int, str, str]]:
    """Events at `seqs` whose prev_hash is the hash of seq - 1 (whether stored or not), except at `broken`."""
    return [(cluster, s, "x" if s in broken else f"{cluster}{s - 1}", f"{cluster}{s}") for s in seqs]


def test_holes_at_the_start_and_between_and_broken_links():
    con = _store(_chain("a", [3, 4, 5, 9, 10, 12], broken=frozenset({10, 5})) + _chain("b", [0, 1, 2]))
    assert _stretches(con, "a") == [
        (0, 2, ""),
        (5, 5, "unchained: seq 5 does not continue the hash of seq 4"),
        (6, 8, ""),
        (10, 10, "unchained: seq 10 does not continue the hash of seq 9"),
        (11, 11, ""),
    ]
    assert _stretches(con, "b") == []


def test_a_break_right_after_a_hole_is_the_hole():
    # seq 9 follows a hole: its link cannot be checked, the hole says so already
    con = _store(_chain("a", [0, 1, 9], broken=frozenset({9})))
    assert _stretches(con, "a") == [(2, 8, "")]


def test_rows_of_other_clusters_do_not_fill_holes():
    con = _store(_chain("a", [0, 2]) + _chain("b", [1]))
    assert _stretches(con, "a") == [(1, 1, "")]
    assert _stretches(con, "b") == [(0, 0, "")]
