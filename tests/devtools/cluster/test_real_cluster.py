"""The dev cluster manager against real Kafka: startup, tools, controller discovery, kill -9,
restart, controller failover, logs, and teardown of every JVM it started."""

from __future__ import annotations

import time

import pytest

from devtools.cluster.testing import heal, java_available
from services.kraft import LogReader, MetadataRecord

pytestmark = [pytest.mark.kafka,
              pytest.mark.skipif(not java_available(), reason="needs java and mvn")]


def _wait(pred, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.25)
    return False


@pytest.fixture(scope="module")
def cluster(kafka_cluster):
    """The session's shared cluster (tests/conftest.py), every node running."""
    return heal(kafka_cluster)


def test_up_with_three_brokers(cluster):
    # Start-up time is printed by the fixture, not asserted: timings belong in bench/.
    assert all(cluster.is_running(i) for i in cluster.nodes)
    out = cluster.tool("metadata-quorum", "--bootstrap-server", cluster.bootstrap_servers,
                       "describe", "--replication").stdout
    rows = [line.split() for line in out.splitlines()[1:] if line.strip()]
    assert {r[0] for r in rows} == {"1", "2", "3"}
    assert sorted(r[-1] for r in rows) == ["Follower", "Follower", "Leader"]


def test_controller_from_files_matches_the_tool(cluster):
    assert cluster.active_controller() == cluster.active_controller(via_tool=True)


def test_topic_tools_work(cluster):
    cluster.create_topic("c-t1", 2, 3)
    assert "c-t1" in cluster.topics("--list").stdout.split()
    desc = cluster.topics("--describe", "--topic", "c-t1").stdout
    assert "PartitionCount: 2" in desc and "ReplicationFactor: 3" in desc


def test_kill_9_fences_and_restart_rejoins(cluster):
    victim = next(i for i in cluster.nodes if i != cluster.active_controller())
    cluster.kill_node(victim)
    assert not cluster.is_running(victim)

    def fenced():
        ctl = cluster.active_controller()
        return any(isinstance(r, MetadataRecord) and r.type == "BROKER_REGISTRATION_CHANGE_RECORD"
                   and r.data["brokerId"] == victim and r.data.get("fenced") == 1
                   for f in cluster.metadata_files(ctl) for r in LogReader(f, live=True))
    assert _wait(fenced, 30), "controller never fenced the killed broker"
    cluster.start_node(victim)
    cluster.wait_ready([victim], timeout=60)
    assert cluster.is_running(victim)


def test_controller_failover(cluster):
    old = cluster.active_controller()
    cluster.kill_node(old)
    new = cluster.wait_for_controller(exclude=old, timeout=30)
    assert new != old
    cluster.start_node(old)
    cluster.wait_ready([old], timeout=60)


def test_state_change_and_controller_logs_are_written(cluster):
    for n in cluster.nodes.values():
        assert (n.logs_dir / "server.log").stat().st_size > 0
    assert any((n.logs_dir / "state-change.log").stat().st_size > 0 for n in cluster.nodes.values())
    assert any((n.logs_dir / "controller.log").stat().st_size > 0 for n in cluster.nodes.values())


def _last_offset(cluster, node: int) -> int:
    logs = [f for f in cluster.metadata_files(node) if f.suffix == ".log"]
    return max((r.offset for r in LogReader(logs[-1], live=True)), default=-1) if logs else -1


def test_pause_fences_and_resume_rejoins(cluster):
    victim = next(i for i in cluster.nodes if i != cluster.active_controller())
    since = _last_offset(cluster, cluster.active_controller())
    cluster.pause_node(victim)
    try:
        def fenced():
            ctl = cluster.active_controller()
            return any(isinstance(r, MetadataRecord) and r.offset > since
                       and r.type == "BROKER_REGISTRATION_CHANGE_RECORD"
                       and r.data["brokerId"] == victim and r.data.get("fenced") == 1
                       for f in cluster.metadata_files(ctl) if f.suffix == ".log"
                       for r in LogReader(f, live=True))
        assert _wait(fenced, 30), "a paused broker was never fenced"
    finally:
        cluster.resume_node(victim)
    assert cluster.is_running(victim) and victim not in cluster.paused


def test_dump_log_and_metadata_shell_run(cluster):
    node = cluster.nodes[1]
    seg = cluster.metadata_files(1)[0]
    assert "baseOffset:" in cluster.tools.dump_log(seg)
    if not cluster.tools.has_shell:
        pytest.skip(f"Kafka {cluster.version}: no kafka-shell jar on Maven Central (CTRLAUDIT_KAFKA_4)")
    snap = node.data_dir / "bootstrap.checkpoint"
    if not snap.exists():  # Kafka 4.4 writes the bootstrap records as the log's first snapshot instead
        snap = cluster.metadata_dir(1) / "00000000000000000000-0000000000.checkpoint"
    out = cluster.tool("metadata-shell", "--snapshot", str(snap), "ls", "/image").stdout
    assert {"features", "topics", "cluster"} <= set(out.split())
