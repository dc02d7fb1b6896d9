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


def test_a_batch_waiting_for_a_stopped_follower_is_waited_for(kafka_cluster):
    from confluent_kafka import Producer, TopicPartition
    from confluent_kafka import Consumer

    c = heal(kafka_cluster)
    topic = "settle-" + uuid.uuid4().hex[:6]
    c.create_topic(topic, 1, 3)
    client = ProtocolClient(c.bootstrap_servers)
    try:
        wait_until(lambda: len(client.partitions([topic])) == 1 and client.log_ends(topic) == (0, 0), 30,
                   "the new topic's leader")
        (info,) = client.partitions([topic])
        controller = c.wait_for_controller()
        follower = next(r for r in info.replicas if r not in (info.leader, controller))
        c.pause_node(follower)
        resumed = threading.Timer(3.0, c.resume_node, [follower])
        try:
            p = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "1"})
            p.produce(topic, b"the killed worker's last batch", partition=0)
            assert p.flush(30) == 0
            # (a request that meets the stopped broker times out: not known, asked again)
            ends = wait_until(lambda: client.log_ends(topic), 60, "the topic's ends")
            assert ends == (0, 1)  # in the leader's log, not committed: a consumer's end is still 0
            resumed.start()
            assert wait_settled(lambda: client.log_ends(topic), 120) == 1
        finally:
            resumed.cancel()
            c.resume_node(follower)
            # the shared cluster as it was: the stopped broker back in the partition's ISR (caught up, unfenced)
            wait_until(lambda: follower in next((p.isr for p in client.partitions([topic])), ()), 120,
                       "the resumed broker back in the ISR")
        consumer = Consumer({"bootstrap.servers": c.bootstrap_servers, "group.id": topic})
        try:
            assert consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (0, 1)
        finally:
            consumer.close()
        assert client.log_ends("no-such-topic-" + topic) == (0, 0)
    finally:
        client.close()
        heal(c)
