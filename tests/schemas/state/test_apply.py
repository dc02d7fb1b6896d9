from __future__ import annotations

from dataclasses import replace

import pytest

from schemas.events import (
    BrokerChange, BrokerChangeKind as BK, BrokerState, ConfigChange, ConfigResourceType as CRT,
    FeatureLevelChange, PartitionChange, PartitionChangeKind as K, PartitionState as PS, TopicChange,
    TopicChangeKind as TK,
)
from schemas.state.apply import apply, replay
from schemas.state.errors import ReplayError
from schemas.state.image import EMPTY
from tests.replay.fixtures import (
    A0_CREATED, AUDIT, B1, B3, B3_FENCED, CLUSTER, DELTA1, IMAGE1, O0_CREATED, O0_MOVED, O0_SHRUNK, ORDERS, ev,
)


def test_delta1_gives_image1():
    assert replay(DELTA1) == IMAGE1


def test_apply_is_pure():
    mid = replay(DELTA1[:10])
    snapshot = replace(mid)
    apply(mid, DELTA1[10])
    assert mid == snapshot
    assert mid.partition("orders", 0) == O0_CREATED


def test_provenance_follows_each_event():
    image = replay(DELTA1[:12])
    assert (image.provenance.seq, image.provenance.source_offset, image.provenance.event_time_ms) == (
        11, 1110, 1_700_000_011_000)
    assert image.provenance.controller_epoch == 7


def test_partition_handlers():
    image = replay(DELTA1[:14])
    assert image.partition("orders", 0) == O0_MOVED
    assert image.partition("audit", 0) == A0_CREATED
    deleted = apply(image, ev(14, PartitionChange("audit", AUDIT, 0, A0_CREATED, None, (K.DELETE,))))
    assert deleted.partition("audit", 0) is None
    assert deleted.topics.get_by_name("audit") is not None  # the topic stays until its TopicChange


def test_topic_delete_drops_partitions_and_configs():
    image = replay(DELTA1[:18])
    assert dict(image.topic_configs("audit")) == {"unclean.leader.election.enable": "true"}
    after = apply(image, DELTA1[18])
    assert after.topics.get_by_name("audit") is None
    assert (CRT.TOPIC, "audit") not in after.configs


def test_broker_handlers():
    image = replay(DELTA1[:10])
    assert image.brokers[3] == B3_FENCED
    unfenced = apply(image, ev(10, BrokerChange(3, BK.UNFENCED, B3_FENCED, B3)))
    assert unfenced.brokers[3] == B3
    gone = apply(unfenced, ev(11, BrokerChange(3, BK.UNREGISTERED, B3, None)))
    assert 3 not in gone.brokers
    back = apply(gone, ev(12, BrokerChange(3, BK.REGISTERED, None, replace(B3, epoch=99))))
    assert back.brokers[3].epoch == 99


def test_controller_feature_config_handlers():
    image = replay(DELTA1)
    assert (image.controller.leader_id, image.controller.epoch) == (3001, 8)
    assert image.metadata_version == 21
    off = apply(image, ev(20, FeatureLevelChange("metadata.version", 0)))
    assert off.metadata_version is None
    cfg = apply(image, ev(20, ConfigChange(CRT.TOPIC, "orders", "min.insync.replicas", None, "2")))
    assert dict(cfg.topic_configs("orders")) == {}
    assert cfg.effective_topic_config("orders", "min.insync.replicas", "1") == "1"
    brk = apply(cfg, ev(21, ConfigChange(CRT.BROKER, "", "min.insync.replicas", "3")))
    assert brk.effective_topic_config("orders", "min.insync.replicas", "1") == "3"


def test_sample_gap_unknown():
    image = replay(DELTA1[:17])
    assert image.topics == replay(DELTA1[:14]).topics  # the sample changed nothing
    assert [g.seq for g in image.gaps] == [15]
    assert image.unknown_records == 1


def _err(image, event) -> str:
    with pytest.raises(ReplayError) as info:
        apply(image, event)
    return str(info.value)


def test_error_before_mismatch_names_everything():
    image = replay(DELTA1[:11])  # orders-0 is O0_SHRUNK (leader epoch 0)
    stale = replace(O0_SHRUNK, leader_epoch=4)
    msg = _err(image, ev(11, PartitionChange("orders", ORDERS, 0, stale, O0_MOVED, (K.LEADER,))))
    assert msg == (f"replay failed at seq 11, event {11:032x}, source offset 1110, orders-0, PartitionChange: "
                   "before.leader_epoch=4 but image has 0")


def test_error_unknown_partition_and_topic():
    image = replay(DELTA1[:9])
    assert "partition is not in the image" in _err(image, ev(9, PartitionChange("orders", ORDERS, 7, O0_CREATED, O0_SHRUNK)))
    assert "topic id XXXX (nope) is not in the image" in _err(image, ev(9, PartitionChange("nope", "XXXX", 0, None, O0_CREATED)))
    assert "already has it" in _err(image, ev(9, PartitionChange("orders", ORDERS, 0, None, O0_CREATED)))
    assert "named 'orders' in the image but 'renamed'" in _err(
        image, ev(9, PartitionChange("renamed", ORDERS, 0, O0_CREATED, O0_SHRUNK)))


def test_error_broker():
    image = replay(DELTA1[:5])
    assert "tried to fence broker 9 at epoch 1 but it is not registered" in _err(
        image, ev(5, BrokerChange(9, BK.FENCED, BrokerState(9, 1, False), BrokerState(9, 1, True))))
    assert "tried to fence broker 3 at epoch 7 but registered epoch is 12" in _err(
        image, ev(5, BrokerChange(3, BK.FENCED, replace(B3, epoch=7), B3_FENCED)))
    assert "before.fenced=True but image has False" in _err(
        image, ev(5, BrokerChange(1, BK.UNFENCED, replace(B1, fenced=True), B1)))


def test_error_topic_and_envelope():
    image = replay(DELTA1[:6])
    assert "already has it as 'orders'" in _err(image, ev(6, TopicChange(TK.CREATED, "orders", ORDERS)))
    assert "created with id ZZZ but the image has it with id" in _err(image, ev(6, TopicChange(TK.CREATED, "orders", "ZZZ")))
    assert "deleted but it is not in the image" in _err(image, ev(6, TopicChange(TK.DELETED, "x", "X")))
    assert "kind UNKNOWN" in _err(image, ev(6, TopicChange(TK.UNKNOWN, "x", "X")))
    assert "seq gap: image is at seq 5, event has seq 9 (3 missing)" in _err(image, ev(9, TopicChange(TK.CREATED, "y", "Y")))
    assert "not after the image's seq 5" in _err(image, ev(5, TopicChange(TK.CREATED, "y", "Y")))
    other = replace(ev(6, TopicChange(TK.CREATED, "y", "Y")), cluster_id="other")
    assert "of cluster 'other' applied to the image of cluster" in _err(image, other)


def test_unknown_payload_type_is_an_error():
    image = replay(DELTA1[:3])
    msg = _err(image, replace(ev(3, TopicChange(TK.CREATED, "y", "Y")), payload=object()))
    assert "unknown payload type object" in msg


def test_on_error_decides_and_lenient_takes_after_state():
    image = replay(DELTA1[:11])
    stale = replace(O0_SHRUNK, leader_epoch=4)
    seen = []
    out = apply(image, ev(11, PartitionChange("orders", ORDERS, 0, stale, O0_MOVED, (K.LEADER,))),
                on_error=lambda exc, e: seen.append(exc))
    assert len(seen) == 1 and seen[0].seq == 11 and seen[0].partition == "orders-0"
    assert out.partition("orders", 0) == O0_MOVED
    assert out.provenance.seq == 11


def test_bootstrap_skips_before_checks_and_creates_topic():
    state = PS((5, 6), (5,), 5, 9, 30)
    out = apply(EMPTY, ev(0, PartitionChange("boot", "BOOTID", 3, None, state), bootstrap=True))
    assert out.partition("boot", 3) == state and out.cluster_id == CLUSTER
    again = apply(out, ev(1, PartitionChange("boot", "BOOTID", 3, PS((1,), (1,), 1, 0, 0), state), bootstrap=True))
    assert again.partition("boot", 3) == state


def test_first_event_may_start_mid_chain():
    out = apply(EMPTY, replace(DELTA1[0], seq=500))
    assert out.provenance.seq == 500
