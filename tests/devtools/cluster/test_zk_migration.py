"""The ZooKeeper-mode dev cluster migrated to KRaft (KIP-866) step by step against real Kafka 3.9.2: after each
step `kafka-topics --describe` answers with every partition led and fully in sync, the controller the brokers
follow is the one the step says, and the migration state the controller logs and writes is the step's."""

from __future__ import annotations

import json

import pytest

from devtools.cluster import ClusterError, ZkKafkaCluster, find_free_base_port, observe
from devtools.cluster.migration import CONTROLLER_ID, STEPS, Migration, steps_done
from devtools.cluster.testing import java_available

pytestmark = [pytest.mark.kafka, pytest.mark.slow,
              pytest.mark.skipif(not java_available(), reason="needs java and mvn")]


def _zk_get(c: ZkKafkaCluster, path: str) -> dict:
    out = c.tool("zookeeper-shell", "-server", c.zookeeper_connect, "get", path).stdout
    return json.loads(next(line for line in out.splitlines() if line.startswith("{")))


def _healthy(d: observe.Described) -> bool:
    return bool(d.partitions) and all(p.leader >= 0 and set(p.isr) == set(p.replicas) for p in d.partitions.values())


def test_steps_in_order_and_describe_after_each(tmp_path):
    c = ZkKafkaCluster(tmp_path / "cluster", "3.9", base_port=find_free_base_port())
    try:
        c.up()
        c.create_topic("mig-a", 2, 3)
        before = observe.wait_describe(c, _healthy)
        zk_controller = _zk_get(c, "/controller")["brokerid"]
        assert zk_controller in c.nodes
        m = Migration(c)
        with pytest.raises(ClusterError, match="needs step 'controller'"):
            m.brokers()
        seen = {}
        for step in STEPS:
            assert m.run(step) == [step]
            d = observe.wait_describe(c, _healthy)
            seen[step] = d
            # the topic and its assignment survive every step (the ids too: the migration copies them)
            assert d.topic_ids["mig-a"] == before.topic_ids["mig-a"]
            assert {k: p.replicas for k, p in d.partitions.items() if k[0] == "mig-a"} == \
                {k: p.replicas for k, p in before.partitions.items() if k[0] == "mig-a"}
            if step == "brokers":
                # the KRaft controller claimed ZooKeeper's /controller and copied the metadata
                assert _zk_get(c, "/controller")["brokerid"] == CONTROLLER_ID
                assert c.active_controller() == CONTROLLER_ID  # its quorum's leader from here on
                assert m.migration_log_line() is not None
            elif step == "controller":
                assert c.active_controller(via_tool=True) == zk_controller  # waiting: the brokers still decide
            if step in ("brokers", "kraft-brokers"):
                c.create_topic(f"mig-{step}", 1, 3)  # served by the KRaft controller, written to ZooKeeper too
                zk = _zk_get(c, f"/brokers/topics/mig-{step}")
                assert zk["partitions"]["0"]
        assert steps_done(c) == list(STEPS)
        assert m.run() == []  # nothing left
        final = observe.wait_describe(c, _healthy)
        assert {"mig-a", "mig-brokers", "mig-kraft-brokers"} <= set(final.topic_ids)
        c.create_topic("mig-after", 1, 3)
        # finalized: no dual-write any more, ZooKeeper does not learn of the new topic
        out = c.tool("zookeeper-shell", "-server", c.zookeeper_connect, "ls", "/brokers/topics").stdout
        assert "mig-kraft-brokers" in out and "mig-after" not in out
        assert (m.node.metadata_dir).is_dir() and any(c.zookeeper.txn_dir.iterdir())
    finally:
        c.down()
    assert not c.is_running(CONTROLLER_ID) and not c.zookeeper.is_running()
