"""One model of controller state: the simulator decides from replay's image, applied event by event.

The journal applies every event it emits to one `schemas.state.delta.ImageBuilder`, and the simulator reads
partition states and topic configs from it; so what it holds after a run is what `schemas.state.delta.fold` makes
of the chained events it emitted, breaches included (those the fold refuses, it still applies). What stays
simulator state is the workload's truth, and the tests here show where that differs from the image.
"""
from __future__ import annotations

from dataclasses import replace

import pytest

from schemas.events import ConfigResourceType, ControllerEvent, PartitionChange, TopicChange, TopicChangeKind
from schemas.state.errors import ReplayError
from schemas.state.image import ControllerImage
from services.simulator import BREACHES, SimConfig, Simulator
from services.simulator.__init__ import Simulation
from services.simulator.model import MIN_ISR, UNCLEAN
from tests.images import assert_same_state, folded

KRAFT = SimConfig(seed=21, events=6000)
ELR = SimConfig(seed=22, events=6000, elr=True, metadata_version=25)
OLD_MV = SimConfig(seed=23, events=6000, metadata_version=10, racks=0, brokers=5)
ZOOKEEPER = SimConfig(seed=24, events=6000, zookeeper=True)


def _steps(sim: Simulator, until: int) -> list[ControllerEvent]:
    """Every event the simulator makes until it has made `until` (unlike `events()`, none is held back)."""
    made: list[ControllerEvent] = []
    sim.startup()
    while sim.j.seq < until:
        made += sim.j.out
        sim.j.out.clear()  # between steps only: a breach may take back its step's last event (a lost one)
        sim.next_step()
    return made + list(sim.j.out)


def _registry_is_the_images(sim: Simulator) -> None:
    """The workload's topics are the image's (breach fixtures aside), with their partitions and configs."""
    delta = sim.j.delta
    assert {t.topic_id for t in sim.topics.values()} <= set(delta.topic_ids())
    for t in sim.topics.values():
        assert delta.topic_name(t.topic_id) == t.name
        assert delta.partitions_of(t.topic_id) == [p.id for p in t.partitions]
        assert t.config(MIN_ISR) is not None and t.min_isr(99) == int(t.config(MIN_ISR))


@pytest.mark.parametrize("cfg", [KRAFT, ELR, OLD_MV], ids=["kraft", "elr", "old-mv"])
def test_the_simulators_image_is_the_fold_of_its_events(cfg: SimConfig) -> None:
    sim = Simulator(cfg)
    events = _steps(sim, cfg.events)
    image = sim.image
    assert len(image.partitions) >= cfg.topics * cfg.partitions // 2 and image.metadata_version == cfg.metadata_version
    assert any(isinstance(e.payload, TopicChange) and e.payload.kind is TopicChangeKind.DELETED for e in events)
    assert_same_state(image, folded(events))  # and a clean history folds without one refusal
    _registry_is_the_images(sim)
    assert {t.topic_id for t in sim.topics.values()} == set(sim.j.delta.topic_ids())  # no breach fixtures here
    # KRaft mode shows every broker change: the image's brokers are the workload's
    assert dict(image.brokers) == {b.id: b.state() for b in sim.brokers.values() if b.registered}
    assert image.controller == ControllerImage(sim.j.controller_id, sim.j.controller_epoch, sim.voters)


def test_a_change_is_made_by_emitting_it() -> None:
    sim = Simulator(SimConfig(seed=3, events=100, topics=2, partitions=3))
    sim.startup()
    p = sim.live.choice(sim.rng)
    before = p.state
    ch = sim.build(p, target_isr=(before.leader,))
    assert ch is not None
    e = sim.apply(p, ch.after)
    assert p.state is ch.after is sim.j.delta.partition(p.topic.topic_id, p.id)
    assert isinstance(e.payload, PartitionChange) and e.payload.before is before
    t = p.topic
    unclean = t.unclean_allowed
    sim.set_topic_config(t, UNCLEAN, None if unclean else "true")
    assert t.unclean_allowed is not unclean
    assert sim.image.topic_configs(t.name).get(UNCLEAN) == (None if unclean else "true")
    sim.delete_topic(t)
    assert p.state is None and sim.j.delta.configs_of(ConfigResourceType.TOPIC, t.name) == {}


def test_zookeeper_mode_the_image_holds_what_a_zookeeper_cluster_shows_the_workload_keeps_the_truth() -> None:
    """The reason broker flags stay simulator state: a ZooKeeper cluster shows a broker only as registered
    (live) or gone, so a fenced broker is absent from the image but still registered in the workload."""
    cfg = ZOOKEEPER
    sim = Simulator(cfg)
    sim.startup()
    made: list[ControllerEvent] = []
    fenced_but_registered = 0
    while sim.j.seq < cfg.events:
        made += sim.j.out
        sim.j.out.clear()
        sim.next_step()
        delta = sim.j.delta
        for b in sim.brokers.values():
            shown = delta.broker(b.id)
            if b.registered and not b.fenced:
                assert shown == replace(b.state(), in_controlled_shutdown=False)
            else:
                assert shown is None
                fenced_but_registered += b.registered
    made += sim.j.out
    assert fenced_but_registered > 0
    image = sim.image
    assert image.metadata_version is None and not image.features
    assert_same_state(image, folded(made))
    _registry_is_the_images(sim)


# Every breach, each four times (their variants take turns), into one history per mode.
INJECT = [(name, 1000 + 250 * k) for k, name in enumerate(list(BREACHES) * 4)]


@pytest.mark.parametrize("cfg", [
    replace(KRAFT, events=16_000), replace(ELR, events=16_000), replace(ZOOKEEPER, events=16_000),
], ids=["kraft", "elr", "zookeeper"])
def test_with_every_breach_the_image_is_still_the_fold_of_the_events(cfg: SimConfig) -> None:
    run = Simulation(cfg, INJECT)
    events = _steps(run.sim, cfg.events)
    truth = run.injector.records
    # (ELR laundering records the ELR that could not exist as its set-up, isr_elr_sanity's breach)
    assert len([b for b in truth if b.setup_for is None]) == len(INJECT) and not run.injector.pending
    refused: list[tuple[int, str]] = []

    def collect(exc: ReplayError, event: ControllerEvent) -> None:
        refused.append((event.seq, exc.reason))
    assert_same_state(run.sim.image, folded(events, collect))
    _registry_is_the_images(run.sim)
    # The fold refuses just the breaches that break its own rules: a partition change whose before is not
    # the last after (the lost event) and a partition of a topic that was never created; the image applies
    # them all the same, as the simulator did.
    continuity = {b.seq for b in truth if b.invariant == "state_continuity"}
    assert len(continuity) == 4 and {seq for seq, _ in refused} == continuity
    assert all("is not in the image" in why or "image has" in why for _, why in refused)
    # a stale ControllerChange is in the history, and the quorum's next one is the image's controller
    assert run.sim.image.controller == ControllerImage(run.sim.j.controller_id, run.sim.j.controller_epoch,
                                                       run.sim.voters)
