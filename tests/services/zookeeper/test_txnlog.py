"""The ZooKeeper transaction-log reader on a real log (data/log.1: written by ZooKeeper 3.8.4 under a
Kafka 3.9.2 cluster's start-up and one topic creation, cut after its last entry; data/log.1.
txnlogtoolkit.txt is ZooKeeper's TxnLogToolkit -d output for that file). The live comparison on a
fresh cluster's logs is tests/services/zookeeper/test_real_zookeeper.py; this one runs without Java."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from devtools.cluster.txnlogtool import compare, parse
from services.zookeeper import (CorruptTxnError, NotAZooKeeperFileError, TxnLogReader, log_start_zxid,
                                read_txn_log, txn_logs)

DATA = Path(__file__).parent / "data"


@pytest.fixture()
def log1(tmp_path) -> Path:
    d = tmp_path / "version-2"
    d.mkdir()
    return Path(shutil.copy(DATA / "log.1", d / "log.1"))


def test_every_txn_matches_txnlogtoolkit_field_by_field():
    dump = parse((DATA / "log.1.txnlogtoolkit.txt").read_text(encoding="utf-8", errors="replace"))
    reader = TxnLogReader(DATA / "log.1")
    ours = list(reader)
    assert dump.eof_count == len(dump.txns) == len(ours) == reader.count
    assert (reader.dbid, 2) == (dump.dbid, dump.version)
    assert {t.zxid: compare(t, d) for t, d in zip(ours, dump.txns) if compare(t, d)} == {}


def test_zxids_consecutive_from_the_file_name_and_controller_writes_fenced_by_epoch_check():
    txns = read_txn_log(DATA / "log.1")
    assert txns[0].zxid == log_start_zxid(DATA / "log.1")
    assert [t.zxid for t in txns] == list(range(txns[0].zxid, txns[0].zxid + len(txns)))  # standalone: no holes
    controller = [o for t in txns for o in t.ops if o.kind == "create" and o.path == "/controller"]
    assert controller and json.loads(controller[0].data)["brokerid"] in (1, 2, 3)
    assert controller[0].ephemeral
    states = [t for t in txns if any(o.path and o.path.endswith("/state") for o in t.ops)]
    assert states
    for t in states:  # every partition-state write of the controller is a multi guarded by /controller_epoch
        assert t.kind == "multi" and t.ops[0].kind == "check" and t.ops[0].path == "/controller_epoch"
        st = json.loads(t.ops[1].data)
        assert {"controller_epoch", "leader", "leader_epoch", "isr"} <= set(st)


def test_corrupt_byte_is_one_line_naming_file_and_position(log1):
    txns = read_txn_log(log1)
    victim = txns[len(txns) // 2]
    raw = bytearray(log1.read_bytes())
    raw[victim.position + 20] ^= 0xFF  # inside the transaction body: the Adler32 no longer holds
    log1.write_bytes(bytes(raw))
    with pytest.raises(CorruptTxnError) as e:
        read_txn_log(log1)
    line = str(e.value)
    assert "\n" not in line
    assert str(log1) in line and f"byte position {victim.position}" in line and "Adler32" in line
    assert f"after zxid {victim.zxid - 1:#x}" in line


def test_skip_steps_over_the_corrupt_entry_and_records_the_stretch(log1):
    txns = read_txn_log(log1)
    victim = txns[10]
    raw = bytearray(log1.read_bytes())
    raw[victim.position + 13] ^= 0x55
    log1.write_bytes(bytes(raw))
    reader = TxnLogReader(log1, on_error="skip")
    got = list(reader)
    assert [t.zxid for t in got] == [t.zxid for t in txns if t.zxid != victim.zxid]
    (gap,) = reader.skipped
    assert (gap.start, gap.after_zxid, gap.next_zxid) == (victim.position, victim.zxid - 1, victim.zxid + 1)
    assert gap.end == txns[11].position


def test_file_cut_inside_an_entry_is_a_partial_tail_not_an_error(log1):
    txns = read_txn_log(log1)
    log1.write_bytes(log1.read_bytes()[:txns[-1].position + 30])
    reader = TxnLogReader(log1)
    assert [t.zxid for t in reader] == [t.zxid for t in txns[:-1]]
    assert reader.partial_tail == txns[-1].position


def test_preallocated_zeros_end_the_log(log1):
    log1.write_bytes(log1.read_bytes() + bytes(64 * 1024))
    reader = TxnLogReader(log1)
    assert reader.count == 0 and len(list(reader)) == 72 and reader.partial_tail is None


@pytest.mark.parametrize("content,msg", [
    (b"", "empty file"),
    (b"ZKLG\x00\x00", "shorter than the 16-byte file header"),
    (b"ZKSN" + bytes(12), "a ZooKeeper snapshot"),
    (b"PK\x03\x04" + bytes(12), "magic 0x504b0304"),
    (b"ZKLG\x00\x00\x00\x01" + bytes(8), "format version 1"),
])
def test_not_a_transaction_log(tmp_path, content, msg):
    p = tmp_path / "log.5"
    p.write_bytes(content)
    with pytest.raises(NotAZooKeeperFileError, match=msg) as e:
        read_txn_log(p)
    assert str(p) in str(e.value) and "\n" not in str(e.value)


def test_logs_are_ordered_by_their_hex_zxid(tmp_path):
    for name in ("log.100000001", "log.2a", "log.3", "snapshot.2a", "acceptedEpoch"):
        (tmp_path / name).write_bytes(b"")
    assert [p.name for p in txn_logs(tmp_path)] == ["log.3", "log.2a", "log.100000001"]
