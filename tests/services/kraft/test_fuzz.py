"""Fuzzing the KRaft metadata log reader (services.kraft: files, batches, records), native and Python
paths: damaged segments (with and without the CRC check, strict and skipping, live and not), batches with
valid CRCs around damaged record values (so the record decoders themselves see the damage), and random
bytes. Only the project's contract errors may escape (tests/fuzzing.py, which also says how to run longer).
The package's conftest also runs every data batch through both decoders and asserts the same outcome."""
from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.kraft import LogReader, compression, native
from services.kraft.batch import build_batch
from tests.fuzzing import damaged, fuzz_settings, hostile, only_contract_errors

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
@fuzz_settings(ci_examples=400)
@given(data=hostile(SEGMENT), on_error=st.sampled_from(["raise", "skip"]), live=st.booleans(),
       verify_crc=st.booleans())
def test_fuzz_a_damaged_segment(path, data, on_error, live, verify_crc):
    read_all(data, path, on_error, live, verify_crc)


@pytest.mark.parametrize("path", PATHS)
@fuzz_settings(ci_examples=400)
@given(st.data())
def test_fuzz_damaged_record_values_in_valid_batches(path, data):
    values = [data.draw(damaged(v)) if data.draw(st.booleans()) else v
              for v in data.draw(st.lists(st.sampled_from(VALUES), min_size=1, max_size=4))]
    codec = data.draw(st.sampled_from(CODECS))
    batch = data_batch(values, base_offset=data.draw(st.integers(0, 2**40)), codec=codec)
    read_all(batch, path, data.draw(st.sampled_from(["raise", "skip"])), False, True)
