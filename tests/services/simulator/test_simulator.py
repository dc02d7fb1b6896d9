"""The simulator's histories: deterministic, clean by the invariants, every breach as ground truth says."""
from __future__ import annotations

import hashlib
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemas.event_ids import event_id
from schemas.codec import HEADER_LEN, encode
from schemas.events import (
    BrokerChange,
    BrokerChangeKind,
    ControllerChange,
    ElectionType,
    FeatureLevelChange,
    OffsetSample,
    PartitionChange,
    SourceKind,
)
from schemas.archive.verified import verify as verified_read
from schemas.archive import iter_events
from services.simulator import BREACHES, SimConfig, Simulator, simulate, simulate_to_archive
from services.simulator.__init__ import Simulation
from tests.services.simulator.invariants import Checker


def config(seed: int, **kw) -> SimConfig:
    """Three flavours: 3.9 with racks, 4.0 with ELR, and an old metadata.version without racks."""
    flavour = seed % 3
    base = dict(seed=seed, events=kw.pop("events", 8000))
    if flavour == 1:
        base.update(elr=True, metadata_version=25)
    elif flavour == 2:
        base.update(metadata_version=10, racks=0, brokers=5)
    base.update(kw)
    return SimConfig(**base)


def test_exact_length_and_envelope():
    events = list(simulate(SimConfig(seed=5, events=3000)))
    assert len(events) == 3000
    assert [e.seq for e in events] == list(range(3000))
    offsets = [(e.source.offset, e.source.index) for e in events]
    assert len(set(offsets)) == len(offsets)
    assert all(a[0] <= b[0] for a, b in zip(offsets, offsets[1:]))
    assert all(a.event_time_ms <= b.event_time_ms for a, b in zip(events, events[1:]))
    for e in events:
        assert e.source.kind == SourceKind.SIMULATOR
        assert e.event_id == event_id(e.cluster_id, e.source)
        assert e.metadata_version == 21 and e.capture_time_ms >= e.event_time_ms
        assert e.hash == "" and e.prev_hash == ""
    assert isinstance(events[0].payload, ControllerChange)
    assert events[1].payload == FeatureLevelChange("metadata.version", 21)


def test_zookeeper_mode_history_shows_what_a_zookeeper_cluster_would():
    """Sourced ZOOKEEPER, no metadata.version (and no feature record), brokers only registered (live) or gone;
    the same decisions as the KRaft-shaped run of the seed, the broker states aside."""
    zk = list(simulate(SimConfig(seed=5, events=3000, zookeeper=True)))
    kraft = list(simulate(SimConfig(seed=5, events=6000)))
    assert [e.seq for e in zk] == list(range(3000))
    assert {e.source.kind for e in zk} == {SourceKind.ZOOKEEPER} and {e.metadata_version for e in zk} == {None}
    assert all(e.event_id == event_id(e.cluster_id, e.source) for e in zk)
    assert not any(isinstance(e.payload, FeatureLevelChange) for e in zk)
    brokers = [e.payload for e in zk if isinstance(e.payload, BrokerChange)]
    assert {b.kind for b in brokers} == {BrokerChangeKind.REGISTERED, BrokerChangeKind.UNREGISTERED}
    assert all((b.after is None) == (b.kind is BrokerChangeKind.UNREGISTERED) for b in brokers)
    assert all(not b.after.fenced and not b.after.in_controlled_shutdown for b in brokers if b.after)
    changes = lambda es: [e.payload for e in es if isinstance(e.payload, PartitionChange)]  # noqa: E731
    assert changes(zk) == changes(kraft)[:len(changes(zk))]
    assert Checker().run(zk).violations == []


def test_same_seed_same_history_other_seed_other_history(tmp_path):
    a = simulate_to_archive(tmp_path / "a", SimConfig(seed=11, events=4000), fsync=False)
    b = simulate_to_archive(tmp_path / "b", SimConfig(seed=11, events=4000), fsync=False)
    c = simulate_to_archive(tmp_path / "c", SimConfig(seed=12, events=4000), fsync=False)
    ids = lambda r, d: [e.event_id for e in iter_events(d / r.config.cluster)]  # noqa: E731
    assert ids(a, tmp_path / "a") == ids(b, tmp_path / "b")
    assert [m.sha256 for m in a.files] == [m.sha256 for m in b.files]
    assert a.chain_head_hash == b.chain_head_hash != c.chain_head_hash


# sha256 of the encoded events' Avro bodies (the single-object header names the writer schema, which a release
# that only appends kinds changes: v2's bodies of these histories are v1's, byte for byte) of three histories with every breach injected twice, as c11d6dd made them
# (before the simulator moved onto replay's image): a seed's history is its bench figures' and its tests'
# input, so a change that alters it must mean to, and update these (and say so). The KRaft and ELR ones changed
# when the breaches anchored to the specs joined the turns: a second unclean election is now laundered through
# an ELR that could not exist (KRaft, metadata.version 21), a second valid_high_watermark breach is an ELR
# member behind the HW of its entry (ELR).
_INJECT_TWICE = [(name, 500 + 150 * k) for k, name in enumerate(list(BREACHES) * 2)]
_PINNED = [
    (SimConfig(seed=31, events=6000), "d44386e55e5b5b4f71acce041941f29f6ee9bcb906712930f71f09987a407215"),
    (SimConfig(seed=32, events=6000, elr=True, metadata_version=25),
     "08821cb90c332a501924f8b28c3ec4342037325adb216d12e88a13ac6dfaed1d"),
    (SimConfig(seed=33, events=6000, zookeeper=True), "4e4166d6474790e403d27cf5cc9fef76508aa5834d469eae76269673861f4bf6"),
]


@pytest.mark.parametrize(("cfg", "digest"), _PINNED, ids=["kraft", "elr", "zookeeper"])
def test_a_seeds_history_is_the_one_pinned(cfg, digest):
    run = Simulation(cfg, _INJECT_TWICE)
    h = hashlib.sha256()
    for e in run.events():
        h.update(encode(e)[HEADER_LEN:])
    assert len([b for b in run.breaches if b.setup_for is None]) == len(_INJECT_TWICE)
    assert h.hexdigest() == digest


@pytest.mark.parametrize("seed", range(21))
def test_clean_histories_have_no_violations(seed):
    checker = Checker().run(simulate(config(seed)))
    assert checker.violations == []


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**31), brokers=st.integers(3, 9), racks=st.integers(0, 4), rf=st.integers(1, 3),
    topics=st.integers(1, 6), partitions=st.integers(1, 20), mv=st.sampled_from([8, 12, 21, 25]),
    min_isr=st.integers(1, 3), unclean=st.floats(0, 1),
)
def test_property_clean_histories_satisfy_the_invariants(seed, brokers, racks, rf, topics, partitions, mv,
                                                         min_isr, unclean):
    cfg = SimConfig(seed=seed, brokers=brokers, racks=racks, replication_factor=rf, topics=topics,
                    partitions=partitions, metadata_version=mv, elr=mv >= 23, min_insync_replicas=min_isr,
                    unclean_topic_fraction=unclean, events=2500)
    assert Checker().run(simulate(cfg)).violations == []


@pytest.mark.slow
def test_a_long_run_exercises_every_rule():
    elections, kinds, brokers, payloads = Counter(), Counter(), Counter(), Counter()
    for seed in (1, 3):
        for e in simulate(config(seed, events=60000)):
            p = e.payload
            payloads[type(p).__name__] += 1
            if isinstance(p, PartitionChange):
                elections[p.election] += 1
                kinds.update(p.changes)
            elif isinstance(p, BrokerChange):
                brokers[p.kind] += 1
    assert set(elections) >= {ElectionType.NONE, ElectionType.PREFERRED, ElectionType.CLEAN, ElectionType.UNCLEAN,
                              ElectionType.ELR, ElectionType.REASSIGNMENT, ElectionType.CONTROLLED_SHUTDOWN}
    assert set(brokers) >= {BrokerChangeKind.REGISTERED, BrokerChangeKind.FENCED, BrokerChangeKind.UNFENCED,
                            BrokerChangeKind.CONTROLLED_SHUTDOWN}
    for k in ("CREATE", "DELETE", "LEADER", "ISR", "REPLICAS", "REASSIGNMENT_START", "REASSIGNMENT_COMPLETE",
              "REASSIGNMENT_CANCEL", "ELR", "RECOVERY_STATE"):
        assert kinds[k] > 0, k
    for name in ("ControllerChange", "BrokerChange", "TopicChange", "PartitionChange", "ConfigChange",
                 "FeatureLevelChange", "OffsetSample"):
        assert payloads[name] > 0, name


def test_leader_epoch_bumps_on_isr_shrink_only_before_mv_12():
    for mv, bumps in ((10, True), (21, False)):
        seen = False
        for e in simulate(SimConfig(seed=2, events=4000, metadata_version=mv)):
            p = e.payload
            if isinstance(p, PartitionChange) and p.before and p.after and p.after.leader == p.before.leader \
                    and set(p.after.isr) < set(p.before.isr) and p.after.replicas == p.before.replicas:
                assert (p.after.leader_epoch > p.before.leader_epoch) == (bumps and p.after.leader >= 0)
                seen = True
        assert seen


def test_offset_samples_read_hw_then_leos():
    hw: dict = {}
    for e in simulate(SimConfig(seed=4, events=5000)):
        p = e.payload
        if isinstance(p, OffsetSample):
            assert p.sample_order == "HW_THEN_LEO"
            assert all(r.time_ms > p.hw_time_ms for r in p.replicas)
            assert p.high_watermark >= hw.get((p.topic, p.partition), 0)
            hw[(p.topic, p.partition)] = p.high_watermark


def test_unregister_a_broker_without_replicas():
    sim = Simulator(SimConfig(seed=1, events=100, brokers=4, topics=1, partitions=2, replication_factor=2))
    sim.startup()
    extra = sim.add_broker(9, "rack-0")
    sim.unregister(extra)
    changes = [e.payload for e in sim.j.out if isinstance(e.payload, BrokerChange) and e.payload.broker_id == 9]
    assert [c.kind for c in changes] == [BrokerChangeKind.REGISTERED, BrokerChangeKind.UNFENCED,
                                         BrokerChangeKind.FENCED, BrokerChangeKind.UNREGISTERED]
    assert changes[-1].after is None and changes[-1].before.fenced
    busy = next(b for b in sim.brokers.values() if b.replicas)
    with pytest.raises(ValueError):
        sim.unregister(busy)


@pytest.mark.parametrize("name", BREACHES)
@pytest.mark.parametrize("seed", [1, 2, 6])
def test_each_breach_is_exactly_what_ground_truth_says(name, seed):
    run = Simulation(config(seed, events=6000), inject=[(name, 2500)])
    checker = Checker().run(run.events())
    assert len(run.breaches) == 1
    truth = run.breaches[0]
    assert truth.invariant == name and truth.seq >= 2500
    assert sorted((n, s) for n, s, _ in checker.violations) == [(name, truth.seq)]
    assert truth.description


def test_several_breaches_in_one_history(tmp_path):
    inject = [(name, 1000 + 400 * i) for i, name in enumerate(BREACHES)]
    result = simulate_to_archive(tmp_path, config(0, events=9000), inject=inject, fsync=False)
    assert [b.invariant for b in result.breaches] == list(BREACHES)
    assert result.not_injected == []
    events = list(iter_events(tmp_path / result.config.cluster))
    assert len(events) == result.events == 9000
    by_seq = {e.seq: e for e in events}
    for b in result.breaches:
        e = by_seq[b.seq]
        assert e.event_id == b.event_id
        assert getattr(e.payload, "topic", None) == b.topic
    checker = Checker().run(events)
    assert sorted((n, s) for n, s, _ in checker.violations) == sorted((b.invariant, b.seq) for b in result.breaches)
    verified_read([tmp_path / result.config.cluster])  # raises unless intact


def test_bad_injections_are_refused():
    with pytest.raises(ValueError, match="unknown breach"):
        Simulation(SimConfig(events=10), inject=[("nope", 1)])
    with pytest.raises(ValueError, match="past the end"):
        Simulation(SimConfig(events=10), inject=[("leader_in_isr", 10)])
