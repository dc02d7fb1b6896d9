"""The ZooKeeper-mode dev cluster against real Kafka 3.9.2 and ZooKeeper 3.8.4: start-up, Kafka's tools,
the controller as ZooKeeper and the brokers see it, a controller kill -9 (new /controller, controller
epoch + 1), a broker kill -9 leaving the ISR, restart, and teardown of every JVM it started."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from devtools.cluster import ZkKafkaCluster, find_free_base_port
from devtools.cluster.testing import java_available

pytestmark = [pytest.mark.kafka,
              pytest.mark.skipif(not java_available(), reason="needs java and mvn")]


def _wait(pred, timeout=45.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if pred():
                return True
        except Exception:  # noqa: BLE001 - a tool or broker not answering yet: ask again
            pass
        time.sleep(0.5)
    return False


def _controller_epoch(cluster: ZkKafkaCluster) -> int:
    out = cluster.tool("zookeeper-shell", "-server", cluster.zookeeper_connect, "get", "/controller_epoch").stdout
    return int([line for line in out.splitlines() if line.strip().isdigit()][-1])


def _isr(cluster: ZkKafkaCluster, topic: str) -> list[int]:
    desc = cluster.topics("--describe", "--topic", topic).stdout
    line = next(x for x in desc.splitlines() if "Partition: 0" in x)
    return sorted(int(b) for b in line.split("Isr:")[1].split()[0].split(","))


@pytest.fixture(scope="module")
def zk_cluster(tmp_path_factory):
    cluster = ZkKafkaCluster(tmp_path_factory.mktemp("zk") / "cluster", "3.9", base_port=find_free_base_port())
    try:
        cluster.up()
        yield cluster
    finally:
        cluster.down()


def test_zk_mode_refuses_kafka_4(tmp_path):
    from devtools.cluster import ClusterError
    with pytest.raises(ClusterError, match="before 4.0"):
        ZkKafkaCluster(tmp_path, "4.x")


def test_up_serves_tools_and_names_one_controller(zk_cluster):
    assert zk_cluster.zookeeper.serving()
    assert all(zk_cluster.is_running(i) for i in zk_cluster.nodes)
    zk_cluster.create_topic("zk-t1", 2, 3)
    desc = zk_cluster.topics("--describe", "--topic", "zk-t1").stdout
    assert "PartitionCount: 2" in desc and "ReplicationFactor: 3" in desc
    # the broker holding /controller (ZooKeeper's answer) is the one the brokers report
    assert zk_cluster.active_controller(via_tool=True) == zk_cluster.active_controller()
    assert any(p.name.startswith("log.") for p in zk_cluster.zookeeper.txn_dir.iterdir())


def test_broker_kill_9_leaves_the_isr_and_restart_rejoins(zk_cluster):
    zk_cluster.create_topic("zk-t2", 1, 3)
    victim = next(i for i in zk_cluster.nodes if i != zk_cluster.active_controller())
    zk_cluster.kill_node(victim)
    assert not zk_cluster.is_running(victim)
    assert _wait(lambda: victim not in _isr(zk_cluster, "zk-t2"))
    zk_cluster.start_node(victim)
    zk_cluster.wait_ready([victim])
    assert _wait(lambda: victim in _isr(zk_cluster, "zk-t2"))


def test_controller_kill_9_moves_controller_and_bumps_epoch(zk_cluster):
    old = zk_cluster.active_controller(via_tool=True)
    epoch = _controller_epoch(zk_cluster)
    zk_cluster.kill_node(old)
    assert _wait(lambda: zk_cluster.active_controller(via_tool=True) not in (old,))
    new = zk_cluster.active_controller(via_tool=True)
    assert new != old and zk_cluster.is_running(new)
    assert _controller_epoch(zk_cluster) == epoch + 1
    zk_cluster.start_node(old)
    zk_cluster.wait_ready([old])


def test_down_stops_every_jvm_it_started(tmp_path):
    cluster = ZkKafkaCluster(tmp_path / "c", "3.9", nodes=1, base_port=find_free_base_port())
    cluster.up()
    pids = [cluster.procs[1].pid, cluster.zookeeper.proc.pid]
    cluster.down()
    assert not any(Path(f"/proc/{p}").exists() for p in pids)
    assert not cluster.zookeeper.is_running()
