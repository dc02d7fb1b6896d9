"""One model of controller state: a normalizer's image is replay's image, applied event by event.

Every normalizer keeps its image as a `schemas.state.delta.ImageBuilder` and applies each event it makes to it at
once, so what it holds after a history is what `replay.fold` makes of the events it emitted — the same
topics, partitions, brokers, configs, features and controller. And what only the shared model got right
now holds for capture too: a deleted topic's configs go with it (Kafka's ConfigurationsDelta on
RemoveTopicRecord), so a re-created topic of the same name starts from none.
"""
from __future__ import annotations

import json
from pathlib import Path

from schemas.events import ConfigChange, ConfigResourceType, ControllerEvent
from services.kraft import LogReader
from services.kraft.normalizer import KRaftNormalizer
from services.zookeeper.normalizer import ZooKeeperNormalizer
from tests.images import assert_same_state, folded
from tests.services.capture.test_checkpoint import rich_log
from tests.services.normalize.logs import T1, LogBuilder, broker, orders_cluster, partition

T3 = "AAAAAAAAAAAAAAAAAAAABw"


def _log(b: LogBuilder, where: Path) -> list:
    where.mkdir(parents=True, exist_ok=True)
    return list(LogReader(b.write(where / "00000000000000000000.log")))


def test_the_kraft_normalizers_image_is_the_fold_of_its_events(tmp_path: Path) -> None:
    records, _ = rich_log(tmp_path)
    n = KRaftNormalizer("c1", node_id=1, clock=lambda: 42)
    events = n.feed_all(records)
    image = n.image
    assert len(image.partitions) == 3 and image.controller.leader_id == 3 and image.brokers[4].in_controlled_shutdown
    assert_same_state(image, folded(events))


def test_a_snapshot_bootstrap_leaves_the_image_the_fold_holds(tmp_path: Path) -> None:
    b = LogBuilder()
    orders_cluster(b, partitions=2)
    b.record("TopicRecord", 0, name="gone", topicId=T3)
    partition(b, T3, 0, [1, 2], [1, 2], leader=1)
    log = _log(b, tmp_path / "a")
    n = KRaftNormalizer("c1", clock=lambda: 42)
    events = n.feed_all(log)
    # a snapshot that no longer holds topic "gone", broker 3 nor partition orders-1
    s = LogBuilder()
    for bid in (1, 2):
        broker(s, bid)
    s.record("TopicRecord", 0, name="orders", topicId=T1)
    partition(s, T1, 0, [1, 2, 3], [1, 2], leader=1)
    n.begin_snapshot(100)
    events += n.feed_all(_log(s, tmp_path / "s"))
    events += n.end_snapshot(7)
    image = n.image
    assert image.topic_names == {T1: "orders"} and list(image.partitions) == [(T1, 0)]
    assert sorted(image.brokers.keys()) == [1, 2] and image.partitions[(T1, 0)].isr == (1, 2)
    assert_same_state(image, folded(events))


def test_a_recreated_topic_does_not_inherit_the_deleted_ones_configs(tmp_path: Path) -> None:
    b = LogBuilder()
    b.leader_change(leader=1, epoch=1)
    broker(b, 1)
    b.record("TopicRecord", 0, name="orders", topicId=T1)
    partition(b, T1, 0, [1], [1], leader=1)
    b.record("ConfigRecord", 0, resourceType=2, resourceName="orders", name="retention.ms", value="1000")
    b.record("RemoveTopicRecord", 0, topicId=T1)
    b.record("TopicRecord", 0, name="orders", topicId=T3)
    partition(b, T3, 0, [1], [1], leader=1)
    b.record("ConfigRecord", 0, resourceType=2, resourceName="orders", name="retention.ms", value="2000")
    n = KRaftNormalizer("c1", clock=lambda: 42)
    events = n.feed_all(LogReader(b.write(tmp_path / "00000000000000000000.log")))
    configs = [e.payload for e in events if isinstance(e.payload, ConfigChange)]
    assert [(c.value, c.previous_value) for c in configs] == [("1000", None), ("2000", None)]
    assert dict(n.image.topic_configs("orders")) == {"retention.ms": "2000"}
    assert_same_state(n.image, folded(events))


def _secret(b: LogBuilder, value: str) -> None:
    b.record("ConfigRecord", 0, resourceType=4, resourceName="1", name="listener.name.sasl.jaas.config", value=value)


def test_a_snapshot_restating_a_secret_says_it_changed_only_when_it_did(tmp_path: Path) -> None:
    b = LogBuilder()
    b.leader_change(leader=1, epoch=1)
    _secret(b, "first")
    n = KRaftNormalizer("c1", clock=lambda: 42)
    n.feed_all(_log(b, tmp_path / "a"))

    def snapshot(value: str, where: str) -> list[ControllerEvent]:
        s = LogBuilder()
        _secret(s, value)
        n.begin_snapshot(100)
        out = n.feed_all(_log(s, tmp_path / where))
        return out + n.end_snapshot(7)
    assert snapshot("first", "same") == []  # restated: nothing happened
    changed = [e.payload for e in snapshot("second", "changed")]
    assert changed == [ConfigChange(ConfigResourceType.BROKER, "1", "listener.name.sasl.jaas.config",
                                    "[redacted]", "[redacted]", True)]
    assert n.image.broker_configs(1)["listener.name.sasl.jaas.config"] == "[redacted]"


def test_zookeeper_topic_config_secrets_changed_are_recorded_restated_are_not() -> None:
    from services.zookeeper import Op, Txn

    n = ZooKeeperNormalizer("c", clock=lambda: 42)

    def write(zxid: int, value: str) -> list[ControllerEvent]:
        data = ('{"version":1,"config":{"my.password":"%s","retention.ms":"5"}}' % value).encode()
        return n.feed(Txn(1, 0, zxid, 1000 + zxid, 5, (Op("setData", "/config/topics/orders", data, 1),), "log.1"))
    first = [e.payload for e in write(1, "a")]
    assert [(c.name, c.value) for c in first] == [("my.password", "[redacted]"), ("retention.ms", "5")]
    assert write(2, "a") == []  # the znode rewritten whole, nothing changed
    again = [e.payload for e in write(3, "b")]
    assert [(c.name, c.value, c.previous_value, c.redacted) for c in again] == [
        ("my.password", "[redacted]", "[redacted]", True)]


def test_zookeeper_dynamic_broker_configs_are_config_changes_the_default_as_krafts() -> None:
    """/config/brokers/<default> (kafka-configs --entity-type brokers --entity-default) is the cluster-wide
    default: resource name "", as KRaft writes it and the checks read it (unclean.leader.election.enable's
    scopes); /config/brokers/<id> one broker's."""
    from services.zookeeper import Op, Txn

    n = ZooKeeperNormalizer("c", clock=lambda: 42)

    def write(zxid: int, path: str, config: dict, kind: str = "setData") -> list:
        data = json.dumps({"version": 1, "config": config}).encode()
        return [e.payload for e in n.feed(Txn(1, 0, zxid, 1000 + zxid, 5, (Op(kind, path, data, 1),), "log.1"))]
    assert write(1, "/config/brokers/<default>", {"unclean.leader.election.enable": "true"}, "create") == [
        ConfigChange(ConfigResourceType.BROKER, "", "unclean.leader.election.enable", "true", None, False)]
    assert write(2, "/config/brokers/2", {"unclean.leader.election.enable": "false"}, "create") == [
        ConfigChange(ConfigResourceType.BROKER, "2", "unclean.leader.election.enable", "false", None, False)]
    assert write(3, "/config/brokers/<default>", {}) == [  # kafka-configs --delete-config: the key goes
        ConfigChange(ConfigResourceType.BROKER, "", "unclean.leader.election.enable", None, "true", False)]
    assert dict(n.image.broker_configs(2)) == {"unclean.leader.election.enable": "false"}
