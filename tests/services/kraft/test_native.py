"""The native path (services/kraft/_native/kraftdecode.c) gives the Python path's records, and
leaves to the Python path whatever it does not read. (conftest.py also compares both paths on every
batch any test here decodes.)"""

from __future__ import annotations

import random

import pytest

from services.kraft import LogReader, native, records
from services.kraft.batch import build_batch, encode_record
from devtools.synthetic_kraft import synthetic_log
from services.kraft.messages import CATALOGUE

from .helpers import TOPIC_ID, data_batch, metadata_value, pcr, random_data, record_view

pytestmark = pytest.mark.skipif(not native.built(), reason="services.kraft._kraftdecode not built")


@pytest.fixture
def no_fallback(monkeypatch):
    """Fail if the native path hands a batch to the Python path."""
    def refuse(buf, b, **kw):
        raise AssertionError(f"batch at offset {b.base_offset} fell back to the Python path")
    monkeypatch.setattr(native.records, "decode_data_batch", refuse)


def _views(path, native_decode, **kw):
    reader = LogReader(path, native_decode=native_decode, **kw)
    return [record_view(r) for r in reader], reader.skipped


def test_synthetic_log_native_equals_python(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    n = synthetic_log(path, 20_000)
    py, _ = _views(path, False)
    assert len(py) == n
    nat, _ = _views(path, True)
    assert nat == py


def test_synthetic_log_is_read_natively_throughout(tmp_path, no_fallback):
    path = tmp_path / "00000000000000000000.log"
    n = synthetic_log(path, 2_000, seed=5)
    assert sum(1 for _ in LogReader(path, native_decode=True)) == n


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_metadata_message_version_native_equals_python(tmp_path, seed):
    rnd = random.Random(seed)
    versions = [mv for mv in CATALOGUE.values() if mv.api_key is not None]
    values = [metadata_value(mv.name, mv.version, random_data(mv.fields, rnd))
              for mv in versions for _ in range(5)]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data_batch(values[: len(values) // 2], leader_epoch=3, timestamp=17)
                     + data_batch(values[len(values) // 2:], base_offset=len(values) // 2))
    py, _ = _views(path, False)
    assert {v[7] for v in py} == {mv.type_name for mv in versions}
    with pytest.MonkeyPatch.context() as m:
        m.setattr(native.records, "decode_data_batch", lambda *a, **k: pytest.fail("fallback"))
        nat, _ = _views(path, True)
    assert nat == py


def test_records_with_keys_and_headers(tmp_path, no_fallback):
    body = b"".join(encode_record(i, b"k" * i, pcr(i, leader=i), timestamp_delta=5 * i,
                                  headers=[("h", b"v"), ("n", None)]) for i in range(3))
    raw = bytearray(build_batch([(None, pcr(0))] * 3, base_offset=9, timestamp=1000))
    # swap the records region for ours, and fix the CRC
    from services.kraft.batch import HEADER_SIZE
    from services.kraft.crc import crc32c
    import struct
    raw = raw[:HEADER_SIZE] + body
    struct.pack_into(">i", raw, 8, len(raw) - 12)
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(raw))
    recs = list(LogReader(path, native_decode=True))
    assert [(r.offset, r.timestamp, r.data["leader"]) for r in recs] == [
        (9, 1000, 0), (10, 1005, 1), (11, 1010, 2)]


def _unknown_tag() -> bytes:
    v = bytearray(pcr(leader=1))
    v[3 + 20] = 2
    return bytes(v) + bytes([20, 2, 0xAB, 0xCD])


# values only the Python path reads or reports; the native path must hand their batch over
ODD_VALUES = {
    "unknown apiKey": bytes([1, 97, 0]),  # not 99: the warning is logged once per process
    "unknown version": bytes([1, 5, 9]) + pcr()[3:],
    "frame version 0": bytes([0]) + pcr()[1:],
    "unknown tag": _unknown_tag(),
    "tag not valid in version": bytes([1, 5, 0]) + metadata_value(
        "PartitionChangeRecord", 1, {"partitionId": 0, "topicId": TOPIC_ID,
                                     "directories": [TOPIC_ID]})[3:],
    "garbage after": pcr() + b"\x00",
    "truncated": pcr(isr=[1, 2, 3])[:-3],
    "invalid utf-8": metadata_value("TopicRecord", 0, {"name": "ab", "topicId": TOPIC_ID}).replace(
        b"ab", b"\xff\xfe"),
}


@pytest.mark.parametrize("what", sorted(ODD_VALUES))
@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_odd_values_decode_the_python_way(tmp_path, what, on_error):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data_batch([pcr(1, leader=2), ODD_VALUES[what], pcr(2)], base_offset=5)
                     + data_batch([pcr(3, leader=1)], base_offset=8))

    def outcome(flag):
        try:
            return _views(path, flag, on_error=on_error)
        except Exception as e:  # noqa: BLE001 - compared, type and message
            return type(e).__name__, str(e)

    nat, py = outcome(True), outcome(False)
    assert nat == py
    assert native._native.decode_records(path.read_bytes(), 61, len(data_batch(
        [pcr(1, leader=2), ODD_VALUES[what], pcr(2)])), 3, 5, 0, None) is None


def test_null_value_and_bad_framing_fall_back(tmp_path):
    for batch in (build_batch([(None, pcr()), (None, None)]),
                  data_batch([pcr()])[:-1] + b"\x00"):
        path = tmp_path / "00000000000000000000.log"
        from services.kraft.crc import crc32c
        import struct
        raw = bytearray(batch)
        struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
        path.write_bytes(bytes(raw))
        outs = []
        for flag in (True, False):
            try:
                outs.append(_views(path, flag, on_error="skip"))
            except Exception as e:  # noqa: BLE001
                outs.append((type(e).__name__, str(e)))
        assert outs[0] == outs[1]


def test_lists_are_not_shared_between_records(tmp_path, no_fallback):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data_batch([pcr(p, isr=[1, 2]) for p in range(2)] + [
        metadata_value("PartitionRecord", 0, {"partitionId": 0, "topicId": TOPIC_ID,
                                              "replicas": [1], "isr": [1], "removingReplicas": [],
                                              "addingReplicas": [], "leader": 1})] * 2))
    a, b, c, d = LogReader(path, native_decode=True)
    a.data["isr"].append(9)
    c.data["removingReplicas"].append(9)
    assert b.data["isr"] == [1, 2] and d.data["removingReplicas"] == []


def test_environment_turns_the_native_path_off(monkeypatch, tmp_path):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data_batch([pcr()]))
    calls = []
    monkeypatch.setattr(native._native, "decode_records",
                        lambda *a: calls.append(1) or None, raising=True)
    monkeypatch.setenv("CTRLAUDIT_NATIVE", "0")
    list(LogReader(path))
    assert calls == []
    monkeypatch.delenv("CTRLAUDIT_NATIVE")
    list(LogReader(path))
    assert calls  # (conftest.py decodes each batch twice)
    assert records  # the reference module stays importable on its own
