"""`ctrlaudit import zk` end to end on a real ZooKeeper log (data/log.1), its bad input, and the ZooKeeper
normalizer's rules on transactions shaped like the controller's (reassignment, session expiry, topic delete)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from schemas.events import (BrokerChange, BrokerChangeKind, CaptureGap, ControllerChange, PartitionChange,
                            PartitionChangeKind as K, TopicChange, TopicChangeKind)
from schemas.archive.listing import iter_events
from services.zookeeper.normalizer import ZooKeeperNormalizer
from services.zookeeper import Op, Txn, read_txn_log
from tests.ctrlaudit.conftest import run

DATA = Path(__file__).parent / "data"


@pytest.fixture()
def data_dir(tmp_path) -> Path:
    (tmp_path / "zk" / "version-2").mkdir(parents=True)
    shutil.copy(DATA / "log.1", tmp_path / "zk" / "version-2" / "log.1")
    return tmp_path / "zk"


def _cluster_id() -> str:
    op = next(o for t in read_txn_log(DATA / "log.1") for o in t.ops if o.path == "/cluster/id")
    return json.loads(op.data)["id"]


def test_import_load_state_from_a_real_log(data_dir, tmp_path):
    done = run("import", "zk", str(data_dir), "--out", str(tmp_path / "archive"))
    assert done.exit_code == 0, done.output
    cid = _cluster_id()
    assert f"cluster {cid}: 72 transactions from 1 log(s)" in done.output and "capture gap" not in done.output
    events = list(iter_events(tmp_path / "archive" / cid))
    assert all(e.source.zxid == e.source.offset for e in events)
    cc = [e.payload for e in events if isinstance(e.payload, ControllerChange)]
    creates = [o for t in read_txn_log(DATA / "log.1") for o in t.ops if o.kind == "create" and o.path == "/controller"]
    assert [c.leader_id for c in cc] == [json.loads(o.data)["brokerid"] for o in creates] and cc[0].epoch == 1
    assert sorted(e.payload.broker_id for e in events if isinstance(e.payload, BrokerChange)) == [1, 2, 3]
    store = str(tmp_path / "s.duckdb")
    assert run("load", str(tmp_path / "archive"), "--store", store, "--workers", "1").exit_code == 0
    # the last LeaderAndIsr znode written for each partition of t1, from the log itself
    last = {}
    for t in read_txn_log(DATA / "log.1"):
        for o in t.ops:
            if o.path and o.path.startswith("/brokers/topics/t1/partitions/") and o.data:
                last[int(o.path.split("/")[5])] = json.loads(o.data)
    out = run("state", "--store", store).output
    for p, st in last.items():
        assert f"\tPartition: {p}\tLeader: {st['leader']}\t" in out and f"Isr: {','.join(map(str, st['isr']))}\t" in out
    # Kafka 3.7+'s kafka-topics on a ZooKeeper-mode cluster: no ELR in its brokers' Metadata answers, "N/A"
    assert all(line.endswith("\tElr: N/A\tLastKnownElr: N/A") for line in out.splitlines() if line.startswith("\t"))
    assert run("verify", str(tmp_path / "archive")).exit_code == 0
    assert run("check", store).exit_code == 0


def test_corrupt_log_is_one_line_and_skip_records_a_gap(data_dir, tmp_path):
    log = data_dir / "version-2" / "log.1"
    victim = read_txn_log(log)[45]  # after /cluster/id (zxid 0x29): the cluster id is still known
    raw = bytearray(log.read_bytes())
    raw[victim.position + 25] ^= 0x01
    log.write_bytes(bytes(raw))
    done = run("import", "zk", str(data_dir), "--out", str(tmp_path / "a1"))
    assert done.exit_code == 2 and "Traceback" not in done.output
    line = done.output.strip()
    assert "\n" not in line and "log.1" in line and f"byte position {victim.position}" in line
    assert not (tmp_path / "a1").exists() or not any((tmp_path / "a1").rglob("*.avro"))
    skipped = run("import", "zk", str(data_dir), "--out", str(tmp_path / "a2"), "--on-error", "skip")
    assert skipped.exit_code == 0, skipped.output
    assert "capture gap:" in skipped.output
    gaps = [e for e in iter_events(tmp_path / "a2" / _cluster_id()) if isinstance(e.payload, CaptureGap)]
    assert [(g.payload.from_offset, g.payload.to_offset) for g in gaps] == [(victim.zxid, victim.zxid)]


def test_logs_missing_the_start_are_a_named_gap(data_dir, tmp_path):
    log = data_dir / "version-2" / "log.1"
    txns = read_txn_log(log)
    cut = bytearray(log.read_bytes()[:16]) + log.read_bytes()[txns[50].position:]
    (data_dir / "version-2" / f"log.{txns[50].zxid:x}").write_bytes(bytes(cut))
    log.unlink()
    done = run("import", "zk", str(data_dir), "--out", str(tmp_path / "a"), "--cluster-id", "c1")
    assert done.exit_code == 0, done.output
    assert f"capture gap: history before zxid {txns[50].zxid:#x}" in done.output


def test_not_a_zookeeper_dir_exits_2(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "notes.txt").write_text("hi")
    done = run("import", "zk", str(tmp_path / "in"), "--out", str(tmp_path / "a"))
    assert done.exit_code == 2 and "no ZooKeeper transaction logs" in done.output and "Traceback" not in done.output


# --- the normalizer's rules, on transactions shaped like the controller's writes ------------------

def _txn(zxid: int, *ops: Op) -> Txn:
    return Txn(1, zxid, zxid, 1_000 + zxid, 14 if len(ops) > 1 else 1, ops)


def _assign(parts, adding=None, removing=None) -> bytes:
    return json.dumps({"partitions": parts, "topic_id": "TID", "adding_replicas": adding or {},
                       "removing_replicas": removing or {}, "version": 3}).encode()


def _state(leader, isr, epoch=0, ce=1) -> bytes:
    return json.dumps({"controller_epoch": ce, "leader": leader, "version": 1, "leader_epoch": epoch,
                       "isr": isr}).encode()


def test_reassignment_session_expiry_and_topic_delete():
    n = ZooKeeperNormalizer("c", clock=lambda: 0)
    S = "/brokers/topics/t/partitions/0/state"
    feed = [
        _txn(1, Op("create", "/brokers/ids/4", json.dumps({"endpoints": ["PLAINTEXT://h:1"]}).encode(), ephemeral=True)),
        _txn(2, Op("create", "/brokers/topics/t", _assign({"0": [1, 2]}))),
        _txn(3, Op("check", "/controller_epoch", version=0), Op("create", S, _state(1, [1, 2]))),
        # KIP-455: the assignment becomes OAR + RAR with adding/removing, then RAR joins the ISR, then RAR
        _txn(4, Op("setData", "/brokers/topics/t", _assign({"0": [3, 1, 2]}, {"0": [3]}, {"0": [2]}), version=1)),
        _txn(5, Op("setData", S, _state(1, [1, 2, 3]), version=1)),
        _txn(6, Op("setData", "/brokers/topics/t", _assign({"0": [3, 1]}), version=2)),
        _txn(7, Op("setData", S, _state(3, [3, 1], epoch=1), version=2)),
        _txn(8, Op("closeSession", deleted=("/brokers/ids/4",))),
        _txn(9, Op("delete", S), Op("delete", "/brokers/topics/t/partitions/0"), Op("delete", "/brokers/topics/t/partitions"),
             Op("delete", "/brokers/topics/t")),
    ]
    events = [e for t in feed for e in n.feed(t)]
    pcs = [e.payload for e in events if isinstance(e.payload, PartitionChange)]
    assert [pc.changes for pc in pcs] == [
        (K.CREATE,), (K.REPLICAS, K.REASSIGNMENT_START), (K.ISR,), (K.REPLICAS, K.REASSIGNMENT_COMPLETE),
        (K.LEADER, K.ISR), (K.DELETE,)]
    assert pcs[3].after.replicas == (3, 1) and pcs[4].after.leader == 3 and pcs[4].after.partition_epoch == 2
    assert [(e.payload.kind, e.source.zxid) for e in events if isinstance(e.payload, BrokerChange)] == [
        (BrokerChangeKind.REGISTERED, 1), (BrokerChangeKind.UNREGISTERED, 8)]
    assert [e.payload for e in events if isinstance(e.payload, TopicChange)] == [
        TopicChange(TopicChangeKind.CREATED, "t", "TID"), TopicChange(TopicChangeKind.DELETED, "t", "TID")]
    assert n.image.partitions == {} and n.image.topic_names == {}
    assert [e.controller_epoch for e in events if isinstance(e.payload, PartitionChange) and e.payload.after] == [1] * 5


def test_a_close_session_without_its_record_removes_the_sessions_own_ephemerals():
    """ZooKeeper before 3.6 (Kafka 2.x ships 3.5.x) logs a closeSession with no CloseSessionTxn: a kill -9'd
    broker's registration goes with the session that created it, and only that session's (a broker's new
    registration under the same id is another session's)."""
    import struct

    from services.zookeeper.records import decode_txn

    header = struct.pack(">qiqqi", 11, 0, 3, 1003, -11)  # TxnHeader of a closeSession, and nothing after it
    assert decode_txn(header).ops[0].deleted is None
    reg = json.dumps({"endpoints": ["PLAINTEXT://h:1"]}).encode()

    def txn(zxid: int, session: int, op: Op) -> Txn:
        return Txn(session, zxid, zxid, 1_000 + zxid, 1, (op,))

    n = ZooKeeperNormalizer("c", clock=lambda: 0)
    feed = [txn(1, 11, Op("create", "/brokers/ids/1", reg, ephemeral=True)),
            txn(2, 12, Op("create", "/brokers/ids/2", reg, ephemeral=True)),
            txn(3, 11, decode_txn(header).ops[0]),  # broker 1's session expires
            txn(4, 13, Op("create", "/brokers/ids/1", reg, ephemeral=True)),
            txn(5, 11, Op("closeSession", deleted=None)),  # the old session again: owns nothing now
            txn(6, 12, Op("closeSession", deleted=()))]  # 3.6+: the record says it removed nothing
    events = [e for t in feed for e in n.feed(t)]
    assert [(e.payload.kind, e.payload.broker_id, e.source.zxid) for e in events] == [
        (BrokerChangeKind.REGISTERED, 1, 1), (BrokerChangeKind.REGISTERED, 2, 2),
        (BrokerChangeKind.UNREGISTERED, 1, 3), (BrokerChangeKind.REGISTERED, 1, 4)]
    assert sorted(n.image.brokers) == [1, 2]


def test_controller_epoch_stamps_who_wrote_what():
    """A state znode carries the controller epoch that wrote it; a change of the assignment znode alone is the
    sitting controller's. After a failover the new controller's assignment write is at the new epoch (no false
    fencing alarm); a state written with an epoch older than the one already seen keeps its old stamp, which
    is what controller_epoch_monotonic reports (a deposed controller's write)."""
    n = ZooKeeperNormalizer("c", clock=lambda: 0)
    S = "/brokers/topics/t/partitions/0/state"
    feed = [
        _txn(1, Op("create", "/controller", json.dumps({"brokerid": 1}).encode()),
             Op("setData", "/controller_epoch", b"1", version=1)),
        _txn(2, Op("create", "/brokers/topics/t", _assign({"0": [1, 2]}))),
        _txn(3, Op("create", S, _state(1, [1, 2], ce=1))),
        # failover: controller 2 at epoch 2; its first write is the assignment only (a reassignment start)
        _txn(4, Op("create", "/controller", json.dumps({"brokerid": 2}).encode()),
             Op("setData", "/controller_epoch", b"2", version=2)),
        _txn(5, Op("setData", "/brokers/topics/t", _assign({"0": [3, 1, 2]}, {"0": [3]}, {"0": [2]}), version=1)),
        # a zombie write: the state stamped by the deposed controller of epoch 1
        _txn(6, Op("setData", S, _state(2, [1, 2], epoch=1, ce=1), version=1)),
        _txn(7, Op("setData", S, _state(1, [1, 2], epoch=2, ce=2), version=2)),
    ]
    events = [e for t in feed for e in n.feed(t)]
    stamps = [(e.source.zxid, e.controller_epoch) for e in events if isinstance(e.payload, PartitionChange)]
    assert stamps == [(3, 1), (5, 2), (6, 1), (7, 2)]

    from checks.duckdb_engine import DuckDBEngine
    from schemas.archive import flat
    from schemas.archive.chain import Chain
    from schemas.codec import to_avro

    chain = Chain("c")
    table = flat.to_arrow([flat.flatten(to_avro(chain.append(replace(e, seq=i)))) for i, e in enumerate(events)])
    eng = DuckDBEngine.from_arrow(table)
    try:
        rows = [r for r in eng.violations(["controller_epoch_monotonic"]) if r[5] == "violated"]
    finally:
        eng.close()
    zombie = next(i for i, e in enumerate(events) if e.source.zxid == 6)
    assert [(r[4], r[2]) for r in rows] == [("event_controller_epoch_regressed", zombie)]


def test_a_failover_names_the_previous_epoch_whatever_the_order_of_the_multis_writes():
    """The controller's claim is one multi (create /controller, set /controller_epoch); a live watch may hand
    its writes in either order: the ControllerChange's previous epoch is the one before the transaction."""
    for order in (0, 1):
        n = ZooKeeperNormalizer("c", clock=lambda: 0)
        claims = []
        for zxid, (broker, epoch) in enumerate(((1, 1), (2, 2)), start=1):
            ops = [Op("create", "/controller", json.dumps({"brokerid": broker}).encode()),
                   Op("setData", "/controller_epoch", str(epoch).encode(), version=epoch)]
            claims += [e.payload for e in n.feed(_txn(zxid, *(ops if order == 0 else ops[::-1])))]
        assert [(c.leader_id, c.epoch, c.previous_leader_id, c.previous_epoch) for c in claims] == [
            (1, 1, -1, -1), (2, 2, 1, 1)], order
