"""The migration's rules (services/normalize/migration_offline.py) on a handmade history: ZooKeeper transactions
shaped like the controllers' writes up to a KRaft controller's claim, and a synthetic metadata log with the
migration transaction. The real cluster's run is tests/services/zookeeper/test_real_migration.py."""

from __future__ import annotations

import json

import pytest

from schemas.events import BrokerChange, BrokerChangeKind, ControllerChange, PartitionChange, TopicChange
from services.normalize.migration_offline import MigratedKRaftNormalizer, MigrationMismatch, claim_epoch
from services.normalize.imports import BadImport
from services.kraft.offline import import_events
from services.zookeeper.normalizer import ZooKeeperNormalizer
from services.zookeeper import Op, Txn
from tests.archive_files import stored
from tests.services.normalize.logs import T1, LogBuilder, broker, change, partition

KRAFT = 3000


def _txn(zxid: int, *ops: Op) -> Txn:
    return Txn(1, zxid, zxid, 1_000 + zxid, 14 if len(ops) > 1 else 1, ops)


def _zookeeper(leader_epoch: int = 4) -> tuple[ZooKeeperNormalizer, list]:
    """Broker 1 and 2, topic t (id T1) with partition 0 on [1, 2] led by 1 at `leader_epoch` (znode version 6),
    ZooKeeper controller 1 at epoch 3, then the KRaft controller's claim (epoch 4 in ZooKeeper)."""
    n = ZooKeeperNormalizer("c", clock=lambda: 0)
    state = json.dumps({"controller_epoch": 3, "leader": 1, "version": 1, "leader_epoch": leader_epoch,
                        "isr": [1, 2]}).encode()
    txns = [
        _txn(1, Op("setData", "/controller_epoch", b"3", version=2),
             Op("create", "/controller", json.dumps({"version": 2, "brokerid": 1}).encode())),
        _txn(2, Op("create", "/brokers/ids/1", json.dumps({"endpoints": ["PLAINTEXT://h:1"]}).encode())),
        _txn(3, Op("create", "/brokers/ids/2", json.dumps({"endpoints": ["PLAINTEXT://h:2"]}).encode())),
        _txn(4, Op("create", "/brokers/topics/t", json.dumps({"partitions": {"0": [1, 2]}, "topic_id": T1,
                                                              "adding_replicas": {}, "removing_replicas": {}}).encode())),
        _txn(5, Op("setData", "/brokers/topics/t/partitions/0/state", state, version=6),
             Op("create", "/config/topics/t", json.dumps({"version": 1, "config": {"retention.ms": "1000"}}).encode())),
        _txn(6, Op("setData", "/controller_epoch", b"4", version=3), Op("delete", "/controller"),
             Op("create", "/controller", json.dumps({"version": 2, "brokerid": KRAFT,
                                                     "kraftControllerEpoch": 1}).encode())),
    ]
    events = [e for t in txns for e in n.feed(t)]
    return n, events


def _metadata_log(tmp_path, *, restated_leader_epoch: int = 4, after: bool = True, retention: str = "1000"):
    b = LogBuilder()
    b.leader_change(KRAFT, 1, voters=(KRAFT,))
    broker(b, 1)  # the migrating brokers register with the KRaft controller first
    broker(b, 2)
    b.record("BeginTransactionRecord", 0, name="ZK Migration")
    b.record("TopicRecord", 0, name="t", topicId=T1)
    b.record("ConfigRecord", 0, resourceType=2, resourceName="t", name="retention.ms", value=retention)
    at = partition(b, T1, 0, (1, 2), (1, 2), 1, epoch=restated_leader_epoch, pepoch=6)
    b.record("ZkMigrationStateRecord", 0, zkMigrationState=1)
    end = b.record("EndTransactionRecord", 0)
    if after:
        change(b, T1, 0, leader=2, isr=[2])
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    return b.write(d / "00000000000000000000.log"), at, end


def test_claim_is_a_kraft_controllers_controller_znode():
    _, events = _zookeeper()
    txn = _txn(9, Op("create", "/controller", json.dumps({"brokerid": KRAFT, "kraftControllerEpoch": 2}).encode()))
    assert claim_epoch(txn) == 2
    assert claim_epoch(_txn(9, Op("create", "/controller", json.dumps({"brokerid": 1}).encode()))) is None
    assert claim_epoch(_txn(9, Op("create", "/controller", json.dumps(
        {"brokerid": 1, "kraftControllerEpoch": -1}).encode()))) is None
    # ZooKeeper's own record of the claim: controller 3000 in ZooKeeper's epoch 4
    assert [(e.payload.leader_id, e.payload.epoch) for e in events if isinstance(e.payload, ControllerChange)] == \
        [(1, 3), (KRAFT, 4)]


def test_migration_equal_to_zookeeper_cuts_over_without_restating(tmp_path):
    zk, _ = _zookeeper()
    log, _, end = _metadata_log(tmp_path)
    norm = MigratedKRaftNormalizer("c", zk, claim_zxid=6)
    events = list(import_events([log.parent], "c", normalizer=norm))
    assert norm.cut_at == end and norm.held_back > 0  # the controller's election and registrations: not emitted
    assert norm.compared == {"topics": 1, "partitions": 1, "topic_configs": 1}
    assert all(e.source.offset == end for e in events[:-1]) and events[-1].source.offset == end + 1
    cc = events[0].payload
    assert isinstance(cc, ControllerChange)
    assert (cc.leader_id, cc.epoch, cc.previous_leader_id, cc.previous_epoch) == (KRAFT, 1, KRAFT, 4)
    assert (events[0].controller_id, events[0].controller_epoch) == (KRAFT, 1)
    # the brokers as KRaft registered them (its epochs), after ZooKeeper's registrations
    brokers = [e.payload for e in events if isinstance(e.payload, BrokerChange)]
    assert [(b.broker_id, b.kind) for b in brokers] == [(1, BrokerChangeKind.UPDATED), (2, BrokerChangeKind.UPDATED)]
    assert brokers[0].before.epoch == 2 and brokers[0].after.epoch == 1
    # no topic or partition restated; the next change continues ZooKeeper's state
    assert not any(isinstance(e.payload, TopicChange) for e in events)
    pcs = [e.payload for e in events if isinstance(e.payload, PartitionChange)]
    assert len(pcs) == 1 and pcs[0].before == zk.image.partitions[(T1, 0)]
    assert (pcs[0].after.leader, pcs[0].after.leader_epoch, pcs[0].after.partition_epoch) == (2, 5, 7)


def test_migration_that_differs_from_zookeeper_is_one_line(tmp_path):
    zk, _ = _zookeeper(leader_epoch=4)
    log, at, _ = _metadata_log(tmp_path, restated_leader_epoch=9)
    norm = MigratedKRaftNormalizer("c", zk, claim_zxid=6)
    with pytest.raises(MigrationMismatch) as err:
        list(import_events([log.parent], "c", normalizer=norm))
    msg = str(err.value)
    assert "\n" not in msg
    assert f"partition t-0: the migration's PartitionRecord at offset {at} has " in msg
    assert "leader_epoch=9" in msg and "ZooKeeper's history up to zxid 0x6 has" in msg and "leader_epoch=4" in msg


def test_a_topic_config_the_migration_states_otherwise_is_one_line(tmp_path):
    zk, _ = _zookeeper()
    log, _, end = _metadata_log(tmp_path, retention="2000")
    with pytest.raises(MigrationMismatch) as err:
        list(import_events([log.parent], "c", normalizer=MigratedKRaftNormalizer("c", zk, claim_zxid=6)))
    assert str(err.value) == (f"migration check failed: topic t config retention.ms: the migration (ending at offset "
                              f"{end}) has '2000'; ZooKeeper's history up to zxid 0x6 has '1000'")


def test_a_log_without_the_migration_is_refused(tmp_path):
    zk, _ = _zookeeper()
    b = LogBuilder()
    b.leader_change(KRAFT, 1, voters=(KRAFT,))
    broker(b, 1)
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    b.write(d / "00000000000000000000.log")
    norm = MigratedKRaftNormalizer("c", zk, claim_zxid=6)
    assert list(import_events([d], "c", normalizer=norm)) == []  # nothing before the cutover is emitted
    assert norm.cut_at is None
    with pytest.raises(BadImport, match="starts with a snapshot at offset 5"):
        norm.begin_snapshot(5)


def _cli_inputs(tmp_path, cluster_id: str):
    import shutil
    from pathlib import Path
    zk = tmp_path / "zk" / "version-2"
    zk.mkdir(parents=True)
    shutil.copy(Path(__file__).parents[1] / "zookeeper" / "data" / "log.1", zk / "log.1")  # a real, unmigrated log
    log, _, _ = _metadata_log(tmp_path)
    (log.parent.parent / "meta.properties").write_text(f"version=1\ncluster.id={cluster_id}\nnode.id=3000\n")
    return log.parent, zk.parent


def test_cli_two_clusters_and_a_log_without_the_claim_are_one_line_each(tmp_path):
    from services.zookeeper.offline import cluster_id_of_zk
    from tests.ctrlaudit.conftest import run

    meta, zk = _cli_inputs(tmp_path, "someOtherClusterIdAAAA")
    done = run("import", "kraft", str(meta), "--zookeeper-data", str(zk), "--out", str(tmp_path / "a"))
    assert done.exit_code != 0 and "Traceback" not in done.output
    assert len(done.output.strip().splitlines()) == 1 and "two clusters" in done.output, done.output
    (meta.parent / "meta.properties").write_text(f"version=1\ncluster.id={cluster_id_of_zk([zk])}\nnode.id=3000\n")
    done = run("import", "kraft", str(meta), "--zookeeper-data", str(zk), "--out", str(tmp_path / "b"))
    assert done.exit_code != 0 and "Traceback" not in done.output
    assert len(done.output.strip().splitlines()) == 1, done.output
    assert "no KRaft controller's claim of /controller" in done.output
    assert not any((tmp_path / "b").rglob("*.avro"))  # nothing written of a history that could not be followed


def test_a_migrated_history_is_asked_by_time_or_seq_not_offset(tmp_path):
    """zxids before the cutover and metadata offsets after it overlap: `--offset` is refused with one line."""
    from replay.errors import StoreError
    from replay.queries import state_as_of

    zk, zk_events = _zookeeper()
    log, _, _ = _metadata_log(tmp_path)
    kraft_events = list(import_events([log.parent], "c", normalizer=MigratedKRaftNormalizer("c", zk, claim_zxid=6)))
    with stored(zk_events + kraft_events, tmp_path, "c") as store:
        with pytest.raises(StoreError, match="migrated from ZooKeeper to KRaft.*ask by --time or --seq"):
            store.point(offset=5)
        last = state_as_of(store, store.point(time=kraft_events[-1].event_time_ms)).partitions
        assert [(r.topic, r.state.leader, r.state.leader_epoch) for r in last] == [("t", 2, 5)]
        before = state_as_of(store, store.point(time=zk_events[-1].event_time_ms)).partitions
        assert [(r.topic, r.state.leader, r.state.leader_epoch) for r in before] == [("t", 1, 4)]
