"""The rules anchored to the specs' properties name both events of their evidence: the sample and the change
that put the broker into the ELR; the laundered election and the change that made the ELR it came from. DuckDB
and the live checker alike (Spark: test_spark.py runs every case)."""
from __future__ import annotations

from checks.catalog import NAMES
from checks.duckdb_engine import DuckDBEngine
from checks.live import LiveChecker
from schemas.archive import flat
from schemas.codec import to_avro
from tests.checks import cases_anchored as cases


def _both(h, rule):
    """(seq, related_seq, status, allowance) of `rule`'s findings: DuckDB's rows, then the live alerts."""
    events = h.chained()
    eng = DuckDBEngine.from_arrow(flat.to_arrow(flat.flatten(to_avro(e)) for e in events))
    try:
        rows = eng.violations(NAMES)
    finally:
        eng.close()
    batch = sorted((r[2], r[3], r[5], r[6]) for r in rows if r[4] == rule)
    live = sorted((a.seq, a.related_seq, a.status, a.allowance) for a in LiveChecker().observe_all(events)
                  if a.rule == rule)
    return batch, live


def _index_of_elr_entry(h, topic, broker):
    """The last event that put `broker` into `topic`-0's ELR."""
    return max(i for i, e in enumerate(h.events) if type(e.payload).__name__ == "PartitionChange"
               and e.payload.topic == topic and e.payload.partition == 0 and e.payload.after is not None
               and broker in getattr(e.payload.after, "elr", ())
               and (e.payload.before is None or broker not in e.payload.before.elr))


def test_a_laundered_election_names_the_change_that_made_its_elr():
    h = cases.elr_laundered_election_at_mv21("l")
    batch, live = _both(h, "unclean_election_via_elr_that_could_not_exist")
    entry = _index_of_elr_entry(h, "v", 4)
    assert batch == live == [(len(h.events) - 1, entry, "violated", None)]


def test_a_laundered_election_where_unclean_elections_are_allowed_is_an_allowed_one():
    h = cases.elr_laundered_election_where_unclean_is_allowed("a")
    batch, live = _both(h, "unclean_election_via_elr_that_could_not_exist")
    assert batch == live == [(len(h.events) - 1, _index_of_elr_entry(h, "w", 4), "allowed",
                              "unclean.leader.election.enable=true (topic config)")]


def test_an_elr_member_behind_names_its_entry_and_the_hw_then():
    h = cases.elr_member_behind_after_reentry("e")
    batch, live = _both(h, "elr_member_behind_hw_at_entry")
    assert batch == live == [(len(h.events) - 1, _index_of_elr_entry(h, "t", 4), "violated", None)]
    eng = DuckDBEngine.from_arrow(flat.to_arrow(flat.flatten(to_avro(e)) for e in h.chained()))
    try:
        [(magnitude, expected)] = [(r[9], r[7]) for r in eng.violations(["valid_high_watermark"])
                                   if r[4] == "elr_member_behind_hw_at_entry"]
    finally:
        eng.close()
    assert magnitude == 300 - 250 and "hw 300" in expected  # the second entry's HW, not the first's (200)


def test_the_empty_isr_rule_judges_only_where_no_elr_can_exist():
    for make, want in ((cases.isr_emptied_at_mv21, 1), (cases.zk_isr_emptied, 1),
                       (cases.migrated_isr_emptied_before_elr, 1), (cases.clean_empty_isr_where_elr_can_exist, 0)):
        batch, live = _both(make(make.__name__), "isr_empty_without_elr")
        assert len(batch) == want and batch == live, make.__name__
