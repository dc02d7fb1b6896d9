"""On a real cluster: a batch its leader appended but did not commit (a follower stopped, still in the ISR) is
seen by `ProtocolClient.log_ends`, and a restarting worker's `wait_settled` returns only once it is committed: the
successor of a worker killed with such a batch in flight reads it back instead of sending its events again."""
from __future__ import annotations

import threading
import uuid

import pytest

from devtools.cluster.testing import heal, wait_until
from services.capture.kafka_protocol import ProtocolClient
from services.capture.logic import wait_settled

pytestmark = [pytest.mark.kafka]

# The dev cluster drops a silent follower from the ISR after 3 s (replica.lag.time.max.ms), and the leader then
# commits the batch without it: the uncommitted state lasts only that long. A try that reads the ends after it
# (a slow machine) proves nothing either way and is made again on a new topic.
TRIES = 3


def _one_try(c, client: ProtocolClient) -> bool:
    """False when the uncommitted state was over before it was read; asserts what it shows otherwise."""
    from confluent_kafka import Producer

    topic = "settle-" + uuid.uuid4().hex[:6]
    c.create_topic(topic, 1, 3)
    wait_until(lambda: len(client.partitions([topic])) == 1 and client.log_ends(topic) == (0, 0), 30,
               "the new topic's leader")
    (info,) = client.partitions([topic])
    controller = c.wait_for_controller()
    follower = next(r for r in info.replicas if r not in (info.leader, controller))
    # a client that knows the leader only: its requests do not wait on the stopped broker
    near = ProtocolClient(c.nodes[info.leader].bootstrap)
    resumed = threading.Timer(3.0, c.resume_node, [follower])
    try:
        near.log_ends(topic)  # connected before the pause
        c.pause_node(follower)
        p = Producer({"bootstrap.servers": c.nodes[info.leader].bootstrap, "acks": "1"})
        p.produce(topic, b"the killed worker's last batch", partition=0)
        assert p.flush(30) == 0
        readings: list[tuple[int, int] | None] = []

        def ends() -> tuple[int, int] | None:
            readings.append(near.log_ends(topic))
            return readings[-1]
        resumed.start()
        waited = wait_settled(ends, 120)
        known = [r for r in readings if r is not None]
        if known[0] == (1, 1):
            return False  # already committed without the follower when first read: the window was missed
        # seen in the leader's log, not committed (a consumer's end still 0), and waited for until it was
        assert (known[0], known[-1], waited) == ((0, 1), (1, 1), 1), readings
        assert set(known) == {(0, 1), (1, 1)}, readings
    finally:
        resumed.cancel()
        c.resume_node(follower)
        near.close()
        # the shared cluster as it was: the stopped broker back in the partition's ISR (caught up, unfenced)
        wait_until(lambda: follower in next((p.isr for p in client.partitions([topic])), ()), 120,
                   "the resumed broker back in the ISR")
    _committed_for_a_consumer(c, topic)
    return True


def _committed_for_a_consumer(c, topic: str) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": c.bootstrap_servers, "group.id": topic})
    try:
        assert consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (0, 1)
    finally:
        consumer.close()


def test_a_batch_waiting_for_a_stopped_follower_is_waited_for(kafka_cluster):
    c = heal(kafka_cluster)
    client = ProtocolClient(c.bootstrap_servers)
    try:
        for _ in range(TRIES):
            if _one_try(c, client):
                break
        else:
            pytest.fail(f"the uncommitted batch was never read within the follower's 3 s in {TRIES} tries")
        assert client.log_ends("no-such-topic-" + uuid.uuid4().hex[:6]) == (0, 0)
    finally:
        client.close()
        heal(c)
