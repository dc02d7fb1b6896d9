"""The watch's races, on a real ZooKeeper (3.9's, standalone).

* With the controller: a new topic's partitions/ created by another client between the watch's read that
  found none and the exists() watch after it. That exists() finds the znode and sets a data watch, which
  ZooKeeper never fires for children; the watch must read again, or the topic's partitions are never seen.
* A topic deleted and created again between two reads: its parent's children read the same, only the
  znode's czxid tells; it must come out as a gap, the old topic deleted and the new one created, not as the
  old topic changed.

The fake ZooKeeper of test_watch.py plays the same races."""
from __future__ import annotations

import json

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from devtools.cluster import ZkKafkaCluster, find_free_base_port
from devtools.cluster.testing import java_available
from services.zookeeper.normalizer import ZooKeeperNormalizer
from services.zookeeper.watch import Gap, ZooKeeperWatch

pytestmark = [pytest.mark.kafka, pytest.mark.skipif(not java_available(), reason="needs java and mvn")]

TOPIC = "/brokers/topics/orders"
PARTITIONS = TOPIC + "/partitions"
STATE = PARTITIONS + "/0/state"


@pytest.fixture
def zookeeper(tmp_path):  # one each: a test's znodes are not another's
    cluster = ZkKafkaCluster(tmp_path, "3.9", base_port=find_free_base_port())
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


def _topic_ids(items) -> dict:
    norm = ZooKeeperNormalizer("c")
    for item in items:
        norm.feed_watched(item)
    return {k[0] for k in norm.image.partitions}


def _poll_until(watch: ZooKeeperWatch, items: list, want, timeout_polls: int = 100) -> dict:
    import time

    for _ in range(timeout_polls):  # notifications arrive asynchronously: poll until they have been read
        items += watch.poll()
        got = _partitions(items)
        if got == want:
            break
        time.sleep(0.05)
    return got


def _assignment(topic_id: str, replicas: list[int]) -> bytes:
    return _json({"version": 3, "partitions": {"0": replicas}, "adding_replicas": {}, "removing_replicas": {},
                  "topic_id": topic_id})


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
        writer.create(TOPIC, _assignment("T0pic1dT0pic1dT0pic1d", [1, 2]))
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


def test_a_topic_deleted_and_created_again_between_reads_is_a_gap_a_delete_and_a_create(zookeeper):
    writer = KazooClient(hosts=zookeeper)
    writer.start(timeout=15)
    watch = ZooKeeperWatch(zookeeper)
    watch.start()
    topic = "/brokers/topics/again"
    try:
        for path in ("/brokers/ids", "/brokers/topics", "/config/topics"):
            writer.ensure_path(path)
        writer.create(topic, _assignment("OldT0picOldT0picOldT0", [1, 2]))
        writer.create(f"{topic}/partitions/0/state", _state([1, 2]), makepath=True)
        items = watch.poll()
        assert _topic_ids(items) == {"OldT0picOldT0picOldT0"}
        writer.delete(topic, recursive=True)  # both before the watch reads again
        writer.create(topic, _assignment("NewT0picNewT0picNewT0", [2, 3]))
        writer.create(f"{topic}/partitions/0/state", _state([3, 2]), makepath=True)
        import time

        for _ in range(100):
            items += watch.poll()
            if _topic_ids(items) == {"NewT0picNewT0picNewT0"}:
                break
            time.sleep(0.05)
        assert _topic_ids(items) == {"NewT0picNewT0picNewT0"}
        assert any(isinstance(i, Gap) and "deleted and created again" in i.reason for i in items)
        norm = ZooKeeperNormalizer("c")
        kinds = [(e.payload.kind.name, e.payload.topic_id) for item in items for e in norm.feed_watched(item)
                 if type(e.payload).__name__ == "TopicChange"]
        assert kinds == [("CREATED", "OldT0picOldT0picOldT0"), ("DELETED", "OldT0picOldT0picOldT0"),
                         ("CREATED", "NewT0picNewT0picNewT0")]
    finally:
        watch.stop()
        writer.stop()
        writer.close()
