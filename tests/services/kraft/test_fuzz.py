"""Fuzzing the KRaft metadata log reader (services.kraft: files, batches, records), native and Python
paths: damaged segments (with and without the CRC check, strict and skipping, live and not), batches with
valid CRCs around damaged record values (so the record decoders themselves see the damage), and random
bytes. Only the project's contract errors may escape (tests/fuzzing.py, which also says how to run longer).
The package's conftest also runs every data batch through both decoders and asserts the same outcome."""
from __future__ import annotations

import random
import struct
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.kraft import LogReader, compression, native
from services.kraft.batch import build_batch
from services.kraft.crc import crc32c
from services.kraft.wire import write_varint
from services.kraft.offline import import_events
from tests.fuzzing import archived, damage_some, damaged, fuzz_settings, hostile, only_contract_errors

from .helpers import all_versions, control_key, control_value, data_batch, metadata_value, pcr, random_data

PATHS = ["python"] + (["native"] if native.built() else [])
CODECS = [c for c in (0, 1, 2, 3, 4) if c == 0 or compression.available(c)]


def _values() -> list[bytes]:
    """One value of every metadata record version the catalogue knows, with random content (fixed seed)."""
    rnd = random.Random(7)
    out = []
    for mv in all_versions():
        if mv.api_key is None:
            continue
        try:
            out.append(metadata_value(mv.name, mv.version, random_data(mv.fields, rnd)))
        except Exception:  # noqa: BLE001 - a random value the encoder refuses (a bound): not a sample
            continue
    return out


VALUES = _values()


def _segment() -> bytes:
    """Batches of every codec, a control batch and a spread of record types: a valid segment."""
    batches, offset = [], 0
    for i, codec in enumerate(CODECS):
        values = VALUES[i * 7:(i + 1) * 7] + [pcr(i, leader=1, isr=[1, 2])]
        batches.append(data_batch(values, base_offset=offset, leader_epoch=1 + i, codec=codec))
        offset += len(values)
    lcm = control_value("LeaderChangeMessage", {"version": 0, "leaderId": 1, "voters": [{"voterId": 1}],
                                                "grantingVoters": [{"voterId": 1}]})
    batches.append(build_batch([(control_key(2), lcm)], base_offset=offset, leader_epoch=9, control=True))
    return b"".join(batches)


SEGMENT = _segment()


def read_all(data: bytes, path: str, on_error: str, live: bool, verify_crc: bool) -> None:
    reader = LogReader("00000000000000000000.log", data=data, native_decode=path == "native", on_error=on_error,
                       live=live, verify_crc=verify_crc)
    only_contract_errors(reader.read_all)


def test_the_sample_segment_is_valid():
    for path in PATHS:
        records = LogReader("00000000000000000000.log", data=SEGMENT, native_decode=path == "native").read_all()
        assert len(records) > 30


@pytest.mark.parametrize("path", PATHS)
@fuzz_settings(ci_examples=1000)
@given(data=hostile(SEGMENT), on_error=st.sampled_from(["raise", "skip"]), live=st.booleans(),
       verify_crc=st.booleans())
def test_fuzz_a_damaged_segment(path, data, on_error, live, verify_crc):
    read_all(data, path, on_error, live, verify_crc)


@pytest.mark.parametrize("path", PATHS)
@fuzz_settings(ci_examples=800)
@given(st.data())
def test_fuzz_damaged_record_values_in_valid_batches(path, data):
    values = [data.draw(damaged(v)) if data.draw(st.booleans()) else v
              for v in data.draw(st.lists(st.sampled_from(VALUES), min_size=1, max_size=4))]
    codec = data.draw(st.sampled_from(CODECS))
    batch = data_batch(values, base_offset=data.draw(st.integers(0, 2**40)), codec=codec)
    read_all(batch, path, data.draw(st.sampled_from(["raise", "skip"])), False, True)


# --- the import: reader, normalizer and archive writer, as `ctrlaudit import kraft` runs them -----------

T1, INC = "AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAw"


def _history() -> list[tuple[bytes | None, bytes]]:
    """(key, value) of a small cluster's metadata log: a leader, three brokers, a topic of two partitions, a
    config, ISR and leader changes, a fenced broker, the topic deleted."""
    lcm = control_value("LeaderChangeMessage", {"version": 0, "leaderId": 3000, "voters": [{"voterId": 3000}],
                                                "grantingVoters": [{"voterId": 3000}]})
    out: list[tuple[bytes | None, bytes]] = [(control_key(2), lcm)]
    out.append((None, metadata_value("FeatureLevelRecord", 0, {"name": "metadata.version", "featureLevel": 21})))
    for bid in (1, 2, 3):
        out.append((None, metadata_value("RegisterBrokerRecord", 3, {
            "brokerId": bid, "incarnationId": INC, "brokerEpoch": 10 + bid, "endPoints": [
                {"name": "PLAINTEXT", "host": "127.0.0.1", "port": 9000 + bid, "securityProtocol": 0}],
            "features": [], "rack": f"r{bid % 2}", "fenced": False, "inControlledShutdown": False})))
    out.append((None, metadata_value("TopicRecord", 0, {"name": "orders", "topicId": T1})))
    for pid in (0, 1):
        out.append((None, metadata_value("PartitionRecord", 1, {
            "partitionId": pid, "topicId": T1, "replicas": [1, 2, 3], "isr": [1, 2, 3], "removingReplicas": [],
            "addingReplicas": [], "leader": 1 + pid, "leaderEpoch": 0, "partitionEpoch": 0,
            "directories": ["AAAAAAAAAAAAAAAAAAAAAA"] * 3})))
    out.append((None, metadata_value("ConfigRecord", 0, {"resourceType": 2, "resourceName": "orders",
                                                         "name": "min.insync.replicas", "value": "2"})))
    out.append((None, metadata_value("PartitionChangeRecord", 0, {
        "partitionId": 0, "topicId": T1, "isr": [1, 2]})))
    out.append((None, metadata_value("PartitionChangeRecord", 0, {"partitionId": 1, "topicId": T1, "leader": 3})))
    out.append((None, metadata_value("FenceBrokerRecord", 0, {"id": 2, "epoch": 12})))
    out.append((None, metadata_value("RemoveTopicRecord", 0, {"topicId": T1})))
    return out


HISTORY = _history()


def log_of(records: list[tuple[bytes | None, bytes]]) -> bytes:
    """One record per batch, as the active controller writes them, with valid CRCs."""
    return b"".join(build_batch([r], base_offset=i, leader_epoch=1, timestamp=1_700_000_000_000 + i,
                                control=r[0] is not None) for i, r in enumerate(records))


def import_kraft(data: bytes, on_error: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        meta = Path(d) / "__cluster_metadata-0"
        meta.mkdir()
        (meta / "00000000000000000000.log").write_bytes(data)
        only_contract_errors(lambda: archived(import_events([meta], "c", on_error=on_error), Path(d) / "out"))


def test_the_sample_history_imports(tmp_path):
    meta = tmp_path / "__cluster_metadata-0"
    meta.mkdir()
    (meta / "00000000000000000000.log").write_bytes(log_of(HISTORY))
    assert len(list(import_events([meta], "c"))) >= 8


@fuzz_settings(ci_examples=500)
@given(st.data())
@pytest.mark.slow
def test_fuzz_the_import_of_damaged_records(data):
    records = damage_some(data, HISTORY, lambda record: damaged(record[1]).map(lambda v: (record[0], v)))
    import_kraft(log_of(records), data.draw(st.sampled_from(["raise", "skip"])))


@fuzz_settings(ci_examples=300)
@given(data=hostile(log_of(HISTORY)), on_error=st.sampled_from(["raise", "skip"]))
def test_fuzz_the_import_of_a_damaged_log(data, on_error):
    import_kraft(data, on_error)


# --- what the fuzzers found, kept as plain tests ----------------------------------------------------------

def batch_of_raw_record(body: bytes) -> bytes:
    """A v2 batch (valid CRC) of one record whose bytes after the length are `body`."""
    records = write_varint(len(body)) + body
    after_crc = struct.pack(">hiqqqhii", 0, 0, 0, 0, -1, -1, -1, 1) + records
    return struct.pack(">qiibI", 0, 4 + 1 + 4 + len(after_crc), 0, 2, crc32c(after_crc)) + after_crc


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("headers", [write_varint(2**31 - 1) + write_varint(-5) + b"\x00" * 6,  # stepped back
                                     write_varint(2**31 - 1) + b"\x00" * 4],
                         ids=["a-key-length-that-steps-back", "a-count-beyond-the-record"])
def test_a_header_count_beyond_the_record_is_damage_not_a_loop(path, headers):
    value = pcr(0)
    body = b"\x00" + write_varint(0) + write_varint(0) + write_varint(-1) + write_varint(len(value)) + value + headers
    started = time.monotonic()
    with pytest.raises(Exception) as raised:
        LogReader("00000000000000000000.log", data=batch_of_raw_record(body), native_decode=path == "native").read_all()
    assert time.monotonic() - started < 5
    assert "headers in" in str(raised.value) or "header key of length" in str(raised.value), raised.value
