"""`ctrlaudit import logs` end to end on two brokers' handmade logs in Kafka's wording (a ZooKeeper-mode
controller and a broker), then load, state and explain; and its bad input, one line each."""
from __future__ import annotations

import json
from pathlib import Path

from tests.ctrlaudit.conftest import run

ZK = "[Controller id=1 epoch=1] "


def _log(path: Path, lines: list[tuple[str, str]], logger: str = "state.change.logger") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"[2026-11-20 03:{t}] INFO {m} ({logger})\n" for t, m in lines))


def brokers(tmp_path: Path) -> list[Path]:
    n1, n2 = tmp_path / "node1" / "logs", tmp_path / "node2" / "logs"
    _log(n1 / "controller.log", [
        ("10:00,000", "[Controller id=1] 1 successfully elected as the controller. Epoch incremented to 1 and epoch "
                      "zk version is now 1"),
        ("10:00,100", "[Controller id=1] Initialized broker epochs cache: HashMap(1 -> 24, 2 -> 26)"),
        ("11:00,000", "[Controller id=1] New topics: [Set(orders)], deleted topics: [HashSet()], new partition replica "
                      "assignment [Set(TopicIdReplicaAssignment(orders,Some(cfj0aMlISoyZFYbm33MBqg),Map(orders-0 -> "
                      "ReplicaAssignment(replicas=1,2, addingReplicas=, removingReplicas=))))]"),
        ("14:00,050", "[Controller id=1] Updated broker epochs cache: HashMap(1 -> 24)"),
    ], "kafka.controller.KafkaController")
    _log(n1 / "state-change.log", [
        ("11:00,010", ZK + "Changed partition orders-0 from NewPartition to OnlinePartition with state LeaderAndIsr("
                           "leader=2, leaderEpoch=0, isrWithBrokerEpoch=List(BrokerState(brokerId=2, brokerEpoch=-1), "
                           "BrokerState(brokerId=1, brokerEpoch=-1)), leaderRecoveryState=RECOVERED, partitionEpoch=0)"),
        ("14:00,060", ZK + "Changed partition orders-0 from OnlinePartition to OnlinePartition with state LeaderAndIsr("
                           "leader=1, leaderEpoch=1, isrWithBrokerEpoch=List(BrokerState(brokerId=1, brokerEpoch=-1)), "
                           "leaderRecoveryState=RECOVERED, partitionEpoch=2)"),
    ])
    _log(n2 / "state-change.log", [
        ("11:00,020", "[Broker id=2] Leader orders-0 with topic id Some(cfj0aMlISoyZFYbm33MBqg) starts at leader epoch 0 "
                      "from offset 0 with partition epoch 0, high watermark 0, ISR [2,1], adding replicas [] and "
                      "removing replicas [] . Previous leader None and previous leader epoch was -1."),
    ])
    (n2 / "server.log").write_text("[2026-11-20 03:09:00,000] INFO Cluster ID = w8nhoLLRTBK5VuB4mTA-Iw "
                                   "(kafka.server.KafkaServer)\n"
                                   "[2026-11-20 03:13:00,000] INFO [Partition orders-0 broker=2] ISR updated to 2  and "
                                   "version updated to 1 (kafka.cluster.Partition)\n")
    return [tmp_path / "node1", tmp_path / "node2"]


def test_import_logs_load_state_explain(tmp_path: Path) -> None:
    done = run("import", "logs", *map(str, brokers(tmp_path)), "--out", str(tmp_path / "a"), "--json",
               str(tmp_path / "i.json"))
    assert done.exit_code == 0, done.output
    assert "cluster w8nhoLLRTBK5VuB4mTA-Iw: 9 log lines from 4 file(s) -> 9 events" in done.output
    assert "capture gap: history before 2026-11-20T03:09:00.000Z" in done.output
    summary = json.loads((tmp_path / "i.json").read_text())
    assert summary["records"] == 9 and summary["events"] == 9 and len(summary["gaps"]) == 1
    store = str(tmp_path / "s.duckdb")
    assert run("load", str(tmp_path / "a"), "--store", store, "--workers", "1").exit_code == 0
    state = run("state", "--store", store, "--time", "2026-11-20T03:12:00Z")
    assert "\tTopic: orders\tPartition: 0\tLeader: 2\tReplicas: 1,2\tIsr: 2,1\t" in state.output, state.output
    # the leader's own ISR update, in its server.log only: epoch 1, leader and leader epoch of epoch 0
    state = run("state", "--store", store, "--time", "2026-11-20T03:13:30Z")
    assert "\tTopic: orders\tPartition: 0\tLeader: 2\tReplicas: 1,2\tIsr: 2\t" in state.output, state.output
    # the logs are a ZooKeeper-mode controller's (its registered-brokers cache): describe's N/A
    assert state.output.rstrip("\n").endswith("\tElr: N/A\tLastKnownElr: N/A"), state.output
    state = run("state", "--store", store)
    assert "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1\t" in state.output, state.output
    explain = run("explain", "--store", store, "--topic", "orders", "--partition", "0", "--last-leader-change")
    assert explain.exit_code == 0, explain.output
    assert "read from:         " in explain.output and "node1/logs/state-change.log (BROKER_LOG, node 1)" in explain.output, \
        explain.output


def test_import_logs_bad_input_is_one_line(tmp_path: Path) -> None:
    logs = brokers(tmp_path)
    done = run("import", "logs", str(tmp_path / "nope"), "--out", str(tmp_path / "a"))
    assert done.exit_code == 2 and done.output.strip().endswith("no such file or directory")
    (tmp_path / "empty").mkdir()
    done = run("import", "logs", str(tmp_path / "empty"), "--out", str(tmp_path / "a"))
    assert done.exit_code == 2 and "no state-change.log, controller.log or server.log" in done.output
    done = run("import", "logs", *map(str, logs), "--out", str(tmp_path / "a"), "--timezone", "Mars/Olympus")
    assert done.exit_code == 2 and "not a time zone name" in done.output
    other = tmp_path / "node3" / "logs"
    _log(other / "controller.log", [("10:00,000", "[QuorumController id=3] Creating new QuorumController with "
                                                  "clusterId ko21vtw9QXqJJlz1YkxIcA")],
         "org.apache.kafka.controller.QuorumController")
    done = run("import", "logs", *map(str, logs), str(tmp_path / "node3"), "--out", str(tmp_path / "a"))
    assert done.exit_code == 2 and "the logs are of more than one cluster" in done.output
    assert len(done.output.strip().splitlines()) == 1 and "Traceback" not in done.output
    assert not (tmp_path / "a").exists()
