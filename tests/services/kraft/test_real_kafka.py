"""Our decoder against Kafka's own DumpLogSegments, on the metadata logs of a real 3-node cluster.

One cluster per Kafka version (module scope). It is driven through topic creation with configs,
a kill -9 (fencing, ISR shrink), a restart, a preferred leader election, a reassignment and a
topic deletion, with small metadata segments (rolls) and frequent snapshots (.checkpoint files).
Then every segment and snapshot of every node is decoded by both and compared field by field."""

from __future__ import annotations

import json
import time

import pytest

from devtools.cluster.dumplog import compare, parse
from devtools.cluster.testing import heal, java_available, snapshot_metadata
from devtools.cluster.tools import version_tuple
from services.kraft import ControlRecord, LogReader, MetadataRecord, UnknownRecord

pytestmark = [pytest.mark.kafka,
              pytest.mark.skipif(not java_available(), reason="needs java and mvn")]


def _wait(pred, timeout=30.0, step=0.25):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return False


def _records(cluster, node):
    out = []
    for f in cluster.metadata_files(node):
        out += list(LogReader(f, live=True))
    return out


@pytest.fixture(scope="module")
def exercised(kafka_cluster, tmp_path_factory):
    """The session's shared cluster (tests/conftest.py: small metadata segments, frequent
    snapshots) driven through this module's scenario; topics prefixed ``k-``."""
    c = heal(kafka_cluster)
    version = c.label
    root = tmp_path_factory.mktemp(f"kraft-{version}")
    c.create_topic("k-orders", 3, 3, "--config", "min.insync.replicas=2")
    c.create_topic("k-audit", 1, 3)
    victim = next(i for i in c.nodes if i != c.active_controller())
    c.kill_node(victim)
    # the controller fences the broker after broker.session.timeout.ms and shrinks ISRs
    assert _wait(lambda: any(isinstance(r, MetadataRecord)
                             and r.type == "BROKER_REGISTRATION_CHANGE_RECORD"
                             and r.data["brokerId"] == victim and r.data.get("fenced") == 1
                             for r in _records(c, c.active_controller())), 30)
    c.start_node(victim)
    c.wait_ready([victim])
    c.tool("leader-election", "--bootstrap-server", c.bootstrap_servers,
           "--election-type", "PREFERRED", "--all-topic-partitions", check=False)
    plan = root / "reassign.json"
    target = [victim, 1 if victim != 1 else 2]
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "k-audit", "partition": 0, "replicas": target}]}))
    c.tool("reassign", "--bootstrap-server", c.bootstrap_servers,
           "--reassignment-json-file", str(plan), "--execute")
    assert _wait(lambda: "complete" in c.tool(
        "reassign", "--bootstrap-server", c.bootstrap_servers,
        "--reassignment-json-file", str(plan), "--verify", check=False).stdout, 30)
    if version_tuple(c.version) >= (4, 4):
        # KIP-1312 (Kafka 4.4): an UnregisterControllerRecord; the running controller then registers again
        other = next(i for i in c.nodes if i != c.active_controller())
        c.tool("cluster", "unregister-controller", "--bootstrap-controller",
               f"127.0.0.1:{c.nodes[other].controller_port}", "--id", str(other))
    c.topics("--delete", "--topic", "k-orders")
    time.sleep(2.5)  # let a snapshot be written after the last changes
    copies = snapshot_metadata(c, root / "copy")
    yield c, version, copies, target


def test_every_record_matches_dumplogsegments(exercised):
    cluster, version, copies, _ = exercised
    files = [f for fs in copies.values() for f in fs]
    dumps = {d.path: d for d in parse(cluster.tools.dump_log(*files))}
    assert set(dumps) == {str(f) for f in files}
    kinds: set[str] = set()
    total = 0
    for f in files:
        reader = LogReader(f, live=True)  # a copied active segment may end mid-batch
        batches = list(reader.batches())
        dump = dumps[str(f)]
        assert compare(batches, dump) == []
        if reader.partial_tail is not None:
            assert dump.invalid_bytes == reader.partial_tail.available
        for _, recs in batches:
            for r in recs:
                total += 1
                assert not isinstance(r, UnknownRecord), r
                kinds.add(r.type)
    assert total > 100
    assert {"PARTITION_CHANGE_RECORD", "PARTITION_RECORD", "TOPIC_RECORD", "REMOVE_TOPIC_RECORD",
            "CONFIG_RECORD", "REGISTER_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD",
            "FEATURE_LEVEL_RECORD", "NO_OP_RECORD", "LeaderChange", "SnapshotHeader",
            "SnapshotFooter"} <= kinds


def test_segments_rolled_and_snapshots_taken(exercised):
    _, _, copies, _ = exercised
    for files in copies.values():
        names = [f.name for f in files]
        assert sum(n.endswith(".log") for n in names) >= 2, names
        # a snapshot the controller took: neither bootstrap.checkpoint nor Kafka 4.4's bootstrap snapshot at 0
        assert any(n.endswith(".checkpoint") and n != "bootstrap.checkpoint"
                   and not n.startswith("00000000000000000000-") for n in names), names


def test_leader_change_epochs_match_batch_epochs(exercised):
    _, _, copies, _ = exercised
    for files in copies.values():
        for f in files:
            if f.suffix != ".log":
                continue
            for r in LogReader(f, live=True):
                if isinstance(r, ControlRecord) and r.type == "LeaderChange":
                    assert r.leader_epoch >= 1 and r.data["leaderId"] in (1, 2, 3)


def test_reassignment_and_fencing_visible_in_decoded_log(exercised):
    _, _, copies, target = exercised
    recs = [r for f in copies[1] for r in LogReader(f, live=True) if isinstance(r, MetadataRecord)]
    audit = next(r.data["topicId"] for r in recs
                 if r.type == "TOPIC_RECORD" and r.data["name"] == "k-audit")
    # the reassignment ends with a PartitionChangeRecord setting replicas to the target
    assert any(r.data["topicId"] == audit and r.data["replicas"] == target for r in recs
               if r.type == "PARTITION_CHANGE_RECORD")
    assert any(r.type == "BROKER_REGISTRATION_CHANGE_RECORD" and r.data.get("fenced") == 1
               for r in recs)


def test_a_controller_unregistration_is_decoded_from_kafka_44(exercised):
    """`kafka-cluster unregister-controller` (Kafka 4.4+; CTRLAUDIT_KAFKA_4=4.4.0 runs it): the record is known
    (test_every_record_matches_dumplogsegments compares its bytes), and it is not controller state."""
    from services.kraft.normalizer import NOT_CONTROLLER_STATE

    cluster, _, copies, _ = exercised
    if version_tuple(cluster.version) < (4, 4):
        pytest.skip(f"UnregisterControllerRecord is Kafka 4.4's (KIP-1312); this cluster runs {cluster.version}")
    recs = [r for fs in copies.values() for f in fs for r in LogReader(f, live=True) if isinstance(r, MetadataRecord)]
    unregistered = [r for r in recs if r.type == "UNREGISTER_CONTROLLER_RECORD"]
    assert unregistered and {r.api_key for r in unregistered} <= NOT_CONTROLLER_STATE


def test_native_and_python_paths_agree_on_every_file(exercised):
    """(conftest.py compares the two on every batch too; this one says so for the real logs.)"""
    from services.kraft import native

    from .helpers import record_view
    if not native.built():
        pytest.skip("services.kraft._kraftdecode not built")
    _, _, copies, _ = exercised
    total = 0
    for f in [f for fs in copies.values() for f in fs]:
        nat, py = ([record_view(r) for r in LogReader(f, live=True, native_decode=flag)]
                   for flag in (True, False))
        assert nat == py, f
        total += len(nat)
    assert total > 100
