"""Event ids and the hash chain."""
from __future__ import annotations

from dataclasses import replace

from schemas import SourceKind, SourcePosition, codec
from schemas.archive.chain import Chain, record_hash
from schemas.event_ids import event_id
from tests.schemas.samples import CLUSTER, chained_history, sample_event


def test_event_id_depends_only_on_cluster_and_position() -> None:
    a = SourcePosition(SourceKind.KRAFT_LOG, offset=10, index=0, node_id=1)
    b = SourcePosition(SourceKind.KRAFT_LOG, offset=10, index=0, node_id=3)  # another node's copy
    assert event_id(CLUSTER, a) == event_id(CLUSTER, b)
    assert event_id(CLUSTER, a) != event_id(CLUSTER, replace(a, offset=11))
    assert event_id(CLUSTER, a) != event_id(CLUSTER, replace(a, index=1))
    assert event_id(CLUSTER, a) != event_id("other", a)
    assert len(event_id(CLUSTER, a)) == 32


def test_chain_links_and_hashes() -> None:
    events = chained_history()
    assert [e.seq for e in events] == list(range(len(events)))
    assert events[0].prev_hash == ""
    for prev, cur in zip(events, events[1:]):
        assert cur.prev_hash == prev.hash
    for e in events:
        assert record_hash(codec.to_avro(e)) == e.hash


def test_any_edit_changes_the_hash() -> None:
    event = chained_history()[3]
    edited = replace(event, controller_epoch=event.controller_epoch + 1)
    assert record_hash(codec.to_avro(edited)) != event.hash


def test_chain_resumes_from_a_stored_head() -> None:
    events = chained_history()
    resumed = Chain(CLUSTER, next_seq=5, head_hash=events[4].hash)
    again = [resumed.append(replace(e, seq=0, prev_hash="", hash="")) for e in events[5:]]
    assert again == events[5:]


def test_chain_refuses_another_cluster() -> None:
    import pytest

    with pytest.raises(ValueError, match="appended to chain of"):
        Chain("other").append(sample_event("CaptureGap"))
