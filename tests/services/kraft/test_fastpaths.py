"""The Python decoder's speed-ups (native_decode=False here) must not change what it returns:
tail caches (messages.py), the frame lookup and the zigzag tables of the record loop
(records.py), and non-bytes buffers."""

import random

import pytest

from services.kraft import LogReader, RecordDecodeError, UnknownRecord
from services.kraft.batch import build_batch
from services.kraft.messages import CATALOGUE, TAIL_CACHES, UNKNOWN_TAGS, clear_tail_caches
from services.kraft.records import _ZZ
from services.kraft.wire import read_varint, write_varint

from .helpers import TOPIC_ID, data_batch, metadata_value, pcr, random_data

DIR = "AAECAwQFBgcICQoLDA0ODw"


def _pcr_isr(partition: int, isr: list[int]) -> bytes:
    return metadata_value("PartitionChangeRecord", 1, {
        "partitionId": partition, "topicId": TOPIC_ID, "isr": isr, "leader": isr[0],
        "directories": [DIR] * len(isr)})


def test_records_with_the_same_tail_get_their_own_lists(tmp_path):
    f = tmp_path / "00000000000000000000.log"
    f.write_bytes(data_batch([_pcr_isr(p, [1, 2, 3]) for p in range(3)]))
    clear_tail_caches()
    a, b, c = LogReader(f, native_decode=False)
    assert [r.data["partitionId"] for r in (a, b, c)] == [0, 1, 2]
    assert a.data["isr"] == b.data["isr"] == [1, 2, 3]
    assert a.data["isr"] is not b.data["isr"]
    a.data["isr"].append(99)
    a.data["directories"].clear()
    # neither the other records nor a later decode of the same bytes see the mutation
    assert c.data["isr"] == [1, 2, 3] and c.data["directories"] == [DIR] * 3
    (again, *_) = LogReader(f, native_decode=False)
    assert again.data["isr"] == [1, 2, 3] and again.data["directories"] == [DIR] * 3


def test_warm_and_cold_caches_decode_the_same(tmp_path):
    rnd = random.Random(7)
    values, expect = [], []
    for name in ("PartitionChangeRecord", "PartitionRecord", "RegisterBrokerRecord",
                 "BrokerRegistrationChangeRecord", "TopicRecord", "ConfigRecord", "NoOpRecord"):
        mv = max((m for (n, _), m in CATALOGUE.items() if n == name), key=lambda m: m.version)
        for _ in range(30):
            data = random_data(mv.fields, rnd)
            values.append(metadata_value(name, mv.version, data))
            expect.append(data)
    values += values  # every value twice: the second time from the cache
    expect += expect
    f = tmp_path / "00000000000000000000.log"
    f.write_bytes(data_batch(values))
    clear_tail_caches()
    assert all(not c for c in TAIL_CACHES)
    cold = [r.data for r in LogReader(f, native_decode=False)]
    assert any(TAIL_CACHES)
    warm = [r.data for r in LogReader(f, native_decode=False)]
    assert cold == warm == expect


def test_unknown_tags_survive_the_cache_and_are_not_shared():
    body = bytearray(pcr(leader=1))
    body[3 + 20] = 2  # one more tagged field: unknown tag 20
    body += bytes([20, 2, 0xAB, 0xCD])
    mv = CATALOGUE[("PartitionChangeRecord", 0)]
    clear_tail_caches()
    d1, _ = mv.decode(bytes(body), 3, len(body))
    d2, _ = mv.decode(bytes(body), 3, len(body))
    assert d1 == d2 and d1[UNKNOWN_TAGS] == [(20, b"\xab\xcd")]
    assert d1[UNKNOWN_TAGS] is not d2[UNKNOWN_TAGS]


def test_a_failing_tail_is_never_cached_as_good(tmp_path):
    # Directories (tag 8) is not valid in v0: an error, the first time and every time
    v1 = metadata_value("PartitionChangeRecord", 1, {"partitionId": 0, "topicId": TOPIC_ID,
                                                     "directories": [TOPIC_ID]})
    v0 = v1[:2] + b"\x00" + v1[3:]
    f = tmp_path / "x.log"
    f.write_bytes(data_batch([v0, v0]))
    clear_tail_caches()
    for _ in range(2):
        with pytest.raises(RecordDecodeError, match="Tag 8 is not valid for version 0"):
            list(LogReader(f, native_decode=False))
    assert [type(r) for r in LogReader(f, on_error="skip", native_decode=False)] == [UnknownRecord, UnknownRecord]


def test_a_tail_that_ends_early_is_garbage_after_a_cached_decode(tmp_path):
    good = pcr(leader=1)
    f = tmp_path / "x.log"
    f.write_bytes(data_batch([good, good + b"\x00"]))
    clear_tail_caches()
    with pytest.raises(RecordDecodeError, match="garbage"):
        list(LogReader(f, native_decode=False))
    ok, bad = LogReader(f, on_error="skip", native_decode=False)
    assert ok.data["leader"] == 1 and isinstance(bad, UnknownRecord)


@pytest.mark.parametrize("kind", [bytearray, memoryview, lambda b: memoryview(bytearray(b))])
def test_non_bytes_buffers_decode_like_bytes(tmp_path, kind):
    raw = data_batch([_pcr_isr(p, [2, 3]) for p in range(5)], base_offset=40) + data_batch(
        [pcr(7, leader=3)], base_offset=45)
    clear_tail_caches()
    expect = [(r.offset, r.data) for r in LogReader("x.log", data=raw, native_decode=False)]
    got = [(r.offset, r.data) for r in LogReader("x.log", data=kind(raw), native_decode=False)]
    assert got == expect and [o for o, _ in got] == [40, 41, 42, 43, 44, 45]
    assert all(isinstance(k, bytes) for c in TAIL_CACHES for k in c)


def test_zigzag_table_matches_the_varint_reader():
    for n in (0, 1, -1, 63, -64, 64, 100, 4095, -4096, 4096, 8191, -8192):
        enc = write_varint(n)
        if len(enc) <= 2:
            u = enc[0] & 0x7F | (enc[1] << 7 if len(enc) == 2 else 0)
            assert _ZZ[u] == n == read_varint(enc, 0)[0]


def test_offset_deltas_of_two_and_three_bytes(tmp_path):
    # batches of > 63 and > 8191 records: offset deltas take 2 and 3 varint bytes
    n = 8300
    f = tmp_path / "00000000000000000000.log"
    f.write_bytes(build_batch([(None, pcr(i % 50, leader=i % 3)) for i in range(n)],
                              base_offset=1000))
    recs = list(LogReader(f, native_decode=False))
    assert [r.offset for r in recs] == list(range(1000, 1000 + n))
    assert [r.data["partitionId"] for r in recs[8190:8194]] == [40, 41, 42, 43]
