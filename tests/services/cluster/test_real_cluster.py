"""The dev cluster manager against real Kafka: startup, tools, controller discovery, kill -9,
restart, controller failover, logs, and teardown of every JVM it started."""

from __future__ import annotations

import os
import time

import pytest

from services.cluster.testing import java_available, running_cluster
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


@pytest.fixture(scope="module", params=["4.x", "3.9"])
def cluster(request, tmp_path_factory):
    started = time.monotonic()
    with running_cluster(tmp_path_factory.mktemp("cluster") / "c", request.param) as c:
        c.startup_seconds = time.monotonic() - started
        yield c
    pids = [p.pid for p in c.procs.values()]
    assert not any(os.path.exists(f"/proc/{pid}") and _is_alive(pid) for pid in pids)


def _is_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


def test_up_quickly_with_three_brokers(cluster):
    assert cluster.startup_seconds < 60
    assert all(cluster.is_running(i) for i in cluster.nodes)
    out = cluster.tool("metadata-quorum", "--bootstrap-server", cluster.bootstrap_servers,
                       "describe", "--replication").stdout
    rows = [line.split() for line in out.splitlines()[1:] if line.strip()]
    assert {r[0] for r in rows} == {"1", "2", "3"}
    assert sorted(r[-1] for r in rows) == ["Follower", "Follower", "Leader"]


def test_controller_from_files_matches_the_tool(cluster):
    assert cluster.active_controller() == cluster.active_controller(via_tool=True)


def test_topic_tools_work(cluster):
    cluster.create_topic("t1", 2, 3)
    assert "t1" in cluster.topics("--list").stdout.split()
    desc = cluster.topics("--describe", "--topic", "t1").stdout
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


def test_dump_log_and_metadata_shell_run(cluster):
    node = cluster.nodes[1]
    seg = cluster.metadata_files(1)[0]
    assert "baseOffset:" in cluster.tools.dump_log(seg)
    snap = node.data_dir / "bootstrap.checkpoint"
    out = cluster.tool("metadata-shell", "--snapshot", str(snap), "ls", "/image").stdout
    assert {"features", "topics", "cluster"} <= set(out.split())
