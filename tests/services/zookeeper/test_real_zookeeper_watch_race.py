"""The watch's race with the controller, on a real ZooKeeper (3.9's, standalone): a new topic's partitions/
created by another client between the watch's read that found none and the exists() watch after it. That
exists() finds the znode and sets a data watch, which ZooKeeper never fires for children; the watch must read
again, or the topic's partitions are never seen (the fake ZooKeeper of test_watch.py plays the same race)."""
from __future__ import annotations

import json

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from services.cluster import ZkKafkaCluster, find_free_base_port
from services.cluster.testing import java_available
from services.normalize.zookeeper_normalizer import ZooKeeperNormalizer
from services.zookeeper.watch import Gap, ZooKeeperWatch

pytestmark = [pytest.mark.kafka, pytest.mark.skipif(not java_available(), reason="needs java and mvn")]

TOPIC = "/brokers/topics/orders"
PARTITIONS = TOPIC + "/partitions"
STATE = PARTITIONS + "/0/state"


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory):
    cluster = ZkKafkaCluster(tmp_path_factory.mktemp("zkrace"), "3.9", base_port=find_free_base_port())
    zk = cluster.zookeeper
    zk.write_config()
    zk.start(cluster.tools.lib)
    try:
        yield zk.connect
    finally:
        zk.kill()


def _json(value) -> bytes:
    return json.dumps(value).encode()


def _state(isr: list[int]) -> bytes:
    return _json({"controller_epoch": 1, "leader": isr[0], "version": 1, "leader_epoch": 0, "isr": isr})


def _partitions(items) -> dict:
    norm = ZooKeeperNormalizer("c")
    for item in items:
        norm.feed_watched(item)
    return {p: (s.leader, tuple(s.isr)) for (_, p), s in norm.image.partitions.items()}  # one topic


def _poll_until(watch: ZooKeeperWatch, items: list, want, timeout_polls: int = 100) -> dict:
    import time

    for _ in range(timeout_polls):  # notifications arrive asynchronously: poll until they have been read
        items += watch.poll()
        got = _partitions(items)
        if got == want:
            break
        time.sleep(0.05)
    return got


def test_partitions_created_between_a_missing_read_and_its_exists_watch_are_captured(zookeeper):
    writer = KazooClient(hosts=zookeeper)
    writer.start(timeout=15)
    watch = ZooKeeperWatch(zookeeper)
    watch.start()
    try:
        for path in ("/brokers/ids", "/brokers/topics", "/config/topics"):
            writer.ensure_path(path)
        items = watch.poll()
        reads = watch.client.get_children
        raced: list[str] = []

        def get_children(path, *args, **kwargs):
            try:
                return reads(path, *args, **kwargs)
            except NoNodeError:
                if path == PARTITIONS and not raced:  # the controller's creates land just then
                    writer.create(STATE, _state([1, 2]), makepath=True)
                    raced.append(path)
                raise

        watch.client.get_children = get_children
        writer.create(TOPIC, _json({"version": 3, "partitions": {"0": [1, 2]}, "adding_replicas": {},
                                    "removing_replicas": {}, "topic_id": "T0pic1dT0pic1dT0pic1d"}))
        got = _poll_until(watch, items, {0: (1, (1, 2))})
        assert raced, "the race was not played: the watch never read a missing partitions/"
        assert got == {0: (1, (1, 2))}
        writer.set(STATE, _state([1]))
        assert _poll_until(watch, items, {0: (1, (1,))}) == {0: (1, (1,))}
        assert not [i for i in items if isinstance(i, Gap)]
    finally:
        watch.stop()
        writer.stop()
        writer.close()
