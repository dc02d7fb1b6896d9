"""schemas.archive.fastencode writes exactly the bytes fastavro writes for schema v1 (schemas.codec), for
every payload type and the edge values of each field (None unions, negative and 64-bit ints, empty and
long arrays, non-ASCII strings), and its caches never hand out another value's bytes."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from schemas import codec as event_codec
from schemas.events import (
    BrokerChange, BrokerChangeKind, BrokerState, CaptureGap, ConfigChange, ConfigResourceType, ControllerChange,
    ControllerEvent, ElectionType, FeatureLevelChange, LeaderRecoveryState, OffsetSample, PartitionChange,
    PartitionChangeKind, PartitionState, ReplicaOffset, SourceKind, SourcePosition, TopicChange, TopicChangeKind,
    UnknownRecord,
)
from schemas.archive import fastencode

INT = st.one_of(st.integers(-2**31, 2**31 - 1), st.integers(-10000, 10000))
LONG = st.one_of(st.integers(-2**63, 2**63 - 1), st.integers(-10000, 10000))
TEXT = st.text(max_size=40)
INTS = st.lists(INT, max_size=6).map(tuple)
opt = st.none().__or__

states = st.builds(PartitionState, INTS, INTS, INT, INT, INT, INTS, INTS, INTS, INTS,
                   st.sampled_from(LeaderRecoveryState))
brokers = st.builds(BrokerState, INT, LONG, st.booleans(), st.booleans(), opt(TEXT), opt(TEXT),
                    st.lists(TEXT, max_size=3).map(tuple))
payloads = st.one_of(
    st.builds(ControllerChange, INT, INT, INT, INT, INTS, INTS),
    st.builds(BrokerChange, INT, st.sampled_from(BrokerChangeKind), opt(brokers), opt(brokers)),
    st.builds(TopicChange, st.sampled_from(TopicChangeKind), TEXT, TEXT),
    st.builds(PartitionChange, TEXT, TEXT, INT, opt(states), opt(states),
              st.lists(st.sampled_from(PartitionChangeKind), max_size=4).map(tuple), st.sampled_from(ElectionType),
              opt(TEXT)),
    st.builds(ConfigChange, st.sampled_from(ConfigResourceType), TEXT, TEXT, opt(TEXT), opt(TEXT), st.booleans()),
    st.builds(FeatureLevelChange, TEXT, INT, opt(INT)),
    st.builds(OffsetSample, TEXT, INT, INT, INT, LONG, LONG, st.lists(st.builds(ReplicaOffset, INT, LONG, LONG),
                                                                      max_size=3).map(tuple), TEXT),
    st.builds(CaptureGap, LONG, LONG, TEXT),
    st.builds(UnknownRecord, INT, INT, st.binary(max_size=30), TEXT),
)
sources = st.builds(SourcePosition, st.sampled_from(SourceKind), LONG, INT, INT, opt(LONG), opt(TEXT), opt(LONG))
events = st.builds(ControllerEvent, TEXT, TEXT, LONG, sources, LONG, LONG, INT, INT, payloads, opt(INT),
                   st.booleans(), TEXT, TEXT)


def fast_value(e: ControllerEvent) -> bytes:
    head, tail = fastencode.parts(e, e.seq, e.prev_hash)
    return event_codec.MAGIC + event_codec.loader.current().fingerprint + head + fastencode.string(e.hash) + tail


def test_schema_is_v1():
    # if this fails, a new schema was released: teach fastencode (or the capture falls back to fastavro)
    assert fastencode.AVAILABLE


@settings(max_examples=600, deadline=None)
@given(events)
def test_same_bytes_as_fastavro(e):
    assert fast_value(e) == event_codec.encode(e)


def test_caches_hand_back_the_right_bytes():
    # equal-valued but distinct states, a state mutated nowhere but replaced: each encodes as itself
    a = PartitionState((1, 2, 3), (1, 2, 3), 1, 0, 0)
    b = PartitionState((1, 2, 3), (1, 2), 1, 0, 1)
    for before, after in ((None, a), (a, b), (b, a), (PartitionState((1, 2, 3), (1, 2, 3), 1, 0, 0), b)):
        e = ControllerEvent("id", "c", 0, SourcePosition(SourceKind.KRAFT_LOG, 5), 1, 2, 1, 1,
                            PartitionChange("t", "tid", 0, before, after))
        assert fast_value(e) == event_codec.encode(e)
    assert fastencode.int_array((1, 2)) != fastencode.int_array((2, 1))
