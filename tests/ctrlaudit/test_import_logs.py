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


# controller 1 elected at 03:10 with brokers 1 and 2; the start of its line for the new topic orders at 03:11
_ELECTED = [
    ("10:00,000", "[Controller id=1] 1 successfully elected as the controller. Epoch incremented to 1 and epoch "
                  "zk version is now 1"),
    ("10:00,100", "[Controller id=1] Initialized broker epochs cache: HashMap(1 -> 24, 2 -> 26)"),
]
_NEW_ORDERS = ("[Controller id=1] New topics: [Set(orders)], deleted topics: [HashSet()], new partition replica "
               "assignment [Set(TopicIdReplicaAssignment(orders,Some(cfj0aMlISoyZFYbm33MBqg),Map(orders-0 -> ")


def brokers(tmp_path: Path) -> list[Path]:
    n1, n2 = tmp_path / "node1" / "logs", tmp_path / "node2" / "logs"
    _log(n1 / "controller.log", [
        *_ELECTED,
        ("11:00,000", _NEW_ORDERS +
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
    assert "log times read as UTC time" in done.output and "--log-timezone" in done.output
    shifted = run("import", "logs", *map(str, brokers(tmp_path)), "--out", str(tmp_path / "b"), "--log-timezone",
                  "Europe/Berlin")  # UTC+1 in November: every time an hour earlier
    assert shifted.exit_code == 0 and "log times read as Europe/Berlin time" in shifted.output, shifted.output
    assert "capture gap: history before 2026-11-20T02:09:00.000Z" in shifted.output
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
    # as an older release's kafka-topics prints it: no ELR fields; a release that is not one: usage error
    older = run("state", "--store", store, "--time", "2026-11-20T03:13:30Z", "--kafka-version", "3.5.2")
    assert older.output.rstrip("\n").endswith("\tReplicas: 1,2\tIsr: 2"), older.output
    bad = run("state", "--store", store, "--kafka-version", "3.x")
    assert bad.exit_code == 2 and "--kafka-version: '3.x' is not a Kafka release" in bad.output, bad.output
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


def _state_line(p: int, leader: int, isr: list[int], epoch: int, le: int = 0) -> str:
    brokers = ", ".join(f"BrokerState(brokerId={b}, brokerEpoch=-1)" for b in isr)
    return (ZK + f"Changed partition orders-{p} from OfflinePartition to OnlinePartition with state LeaderAndIsr(leader="
            f"{leader}, leaderEpoch={le}, isrWithBrokerEpoch=List({brokers}), leaderRecoveryState=RECOVERED, "
            f"partitionEpoch={epoch})")


def test_a_gap_found_late_makes_its_partition_uncertain_from_its_last_known_state(tmp_path: Path) -> None:
    """orders-0 is known at epoch 0 (03:11); epoch 1 is stated by no line; epoch 2 in part (03:12, a leader's ISR
    update from epoch 1); epoch 3 whole at 03:14. The import finds the gap at 03:14, but the state is unknown from
    after 03:11: state at 03:12:30 says so for orders-0 (header and JSON), not for orders-1, whose lines state every
    epoch; at 03:14:30 nothing is uncertain."""
    n1 = tmp_path / "node1" / "logs"
    _log(n1 / "controller.log", [
        *_ELECTED,
        ("11:00,000", _NEW_ORDERS +
                      "ReplicaAssignment(replicas=2,1, addingReplicas=, removingReplicas=), orders-1 -> "
                      "ReplicaAssignment(replicas=1,2, addingReplicas=, removingReplicas=))))]"),
    ], "kafka.controller.KafkaController")
    _log(n1 / "state-change.log", [
        ("11:00,010", _state_line(0, 2, [2, 1], 0)), ("11:00,020", _state_line(1, 1, [1, 2], 0)),
        ("14:00,000", _state_line(0, 1, [1], 3, le=2)),
    ])
    (n1 / "server.log").write_text(
        "[2026-11-20 03:12:00,000] INFO [Partition orders-0 broker=2] ISR updated to 2  and version updated to 2 "
        "(kafka.cluster.Partition)\n"
        "[2026-11-20 03:13:00,000] INFO [Partition orders-1 broker=1] ISR updated to 1  and version updated to 1 "
        "(kafka.cluster.Partition)\n")
    done = run("import", "logs", str(tmp_path / "node1"), "--out", str(tmp_path / "a"))
    assert done.exit_code == 0, done.output
    assert "orders-0: partition epochs 1..2 before epoch 3 are stated whole in no log given" in done.output
    store = str(tmp_path / "s.duckdb")
    assert run("load", str(tmp_path / "a"), "--store", store, "--workers", "1").exit_code == 0
    inside = run("state", "--store", store, "--time", "2026-11-20T03:13:30Z")
    header = inside.output.splitlines()[0]
    assert "WARNING state of orders-0 not known here" in header and "orders-1" not in header, header
    assert "\tPartition: 1\tLeader: 1\tReplicas: 1,2\tIsr: 1\t" in inside.output  # known: the leader's update
    doc = json.loads(run("state", "--store", store, "--time", "2026-11-20T03:13:30Z", "--format", "json").output)
    uncertain = {p["partition"]: p["uncertain"] for p in doc["partitions"]}
    assert uncertain[1] is None and uncertain[0] is not None, uncertain
    assert uncertain[0]["since_time"].startswith("2026-11-20T03:11:00.010") and \
        uncertain[0]["until_time"].startswith("2026-11-20T03:14:00.000"), uncertain[0]
    assert "orders-0: partition epochs 1..2" in uncertain[0]["reason"]
    # just after the last known state, before the import noticed anything: uncertain already
    early = run("state", "--store", store, "--time", "2026-11-20T03:11:30Z")
    assert "WARNING state of orders-0 not known here" in early.output.splitlines()[0], early.output
    # a timeline asked inside the stretch: orders-0's says so, orders-1's (known throughout) does not
    for p, warns in ((0, True), (1, False)):
        tl = run("timeline", "--store", store, "--topic", "orders", "--partition", str(p), "--to-time",
                 "2026-11-20T03:13:30Z")
        assert tl.exit_code == 0 and ("WARNING" in tl.output.splitlines()[0]) is warns, (p, tl.output)
    for known in ("2026-11-20T03:11:00.010Z", "2026-11-20T03:14:30Z"):  # at the last known state, after
        header = run("state", "--store", store, "--time", known).output.splitlines()[0]
        assert "WARNING" not in header, (known, header)


def test_logs_in_another_log4j_layout_are_refused_then_read_with_log_pattern(tmp_path: Path) -> None:
    """The same brokers' logs written by an operator's layout: refused in one line naming the first line not read
    and --log-pattern; read with it, the same events as in Kafka's layout; a bad pattern is one line too."""
    import re

    nodes = brokers(tmp_path)
    kafka = run("import", "logs", *map(str, nodes), "--out", str(tmp_path / "k"), "--json", str(tmp_path / "k.json"))
    assert kafka.exit_code == 0, kafka.output
    for f in sorted(tmp_path.glob("node*/logs/*.log")):  # [%d] %p %m (%c)%n -> %d{ISO8601} %-5p [%t] %c - %m%n
        f.write_text("".join(re.sub(r"^\[(.*?)\] (\w+) (.*) \((\S+)\)$", lambda m: f"{m[1]} {m[2]:<5} [main] {m[4]} - "
                                    f"{m[3]}", line) + "\n" for line in f.read_text().splitlines()))
    refused = run("import", "logs", *map(str, nodes), "--out", str(tmp_path / "a"))
    assert refused.exit_code == 2 and len(refused.output.strip().splitlines()) == 1, refused.output
    assert "controller.log: line 1: not read: no line in the log4j layout Kafka ships" in refused.output
    assert "--log-pattern" in refused.output and not (tmp_path / "a").exists()
    done = run("import", "logs", *map(str, nodes), "--out", str(tmp_path / "a"), "--json", str(tmp_path / "a.json"),
               "--log-pattern", "%d{ISO8601} %-5p [%t] %c - %m%n")
    assert done.exit_code == 0, done.output
    ours, theirs = (json.loads((tmp_path / n).read_text()) for n in ("a.json", "k.json"))
    assert (ours["records"], ours["events"], ours["gaps"]) == (theirs["records"], theirs["events"], theirs["gaps"])
    bad = run("import", "logs", *map(str, nodes), "--out", str(tmp_path / "b"), "--log-pattern", "%p %m%n")
    assert bad.exit_code == 2 and "--log-pattern '%p %m%n': no %d (date)" in bad.output and \
        len(bad.output.strip().splitlines()) == 1, bad.output
