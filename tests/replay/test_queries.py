from __future__ import annotations

import pytest

from replay.changes import explain, timeline
from replay.errors import StoreError
from replay.queries import diff, offline, state_as_of, under_min_isr, under_replicated
from tests.replay.fixtures import DELTA2, O0_MOVED, O0_SHRUNK, O1_CREATED


def test_state_as_of_seq_offset_time(store):
    p = store.point(seq=10)
    assert store.point(offset=1105) == p  # offset 1105 falls between seq 10 (1100) and 11 (1110)
    assert store.point(time=1_700_000_010_999) == p
    r = state_as_of(store, p)
    assert r.point == p
    assert [(x.topic, x.partition, x.state) for x in r.partitions] == [
        ("orders", 0, O0_SHRUNK), ("orders", 1, O1_CREATED)]
    assert r.effective["orders"] == {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"}
    one = state_as_of(store, store.point(seq=12), "orders", 0)
    assert [x.state for x in one.partitions] == [O0_MOVED] and one.partitions[0].since_seq == 11


def test_deleted_topic_disappears(store):
    assert {x.topic for x in state_as_of(store, store.point(seq=17)).partitions} == {"orders", "audit"}
    assert {x.topic for x in state_as_of(store, store.point(seq=18)).partitions} == {"orders"}


def test_diff_lines(store):
    d = diff(store, store.point(seq=8), store.point(seq=19))
    assert [p.line() for p in d.partitions] == ["orders-0: leader: 1 -> 2, isr: [1, 2, 3] -> [1, 2], "
                                                "leader_epoch: 0 -> 1, partition_epoch: 0 -> 2"]
    assert [(i, a.fenced, b.fenced) for i, a, b in d.brokers] == [(3, False, True)]
    assert (d.controller[0].epoch, d.controller[1].epoch) == (7, 8)
    d2 = diff(store, store.point(seq=12), store.point(seq=13))
    assert d2.partitions[0].line().startswith("audit-0: created leader=3, isr=[3, 1]")
    d3 = diff(store, store.point(seq=17), store.point(seq=18))
    assert d3.partitions[0].line().startswith("audit-0: deleted (was leader=3")


def test_timeline(store):
    t = timeline(store, store.point(), "orders", 0)
    assert [(c.seq, c.changes, c.election) for c in t.changes] == [
        (7, ("CREATE",), "NONE"), (10, ("ISR",), "NONE"), (11, ("LEADER",), "CLEAN"),
        (23, ("REPLICAS", "REASSIGNMENT_START"), "NONE")]
    assert t.changes[1].diff() == "isr: [1, 2, 3] -> [1, 2], partition_epoch: 0 -> 1"
    assert t.changes[2].controller_epoch == 7 and t.changes[2].source_offset == 1110
    assert len(timeline(store, store.point(seq=10), "orders", 0).changes) == 2


def test_explain_clean_and_unclean(store):
    e = explain(store, seq=11)
    assert (e.previous_leader, e.previous_isr, e.new_leader) == (1, (1, 2), 2)
    assert e.new_leader_in_previous_isr is True and e.change.election == "CLEAN"
    assert (e.change.controller_id, e.change.controller_epoch) == (3000, 7)
    assert (e.min_insync_replicas, e.config_source["min.insync.replicas"]) == ("2", "topic")
    assert (e.unclean_leader_election_enable, e.config_source["unclean.leader.election.enable"]) == (
        "false", "Kafka default")
    u = explain(store, event_id=DELTA2[2].event_id)
    assert u.new_leader_in_previous_isr is False and u.change.election == "UNCLEAN"
    assert (u.unclean_leader_election_enable, u.config_source["unclean.leader.election.enable"]) == (
        "true", "cluster default")
    r = explain(store, offset=DELTA2[3].source.offset)
    assert r.reassignment_phase.startswith("start")
    with pytest.raises(StoreError, match="is a ControllerChange, not a partition change"):
        explain(store, seq=0)
    with pytest.raises(StoreError, match="no event at seq 999"):
        explain(store, seq=999)


def test_health_lists(store):
    p = store.point(seq=20)
    assert [(x.topic, x.partition) for x in under_replicated(store, p).partitions] == [("orders", 0), ("orders", 1)]
    assert [(x.topic, x.partition) for x in under_min_isr(store, p).partitions] == [("orders", 1)]
    assert [(x.topic, x.partition) for x in offline(store, p).partitions] == [("orders", 1)]
    assert offline(store, p).point == p
    # During a reassignment the replication factor is |replicas| - |adding| (Kafka's rule).
    last = store.point()
    urp = under_replicated(store, last)
    assert [(x.topic, x.partition) for x in urp.partitions] == [("orders", 0), ("orders", 1)]
    assert offline(store, last).partitions == ()


def test_state_as_of_orders_like_duckdb(tmp_path):
    """state_as_of orders its rows itself (not by DuckDB's ORDER BY): the same order as DuckDB's, by
    topic name in byte order and partition number, whatever order the partitions were created in."""
    from replay.queries import state_arrow
    from replay.store import Store
    from schemas.events import PartitionChange, TopicChange, TopicChangeKind
    from tests.archive_files import write_archive_file
    from tests.replay.fixtures import DELTA1, K, ev

    names = ["b", "a", "B", "\u00e9t\u00e9", "a_b", "a.b", "10", "9", "a-b", "zz"]
    events, seq = list(DELTA1[:5]), 5
    for n, name in enumerate(names):
        tid = f"{n:02d}" + "Q" * 20
        events.append(ev(seq, TopicChange(TopicChangeKind.CREATED, name, tid)))
        seq += 1
        for p in (11, 2, 0, 7):
            events.append(ev(seq, PartitionChange(name, tid, p, None, O1_CREATED, (K.CREATE,))))
            seq += 1
    write_archive_file(tmp_path / "a.avro", events)
    with Store(tmp_path / "s.duckdb") as s:
        s.load([tmp_path], workers=1)
        point = s.point()
        got = [(r.topic, r.partition) for r in state_as_of(s, point).partitions]
        duck = state_arrow(s, point)
        assert got == list(zip(duck.column("topic").to_pylist(), duck.column("partition").to_pylist()))
    assert got == sorted(((name, p) for name in names for p in (11, 2, 0, 7)),
                         key=lambda k: (k[0].encode(), k[1]))
