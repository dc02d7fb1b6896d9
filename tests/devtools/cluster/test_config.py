import os
import subprocess
import sys
from pathlib import Path

import pytest

from devtools.cluster import PINNED, main_class, resolve_version
from devtools.cluster.config import (ClusterSettings, NodeLayout, log4j1_properties,
                                     log4j2_properties, ports_for, server_properties)
from devtools.cluster.dumplog import parse
from devtools.cluster.manager import find_free_base_port, port_free, random_cluster_id


def _props(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line)


def test_ports_follow_base_plus_100_per_node():
    assert ports_for(19000, 1) == (19102, 19103)
    assert ports_for(19000, 3) == (19302, 19303)


def test_server_properties_combined_mode_on_loopback():
    s = ClusterSettings(version="4.3.1", metadata_segment_bytes=4096)
    n = NodeLayout(2, Path("/x/node2"), *ports_for(19000, 2))
    p = _props(server_properties(s, n, "1@127.0.0.1:19103,2@127.0.0.1:19203,3@127.0.0.1:19303"))
    assert p["process.roles"] == "broker,controller" and p["node.id"] == "2"
    assert p["listeners"] == "PLAINTEXT://127.0.0.1:19202,CONTROLLER://127.0.0.1:19203"
    assert p["controller.quorum.voters"].count("@127.0.0.1:") == 3
    assert p["internal.metadata.log.segment.bytes"] == "4096"
    assert int(p["broker.session.timeout.ms"]) <= 5000
    assert int(p["replica.lag.time.max.ms"]) <= 5000


def test_39_uses_segment_min_bytes_escape_hatch():
    s = ClusterSettings(version="3.9.2", metadata_segment_bytes=4096)
    n = NodeLayout(1, Path("/x/node1"), *ports_for(19000, 1))
    p = _props(server_properties(s, n, "1@127.0.0.1:19103"))
    assert p["metadata.log.segment.min.bytes"] == "4096" == p["metadata.log.segment.bytes"]
    assert "share.coordinator.state.topic.replication.factor" not in p


def test_log_configs_write_state_change_and_controller_logs():
    for text in (log4j2_properties(), log4j1_properties()):
        assert "state-change.log" in text and "controller.log" in text
        assert "state.change.logger" in text and "org.apache.kafka.controller" in text


@pytest.mark.parametrize("tool,version,cls", [
    ("dump-log", "3.9", "kafka.tools.DumpLogSegments"),
    ("dump-log", "4.2.0", "kafka.tools.DumpLogSegments"),
    ("dump-log", "4.x", "org.apache.kafka.tools.DumpLogSegments"),
    ("topics", "4.x", "org.apache.kafka.tools.TopicCommand"),
    ("reassign", "3.9", "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"),
    ("metadata-shell", "4.x", "org.apache.kafka.shell.MetadataShell"),
])
def test_tool_main_classes(tool, version, cls):
    assert main_class(tool, version) == cls


def test_unknown_tool():
    with pytest.raises(ValueError, match="unknown Kafka tool"):
        main_class("nope", "4.x")


def test_version_aliases():
    assert resolve_version("4.x") == PINNED["4"] and resolve_version("3.9") == "3.9.2"
    assert resolve_version("4.1.1") == "4.1.1"
    # CTRLAUDIT_KAFKA_4 moves "4.x" to another release (read at import), not the generated tables' pins
    code = "from devtools.cluster.jars import DEFAULT_PINS, resolve_version; print(resolve_version('4.x'), DEFAULT_PINS['4'])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "CTRLAUDIT_KAFKA_4": "4.4.0"}, cwd=Path(__file__).resolve().parents[3])
    assert out.stdout.split() == ["4.4.0", "4.3.1"]


def test_cluster_id_and_free_ports():
    cid = random_cluster_id()
    assert len(cid) == 22 and not cid.startswith("-")
    base = find_free_base_port()
    assert all(port_free(p) for i in (1, 2, 3) for p in ports_for(base, i))


SCALA_DUMP = """Dumping /d/00000000000000000000.log
Log starting offset: 0
baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false isControl: true deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1795316401296 size: 106 magic: 2 compresscodec: none crc: 3245163559 isvalid: true
| offset: 0 CreateTime: 1795316401296 keySize: 4 valueSize: 34 sequence: -1 headerKeys: [] controlType: LEADER_CHANGE(2)
baseOffset: 1 lastOffset: 1 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 106 CreateTime: 1795316402257 size: 145 magic: 2 compresscodec: none crc: 3997328803 isvalid: true
| offset: 1 CreateTime: 1795316402257 keySize: -1 valueSize: 24 sequence: -1 headerKeys: [] payload: {"type":"BEGIN_TRANSACTION_RECORD","version":0,"data":{"name":"Bootstrap records"}}
Found 7 invalid bytes at the end of 00000000000000000000.log
Dumping /d/bootstrap.checkpoint
KRaft bootstrap snapshot
baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: true deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1 size: 83 magic: 2 compresscodec: none crc: 205454679 isvalid: true
| offset: 0 CreateTime: 1 keySize: 4 valueSize: 11 sequence: -1 headerKeys: [] SnapshotHeader {"version":0,"lastContainedLogTimestamp":0}
"""


def test_parse_dumplogsegments_output():
    log, boot = parse(SCALA_DUMP + '| offset: 1 CreateTime: 1 keySize: 4 valueSize: 34 sequence: -1 '
                      'headerKeys: [] LeaderChange: {"version":0,"leaderId":3}\n')
    assert log.path == "/d/00000000000000000000.log" and log.invalid_bytes == 7
    assert log.batches[0]["position"] == "0" and log.batches[1]["crc"] == "3997328803"
    ctl, payload = log.records
    assert (ctl.kind, ctl.label, ctl.text) == ("control", "controlType", "LEADER_CHANGE(2)")
    assert payload.json["data"]["name"] == "Bootstrap records"
    hdr, lc = boot.records
    assert (hdr.label, hdr.json) == ("SnapshotHeader", {"version": 0, "lastContainedLogTimestamp": 0})
    assert (lc.label, lc.json["leaderId"]) == ("LeaderChange", 3)


def test_migration_steps_write_the_kip866_configs(tmp_path):
    """What ops.html's migration steps require of each file: the controller in migration mode and finalized, the
    ZooKeeper-mode broker with the flag and the quorum, the same broker in KRaft mode without ZooKeeper."""
    from devtools.cluster.config import (ClusterSettings, NodeLayout, kraft_broker_properties,
                                         migrating_zk_broker_properties, migration_controller_properties)

    def parse(text):
        return dict(line.split("=", 1) for line in text.splitlines())

    s, voters = ClusterSettings("3.9.2"), "3000@127.0.0.1:19006"
    ctl, broker = NodeLayout(3000, tmp_path / "c", 19005, 19006), NodeLayout(1, tmp_path / "b", 19102, 19103)
    migrating = parse(migration_controller_properties(s, ctl, voters, "127.0.0.1:19001"))
    assert migrating["process.roles"] == "controller" and migrating["node.id"] == "3000"
    assert migrating["zookeeper.metadata.migration.enable"] == "true" and migrating["zookeeper.connect"]
    assert migrating["listeners"] == "CONTROLLER://127.0.0.1:19006" and "PLAINTEXT:PLAINTEXT" in \
        migrating["listener.security.protocol.map"]
    final = parse(migration_controller_properties(s, ctl, voters, None))
    assert "zookeeper.connect" not in final and "zookeeper.metadata.migration.enable" not in final
    zk = parse(migrating_zk_broker_properties(s, broker, "127.0.0.1:19001", voters))
    assert zk["broker.id"] == "1" and zk["zookeeper.connect"] and zk["controller.quorum.voters"] == voters
    assert zk["zookeeper.metadata.migration.enable"] == "true" and "CONTROLLER:" in zk["listener.security.protocol.map"]
    assert "process.roles" not in zk
    kraft = parse(kraft_broker_properties(s, broker, voters))
    assert (kraft["process.roles"], kraft["node.id"], kraft["controller.quorum.voters"]) == ("broker", "1", voters)
    assert not any(k.startswith("zookeeper.") for k in kraft) and "broker.id" not in kraft
