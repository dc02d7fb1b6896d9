"""Each handmade history breaks exactly its invariant (DuckDB); clean ones pass."""
from __future__ import annotations

import pytest

from checks.catalog import NAMES
from checks.duckdb_engine import DuckDBEngine, sort_key
from schemas.archive import flat
from schemas.codec import to_avro
from tests.checks.cases import CLEAN, VIOLATING, duckdb_rows

pytestmark = pytest.mark.xdist_group("handmade-cases")  # with test_live: each case's rows computed once


def flat_table(histories):
    rows = [flat.flatten(to_avro(e)) for h in histories for e in h.chained()]
    return flat.to_arrow(rows)


def run(histories):
    eng = DuckDBEngine.from_arrow(flat_table(histories))
    try:
        return eng.violations(NAMES)
    finally:
        eng.close()


def violated(rows):
    return sorted((r[0], r[4], r[2]) for r in rows if r[5] == "violated")


@pytest.mark.parametrize("case", sorted(VIOLATING))
def test_breaks_exactly_its_invariant(case):
    name, make = VIOLATING[case]
    h = make(case)
    got = violated(duckdb_rows(case))
    want = sorted([(name, rule, idx) for rule, idx in h.bad] + h.bad_other)
    assert got == want


@pytest.mark.parametrize("case", sorted(CLEAN))
def test_clean_history_passes(case):
    rows = duckdb_rows(case)
    assert violated(rows) == []


@pytest.mark.slow
def test_batched_histories_report_the_same_as_alone():
    cases = sorted(VIOLATING) + sorted(CLEAN)
    hs = [VIOLATING[c][1](c) for c in sorted(VIOLATING)] + [CLEAN[c](c) for c in sorted(CLEAN)]
    together = run(hs)
    alone = sorted((r for c in cases for r in duckdb_rows(c)), key=sort_key)  # each case checked alone
    assert together == alone


def test_allowed_breaches_are_reported_as_allowed():
    rows = run([CLEAN["clean_gap_then_bootstrap"]("g"), CLEAN["clean_hw_drop_after_unclean"]("u")])
    allowed = sorted((r[0], r[1], r[6]) for r in rows if r[5] == "allowed")
    assert ("state_continuity", "g", "capture gap between the two events") in allowed
    assert ("high_watermark_monotonic", "u", "unclean election between the samples (may truncate)") in allowed
    assert any(a[0] == "unclean_election_allowed" and "topic config" in a[2] for a in allowed)


def test_kip966_last_known_leader_is_allowed_and_named():
    rows = run([CLEAN["clean_kip966_last_known_leader"]("k")])
    mine = [(r[0], r[4], r[5], r[6]) for r in rows if r[0] == "unclean_election_allowed"]
    assert ("unclean_election_allowed", "last_known_leader_election", "allowed",
            "KIP-966 last known leader: ISR and ELR empty, LastKnownElr = [new leader]") in mine


def test_reregistration_in_isr_is_a_named_known_anomaly_below_mv23():
    from checks.live import REREGISTRATION_ALLOWANCE
    from tests.checks.cases import clean_reregistered_in_isr_at_mv21, reregistered_in_isr_at_mv23

    old = [r for r in run([clean_reregistered_in_isr_at_mv21("rr-old")]) if r[4] == "fenced_while_leader_or_in_isr"]
    assert len(old) == 3 and {(r[5], r[6]) for r in old} == {("allowed", REREGISTRATION_ALLOWANCE)}
    assert "KAFKA-15586" in REREGISTRATION_ALLOWANCE
    new = [r for r in run([reregistered_in_isr_at_mv23("rr-new")]) if r[4] == "fenced_while_leader_or_in_isr"]
    assert [(r[5], r[6]) for r in new] == [("violated", None)]


def test_unclean_election_loss_is_measured():
    from checks.live import DATA_LOSS_ALLOWANCE
    from tests.checks.cases import unclean_election_with_measured_loss

    rows = [r for r in run([unclean_election_with_measured_loss("loss")]) if r[4] == "unclean_election_data_loss"]
    assert [(r[0], r[5], r[6], r[9]) for r in rows] == [("high_watermark_monotonic", "allowed", DATA_LOSS_ALLOWANCE, 30)]


@pytest.mark.slow
def test_several_clusters_in_a_read_only_file_or_behind_a_view_report_the_same_as_alone(tmp_path):
    # the engine checks such a store one cluster at a time through a view of its events (one_cluster)
    import duckdb

    hs = [make(case) for case, (_, make) in sorted(VIOLATING.items())[:6]]
    assert len({h.cluster for h in hs}) == len(hs) > 1
    alone = sorted((r for h in hs for r in run([h])), key=sort_key)
    assert alone
    path = tmp_path / "events.duckdb"
    con = duckdb.connect(str(path))
    con.register("t", flat_table(hs))
    con.execute("CREATE TABLE events AS SELECT * FROM t")
    con.close()
    eng = DuckDBEngine(duckdb.connect(str(path), read_only=True))
    try:
        assert eng.violations(NAMES) == alone
        assert eng.con.execute("SELECT count(DISTINCT cluster_id) FROM events").fetchall() == [(len(hs),)]
    finally:
        eng.close()
    con = duckdb.connect()
    con.register("t", flat_table(hs))
    con.execute("CREATE TABLE raw_events AS SELECT * FROM t")
    con.execute("CREATE TEMP VIEW events AS SELECT * FROM raw_events")
    assert DuckDBEngine.from_connection(con).violations(NAMES) == alone
    con.close()


def _kept_ctes(con, sql):
    """The CTEs DuckDB's plan keeps (materializes) for `sql`."""
    import re

    return set(re.findall(r"CTE Name: (\w+)", "\n".join(r[1] for r in con.execute("EXPLAIN " + sql).fetchall())))


def test_ctes_marked_recomputed_and_copies_of_a_built_timeline_are_read_again_not_kept():
    """DuckDB keeps a CTE read twice or more; `{recomputed()}` and a copy of a built shared relation are read
    again instead (at 100M events: 5.8 GB for controller_epoch_monotonic's kept scan, a second timeline for
    high_watermark_monotonic). Inlined, the timeline is a window pass, and is kept as before."""
    from checks.catalog import shared_sql, shared_table, sql_for

    h = [make(case) for case, (_, make) in sorted(VIOLATING.items())]
    eng = DuckDBEngine.from_arrow(flat_table(h))
    try:
        con = eng.con
        assert "obs" not in _kept_ctes(con, sql_for("controller_epoch_monotonic", "duckdb"))
        assert "pc" not in _kept_ctes(con, sql_for("fenced_broker_not_in_isr", "duckdb"))
        assert "timeline" in _kept_ctes(con, sql_for("high_watermark_monotonic", "duckdb"))
        built = frozenset({"partition_timeline"})
        con.execute(f"CREATE TEMP TABLE {shared_table('partition_timeline')} AS "
                    f"{shared_sql('partition_timeline', 'duckdb')}")
        hwm = sql_for("high_watermark_monotonic", "duckdb", built)
        assert "timeline" not in _kept_ctes(con, hwm)
        inlined = sql_for("high_watermark_monotonic", "duckdb")
        assert sorted(con.execute(hwm).fetchall()) == sorted(con.execute(inlined).fetchall())
        assert con.execute(f"SELECT count(*) FROM ({hwm})").fetchone()[0] > 0
    finally:
        eng.close()


@pytest.mark.slow
def test_a_shared_relation_is_dropped_once_its_last_reader_has_run(monkeypatch):
    """The partition timeline's table goes as soon as high_watermark_monotonic (its last reader) has run:
    the queries after it do not share the memory limit with it. The rows are those of each query alone."""
    from checks.catalog import last_readers, shared_table
    from checks.findings import Findings

    names = ["valid_high_watermark", "high_watermark_monotonic", "unclean_election_allowed", "state_continuity"]
    assert last_readers(names, {"partition_timeline"}) == {
        "valid_high_watermark": (), "high_watermark_monotonic": ("partition_timeline",),
        "unclean_election_allowed": (), "state_continuity": ()}
    assert last_readers(names, set()) == {n: () for n in names}
    assert last_readers(list(reversed(names)), {"partition_timeline"})["valid_high_watermark"] == ("partition_timeline",)

    h = [make(case) for case, (_, make) in sorted(VIOLATING.items())]
    eng = DuckDBEngine.from_arrow(flat_table(h))
    table = shared_table("partition_timeline")
    seen: list[bool] = []
    add_query = Findings.add_query

    def watched(self, sql):  # is the timeline's table there when each query runs?
        seen.append(eng.con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = ?", [table]).fetchone()[0] == 1)
        return add_query(self, sql)

    monkeypatch.setattr(Findings, "add_query", watched)
    try:
        together = eng.violations(names)
        # one cluster at a time (DuckDBEngine.findings): built and dropped again for each
        assert len(seen) == 4 * len(h) and seen == [True, True, False, False] * len(h)
        alone = sorted((r for n in names for r in eng.violations([n])), key=sort_key)
        assert together == alone and any(r[0] == "high_watermark_monotonic" for r in together)
    finally:
        eng.close()
