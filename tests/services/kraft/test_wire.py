import pytest

from services.kraft.crc import BACKEND, crc32c, crc32c_pure
from services.kraft.wire import (VarintError, read_uvarint, read_varint, read_varlong, uuid_bytes,
                                 uuid_str, write_uvarint, write_varint)


@pytest.mark.parametrize("value,encoded", [(-1, b"\x01"), (0, b"\x00"), (1, b"\x02"),
                                           (41, b"\x52"), (47, b"\x5e"), (-64, b"\x7f"),
                                           (64, b"\x80\x01"), (300, b"\xd8\x04")])
def test_zigzag_varint_golden(value, encoded):
    assert write_varint(value) == encoded
    assert read_varint(encoded, 0) == (value, len(encoded))


@pytest.mark.parametrize("value", [0, 1, 127, 128, 16383, 16384, 2**31 - 1])
def test_uvarint_roundtrip(value):
    enc = write_uvarint(value)
    assert read_uvarint(enc + b"\xff", 0) == (value, len(enc))


@pytest.mark.parametrize("value", [-(2**63), -1, 0, 2**40, 2**63 - 1])
def test_varlong_roundtrip(value):
    enc = write_varint(value)
    assert read_varlong(enc, 0) == (value, len(enc))


def test_varint_longer_than_five_bytes_is_rejected():
    with pytest.raises(VarintError):
        read_uvarint(b"\x80\x80\x80\x80\x80\x01", 0)


def test_uuid_text_is_kafka_base64():
    raw = bytes(range(16))
    assert uuid_str(raw) == "AAECAwQFBgcICQoLDA0ODw"
    assert uuid_bytes("AAECAwQFBgcICQoLDA0ODw") == raw
    assert uuid_str(bytes(15) + b"\x01") == "AAAAAAAAAAAAAAAAAAAAAQ"  # Uuid.ONE_UUID


def test_crc32c_check_value():
    # the standard CRC-32C check value of "123456789"
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c_pure(b"123456789") == 0xE3069283
    data = bytes(range(256)) * 3
    assert crc32c(memoryview(data)) == crc32c_pure(data)
    assert BACKEND in ("crc32c", "google_crc32c", "pure-python")
