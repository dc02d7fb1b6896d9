"""checks.spark_ctes: the CTEs of a query, which of them Spark computes once, and the SQL that reads them back."""
from __future__ import annotations

import pytest

from checks.catalog import NAMES, shared_for, shared_sql, sql_for
from checks.spark_ctes import materialize_plan, reads, split, strip_comments, view_sql

SQL = """-- a comment with a quote ' and a ( parenthesis
WITH base AS (  -- Kafka's (ISR) lists
  SELECT cluster_id, seq FROM events WHERE kind = 'A -- not a comment (' ),
joined AS (
  SELECT b.cluster_id, b.seq FROM base b JOIN events e ON e.seq = b.seq
),
once AS (SELECT * FROM joined WHERE seq > 0),
scan AS (SELECT * FROM events),
plain AS (SELECT * FROM events WHERE kind = 'B' AND has_after),
computed AS (SELECT * FROM events WHERE size(a_elr) > 1)
SELECT * FROM joined a JOIN joined b ON a.seq = b.seq
UNION ALL SELECT * FROM once JOIN scan ON once.seq = scan.seq JOIN scan s2 ON s2.seq = once.seq
UNION ALL SELECT * FROM plain JOIN plain p2 ON TRUE JOIN plain p3 ON TRUE
UNION ALL SELECT * FROM computed JOIN computed c2 ON TRUE JOIN computed c3 ON TRUE
"""


def test_split_reads_the_ctes_and_the_final_select_around_comments_and_strings():
    q = split(SQL)
    assert [n for n, _ in q.ctes] == ["base", "joined", "once", "scan", "plain", "computed"]
    assert "'A -- not a comment ('" in q.ctes[0][1]
    assert "Kafka" not in q.text() and "parenthesis" not in q.text()
    assert q.main.startswith("SELECT * FROM joined a JOIN joined b")
    assert split("SELECT 1").ctes == () and split("SELECT 1").main == "SELECT 1"


def test_strip_comments_keeps_dashes_inside_strings():
    assert strip_comments("SELECT '--x' -- gone\nFROM t") == "SELECT '--x' \nFROM t"


def test_ctes_read_twice_that_join_and_read_thrice_that_filter_by_functions_are_computed_once():
    q = split(SQL)
    assert reads("joined", q.main) == 2 and reads("scan", q.main) == 2 and reads("plain", q.main) == 3
    # joined: read twice, a join. computed: read three times, filtered by a function call. scan (twice) and
    # plain (three times): scans with plain column tests, cheaper read again than kept. base, once: read once.
    assert materialize_plan(q) == ("joined", "computed")
    assert materialize_plan(q, reserved=frozenset({"joined"})) == ("computed",)


def test_a_cte_marked_recomputed_is_never_computed_once_and_keeps_its_mark():
    from checks.dialect import expand

    sql = expand("WITH j AS {recomputed()}(SELECT b.seq FROM events b JOIN events e ON e.seq = b.seq),\n"
                 "k AS (SELECT b.seq FROM events b JOIN events e ON e.seq = b.seq)\n"
                 "SELECT * FROM j JOIN j j2 ON TRUE JOIN k ON TRUE JOIN k k2 ON TRUE", "spark")
    q = split(sql)
    assert q.recomputed == frozenset({"j"}) and materialize_plan(q) == ("k",)
    assert q.text().startswith("WITH j AS /* recomputed */ (SELECT b.seq") and "k AS (SELECT" in q.text()
    duck = split(expand("WITH j AS {recomputed()}(SELECT b.seq FROM t b), k AS (SELECT 1) SELECT * FROM j", "duckdb"))
    # DuckDB's spelling of the mark is read and written back as DuckDB's (checks.catalog cuts DuckDB queries too)
    assert duck.recomputed == frozenset({"j"}) and duck.text().startswith("WITH j AS NOT MATERIALIZED (SELECT b.seq")
    assert "k AS (SELECT 1)" in duck.text()


def test_view_sql_carries_the_ctes_before_it_that_are_not_views():
    q = split(SQL)
    text = view_sql(q, "joined", frozenset())
    assert text.startswith("WITH base AS (") and "FROM base b JOIN events" in text
    assert view_sql(q, "joined", frozenset({"base"})).startswith("SELECT * FROM (")
    rest = q.text(frozenset({"joined"}))
    assert "joined AS (" not in rest and "base AS (" in rest and rest.endswith(q.main)


def _bare(sql: str) -> str:
    return "".join(sql.split())


@pytest.mark.parametrize("dialect", ["spark", "duckdb"])
@pytest.mark.parametrize("name", NAMES)
def test_every_invariant_splits_back_into_the_same_query(name, dialect):
    """Cut and put back together, each query is its text without comments (so the rows cannot change)."""
    sql = sql_for(name, dialect, frozenset(shared_for(NAMES)))
    q = split(sql)
    assert _bare(q.text()) == _bare(strip_comments(sql))


def test_the_shared_timeline_splits_back_too():
    for s in shared_for(NAMES):
        sql = shared_sql(s, "spark")
        assert _bare(split(sql).text()) == _bare(strip_comments(sql))
