"""A record this decoder cannot read is kept without its bytes: a ConfigRecord of a future version, a record
type no release has, a ConfigRecord that fails to decode, and a config znode that is not JSON, each carrying
`ssl.keystore.password=hunter2`. The secret must reach no byte of the archive, the store, an export or the
CLI's output, on the native and the pure-Python decode paths, through `import kraft` on the real CLI and
through the live capture's CaptureState; the UnknownRecord itself stays, with what it was and why."""
from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from schemas.events import ConfigResourceType
from services.capture.logic import CaptureState, DeadLetter
from services.capture.serializers import RawRecord
from services.kraft.batch import build_batch
from services.kraft.messages import CATALOGUE
from services.kraft.wire import write_uvarint
from services.zookeeper.records import Op, Txn
from services.zookeeper.watch import LIVE, to_raw
from tests.ctrlaudit.test_bad_inputs import ctrlaudit
from tests.ctrlaudit.test_import import metadata_dir

SECRET = b"hunter2"
BODY = CATALOGUE[("ConfigRecord", 0)].encode({"resourceType": 2, "resourceName": "orders",
                                              "name": "ssl.keystore.password", "value": SECRET.decode()})


def _framed(api_key: int, version: int, body: bytes = BODY) -> bytes:
    return write_uvarint(1) + write_uvarint(api_key) + write_uvarint(version) + body


# (apiKey, version, value): what each unread record is, as the archive must still say
UNREAD = (
    (4, 9, _framed(4, 9)),            # a ConfigRecord of a version this build does not know
    (4, 300, _framed(4, 300)),        # ... whose version takes a two-byte varint (the slow frame path)
    (200, 0, _framed(200, 0)),        # a record type no Kafka release has, same bytes
    (4, 0, _framed(4, 0, BODY + b"\x00" + SECRET)),  # a known ConfigRecord with bytes after its body
)


def _with_unread(tmp_path: Path) -> tuple[Path, int]:
    """The copied metadata directory of test_import with one more batch holding the UNREAD records; the
    offset of the first."""
    d = metadata_dir(tmp_path)
    seg = d / "00000000000000000000.log"
    first = 7  # metadata_dir writes offsets 0..6
    seg.write_bytes(seg.read_bytes() + build_batch([(None, v) for *_, v in UNREAD], base_offset=first,
                                                    leader_epoch=1, timestamp=1_700_000_001_000))
    return d, first


def _files_holding(root: Path, needle: bytes) -> list[str]:
    return [str(p) for p in sorted(root.rglob("*")) if p.is_file() and needle in p.read_bytes()]


@pytest.mark.parametrize("native", ["1", "0"], ids=["native", "python"])
@pytest.mark.slow
def test_import_kraft_keeps_unread_records_without_their_bytes(tmp_path: Path, native: str) -> None:
    d, first = _with_unread(tmp_path)
    assert SECRET in (d / "00000000000000000000.log").read_bytes()  # the input does carry it
    env = {"CTRLAUDIT_NATIVE": native}
    archive, store, export = tmp_path / "archive", tmp_path / "s.duckdb", tmp_path / "events.json"
    runs = [ctrlaudit("import", "kraft", str(d), "--out", str(archive), "--on-error", "skip", env=env),
            ctrlaudit("load", str(archive), "--store", str(store), env=env),
            ctrlaudit("state", "--store", str(store), env=env),
            ctrlaudit("timeline", "--store", str(store), "--topic", "orders", "--partition", "0", env=env),
            ctrlaudit("export", "--store", str(store), "--out", str(export), "--format", "json", env=env)]
    for done in runs:
        assert done.returncode == 0, done.args[3:] + [done.stderr]
        assert SECRET.decode() not in done.stdout + done.stderr and "Traceback" not in done.stderr
    # each unread record was announced once, and kept without its value
    assert runs[0].stderr.count("kept without its value") == len(UNREAD)
    assert _files_holding(archive, SECRET) == [] and _files_holding(tmp_path, SECRET) == [str(d / "00000000000000000000.log")]
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute("SELECT source_offset, unknown_api_key, unknown_version, reason FROM events "
                           "WHERE kind = 'UnknownRecord' ORDER BY seq").fetchall()
        held = con.execute("SELECT count(*) FROM events WHERE CAST(events AS VARCHAR) LIKE '%hunter2%'").fetchone()
    assert held == (0,)
    assert [r[:3] for r in rows] == [(first + i, k, v) for i, (k, v, _) in enumerate(UNREAD)]
    for (_, _, _, reason), (_, _, value) in zip(rows, UNREAD):
        assert f"its {len(value)}-byte value is withheld" in reason, reason
    assert "ConfigRecord" in rows[0][3] and "apiKey 200" in rows[2][3] and "garbage" in rows[3][3]
    exported = [json.loads(line) for line in export.read_text().splitlines()]
    assert sum(e["kind"] == "UnknownRecord" for e in exported) == len(UNREAD)
    # explain names the record at its offset for what it is (not a partition change), as before
    explain = ctrlaudit("explain", "--store", str(store), "--offset", str(first), env=env)
    assert explain.returncode == 2 and explain.stderr.count("\n") == 1
    assert "is a UnknownRecord, not a partition change" in explain.stderr


def test_the_live_capture_keeps_unread_records_without_their_bytes() -> None:
    """What the capture worker's normalize agent does with a raw-topic batch; a record that does not decode
    is a dead letter there (the raw message stays in Kafka's topics, never in the archive), its reason
    without the value."""
    readable, broken = UNREAD[:-1], UNREAD[-1]

    def raw(values: list[bytes]) -> RawRecord:
        batch = build_batch([(None, v) for v in values], base_offset=7, leader_epoch=1, timestamp=1_700_000_001_000)
        return RawRecord("c1", 1, "KRAFT_BATCH", 0, 7, 7 + len(values) - 1, 1, 1_700_000_001_000,
                         1_700_000_001_000, batch, "00000000000000000000.log")

    out = CaptureState("c1").process(raw([v for *_, v in readable]))
    assert [(e.payload.api_key, e.payload.version) for e, *_ in out] == [(k, v) for k, v, _ in readable]
    assert all(e.payload.data == b"" and "withheld" in e.payload.reason for e, *_ in out)
    assert not any(SECRET in value or SECRET in header for _, header, value in out)
    with pytest.raises(DeadLetter) as dead:
        CaptureState("c1").process(raw([broken[2]]))
    assert "garbage after ConfigRecord v0" in dead.value.reason and SECRET.decode() not in dead.value.reason


ZNODE = "/config/topics/orders"


@pytest.mark.parametrize("data", [
    b"ssl.keystore.password=hunter2",                                            # not JSON
    json.dumps({"version": 1, "config": "ssl.keystore.password=hunter2"}).encode(),  # config not an object
    json.dumps(["ssl.keystore.password", "hunter2"]).encode(),                   # not an object at all
    b"\xff\xfehunter2",                                                          # not text
], ids=["text", "config-string", "array", "binary"])
def test_a_config_znode_that_is_not_json_keeps_nothing_and_removes_nothing(data: bytes) -> None:
    """Before: such a znode read as "every key removed" (or, config not an object, crashed the worker)."""
    st = CaptureState("zk1")
    good = json.dumps({"version": 1, "config": {"retention.ms": "1000"}}).encode()

    def feed(zxid: int, value: bytes):
        txn = Txn(0, 0, zxid, 1_700_000_000_000 + zxid, 5, (Op("setData", ZNODE, value, zxid),), LIVE)
        kind, position, lo, hi, when, payload, reason = to_raw(txn)
        return st.process(RawRecord("zk1", -1, kind, position, lo, hi, -1, when, when, payload, LIVE, None, reason))

    assert [e.payload.name for e, *_ in feed(0x10, good)] == ["retention.ms"]
    out = feed(0x11, data)
    assert len(out) == 1 and out[0][0].kind == "UnknownRecord"
    assert f"config znode {ZNODE} is not a JSON config object; its {len(data)}-byte value is withheld" in \
        out[0][0].payload.reason
    assert SECRET not in out[0][2] and out[0][0].payload.data == b""
    assert st.zookeeper is not None
    assert st.zookeeper.delta.configs_of(ConfigResourceType.TOPIC, "orders") == {"retention.ms": "1000"}


def test_import_zk_keeps_a_config_znode_that_is_not_json_without_its_bytes(tmp_path: Path) -> None:
    """The real ZooKeeper log of tests/services/zookeeper, its /config/topics/t1 written as `name=value` text
    (same length, checksum made to match): `import zk` keeps an UnknownRecord naming the znode, not the text."""
    import struct
    import zlib

    from tests.services.zookeeper.test_import_zk import DATA

    data = bytearray((DATA / "log.1").read_bytes())
    written, text = b'{"version":1,"config":{}}', b"ssl.key.password=hunter2!"
    assert len(written) == len(text) and data.count(written) == 1
    at = data.index(written)
    data[at:at + len(text)] = text
    pos = 16  # the file header: magic, version, dbid
    while True:  # the entry holding it: (adler32 as a long, length), body, 'B'
        _, length = struct.unpack_from(">qi", data, pos)
        if pos + 12 <= at < pos + 12 + length:
            struct.pack_into(">q", data, pos, zlib.adler32(data[pos + 12:pos + 12 + length]))
            break
        pos += 12 + length + 1
    (tmp_path / "zk" / "version-2").mkdir(parents=True)
    (tmp_path / "zk" / "version-2" / "log.1").write_bytes(bytes(data))
    archive, store = tmp_path / "archive", tmp_path / "s.duckdb"
    runs = [ctrlaudit("import", "zk", str(tmp_path / "zk"), "--out", str(archive)),
            ctrlaudit("load", str(archive), "--store", str(store))]
    for done in runs:
        assert done.returncode == 0, done.stderr
        assert SECRET.decode() not in done.stdout + done.stderr and "Traceback" not in done.stderr
    assert _files_holding(tmp_path, SECRET) == [str(tmp_path / "zk" / "version-2" / "log.1")]
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute("SELECT source_offset, reason FROM events WHERE kind = 'UnknownRecord'").fetchall()
    assert rows == [(65, "config znode /config/topics/t1 is not a JSON config object; its 25-byte value is "
                         "withheld (a record this decoder cannot read may carry a secret)")]
