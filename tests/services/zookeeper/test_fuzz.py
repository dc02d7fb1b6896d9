"""Fuzzing the ZooKeeper readers (services.zookeeper: transaction logs and snapshots): the real log
data/log.1 damaged as a file, its transactions damaged one by one and framed again with valid checksums (so
the record decoder itself sees the damage), snapshots made here damaged the same two ways, and random bytes.
Only the project's contract errors may escape (tests/fuzzing.py, which also says how to run longer)."""
from __future__ import annotations

import re
import struct
import tempfile
import zlib
from pathlib import Path

import pytest

from hypothesis import given
from hypothesis import strategies as st

from services.zookeeper.offline import import_zk_events
from services.zookeeper import TxnLogReader
from services.zookeeper.snapshot import read_snapshot
from services.zookeeper.txnlog import ENTRY, EOR, HEADER, LOG_MAGIC, SNAP_MAGIC
from tests.fuzzing import archived, damage_some, damaged, fuzz_settings, hostile, only_contract_errors

LOG = (Path(__file__).parent / "data" / "log.1").read_bytes()


def _entries(log: bytes) -> list[bytes]:
    """The transaction bodies of a valid log."""
    out, pos = [], HEADER.size
    while pos + ENTRY.size <= len(log):
        _, length = ENTRY.unpack_from(log, pos)
        if length == 0:
            break
        out.append(log[pos + ENTRY.size:pos + ENTRY.size + length])
        pos += ENTRY.size + length + 1
    return out


BODIES = _entries(LOG)


def framed(bodies: list[bytes]) -> bytes:
    """A transaction log of `bodies`, each with its Adler32 and end-of-record byte, as ZooKeeper frames them."""
    out = bytearray(HEADER.pack(LOG_MAGIC, 2, 0))
    for body in bodies:
        out += ENTRY.pack(zlib.adler32(body), len(body)) + body + bytes([EOR])
    return bytes(out)


def _jute_string(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">i", -1)
    b = s.encode()
    return struct.pack(">i", len(b)) + b


def snapshot(nodes: list[tuple[str, bytes | None]], sessions: int = 2, acls: int = 1) -> bytes:
    """A snapshot as ZooKeeper's FileSnap writes it: header, sessions, the ACL cache, the znodes (a parent
    before its children), "/" to end, then the Adler32 of everything before it."""
    out = bytearray(HEADER.pack(SNAP_MAGIC, 2, 0))
    out += struct.pack(">i", sessions) + b"".join(struct.pack(">qi", 0x100 + i, 6000) for i in range(sessions))
    out += struct.pack(">i", acls)
    for i in range(acls):
        out += struct.pack(">qi", i + 1, 1) + struct.pack(">i", 31) + _jute_string("world") + _jute_string("anyone")
    for zxid, (path, data) in enumerate(nodes, 1):
        out += _jute_string(path)
        out += struct.pack(">i", -1) if data is None else struct.pack(">i", len(data)) + data
        out += struct.pack(">q", 1)  # acl
        out += struct.pack(">qqqq", zxid, zxid, 1700000000000 + zxid, 1700000000000 + zxid)
        out += struct.pack(">iiiqq", 0, 0, 0, 0, zxid)
    out += _jute_string("/")
    return bytes(out + struct.pack(">q", zlib.adler32(bytes(out))))


ZNODES = [("", None), ("/cluster", b""), ("/cluster/id", b'{"version":"1","id":"zk-cluster-1"}'),
          ("/brokers", b""), ("/brokers/ids", b""),
          ("/brokers/ids/1", b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
                             b'"endpoints":["PLAINTEXT://b1:9092"],"jmx_port":-1,"port":9092,"host":"b1",'
                             b'"version":5,"timestamp":"1700000000000"}'),
          ("/controller_epoch", b"3"), ("/controller", b'{"version":2,"brokerid":1,"timestamp":"1700000000000"}'),
          ("/brokers/topics", b""),
          ("/brokers/topics/t", b'{"partitions":{"0":[1],"1":[1]},"topic_id":"AAAAAAAAAAAAAAAAAAAAAQ",'
                                b'"adding_replicas":{},"removing_replicas":{},"version":3}'),
          ("/brokers/topics/t/partitions", b""), ("/brokers/topics/t/partitions/0", b""),
          ("/brokers/topics/t/partitions/0/state",
           b'{"controller_epoch":3,"leader":1,"version":1,"leader_epoch":0,"isr":[1]}'),
          ("/brokers/topics/t/partitions/1", b""),
          ("/brokers/topics/t/partitions/1/state",
           b'{"controller_epoch":3,"leader":1,"version":1,"leader_epoch":2,"isr":[1]}'),
          ("/config", b""), ("/config/topics", b""), ("/config/topics/t", b'{"version":1,"config":{"retention.ms":"1"}}')]
SNAPSHOT = snapshot(ZNODES)


def read_log(data: bytes, on_error: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "log.100000001"
        f.write_bytes(data)
        only_contract_errors(lambda: list(TxnLogReader(f, on_error=on_error)))


def read_snap(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "snapshot.100000001"
        f.write_bytes(data)
        only_contract_errors(lambda: read_snapshot(f))


def test_the_samples_are_valid(tmp_path):
    assert len(BODIES) > 20 and framed(BODIES) == LOG[:len(framed(BODIES))]
    (tmp_path / "snapshot.1").write_bytes(SNAPSHOT)
    assert len(read_snapshot(tmp_path / "snapshot.1").nodes) == len(ZNODES)
    assert len(list(import_zk_events([_bootstrapped(tmp_path, SNAPSHOT)], "c"))) >= 5


@fuzz_settings(ci_examples=600)
@given(data=hostile(LOG), on_error=st.sampled_from(["raise", "skip"]))
def test_fuzz_a_damaged_transaction_log(data, on_error):
    read_log(data, on_error)


@fuzz_settings(ci_examples=600)
@given(st.data())
def test_fuzz_damaged_transactions_with_valid_checksums(data):
    bodies = damage_some(data, BODIES[:12], damaged)
    read_log(framed(bodies), data.draw(st.sampled_from(["raise", "skip"])))


@fuzz_settings(ci_examples=600)
@given(data=st.one_of(hostile(SNAPSHOT, random_size=1024),
                      damaged(SNAPSHOT[:-8]).map(lambda b: b + struct.pack(">q", zlib.adler32(b)))))
def test_fuzz_a_damaged_snapshot(data):
    read_snap(data)


# --- the import: reader, normalizer and archive writer, as `ctrlaudit import zk` runs them ---------------

NUMBERS = [b"-1", b"0", b"2147483648", b"-2147483649", b"99999999999999999999999", b"1e400", b"1.5", b"NaN",
           b'"1"', b"null", b"[]", b"{}", b"true"]


@st.composite
def damaged_json(draw: st.DrawFn, data: bytes) -> bytes:
    """A znode's JSON with a number swapped for one no Kafka writes (or another type), or its bytes damaged."""
    numbers = list(re.finditer(rb"-?\d+", data))
    if numbers and draw(st.booleans()):
        m = draw(st.sampled_from(numbers))
        return data[:m.start()] + draw(st.sampled_from(NUMBERS)) + data[m.end():]
    return draw(damaged(data))


def _bootstrapped(root: Path, snap: bytes, bodies: list[bytes] = ()) -> Path:
    """A dataDir whose oldest log starts after the snapshot: the import starts from the snapshot."""
    d = root / "version-2"
    d.mkdir(exist_ok=True)
    (d / "snapshot.1ff").write_bytes(snap)
    (d / "log.200").write_bytes(framed(list(bodies)))
    return root


def import_zk(root: Path, on_error: str) -> None:
    only_contract_errors(lambda: archived(import_zk_events([root], "c", on_error=on_error), root / "out"))


@fuzz_settings(ci_examples=400)
@given(st.data())
def test_fuzz_the_import_of_damaged_transactions(data):
    bodies = damage_some(data, BODIES, damaged)
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "version-2").mkdir()
        (Path(d) / "version-2" / "log.1").write_bytes(framed(bodies))
        import_zk(Path(d), data.draw(st.sampled_from(["raise", "skip"])))


@fuzz_settings(ci_examples=500)
@given(st.data())
@pytest.mark.slow
def test_fuzz_the_import_of_a_snapshot_with_damaged_znodes(data):
    nodes = damage_some(data, ZNODES, lambda node: damaged_json(node[1] or b"").map(lambda v: (node[0], v)), first=1)
    with tempfile.TemporaryDirectory() as d:
        import_zk(_bootstrapped(Path(d), snapshot(nodes)), "raise")
