"""The output limit of every batch codec: exactly the limit inflates, one byte more is TooLarge, on each
codec's one-call path (small input) and its incremental path (large input, several frames or members, a
zstd frame without its content size, as zstd-jni's streaming writer makes them). The bombs themselves
run on the real CLI in tests/ctrlaudit/test_bombs.py."""
from __future__ import annotations

import gzip
import os

import lz4.frame
import pytest
import zstandard

from services.kraft import compression
from services.kraft.compression import MAX_RECORDS_BYTES, TooLarge, decompress

CODECS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


@pytest.mark.parametrize("codec", CODECS.values(), ids=CODECS.keys())
def test_the_limit_is_inclusive(codec: int) -> None:
    data = os.urandom(1000) + bytes(MAX_RECORDS_BYTES - 1000)
    assert decompress(codec, compression.compress(codec, data)) == data
    with pytest.raises(TooLarge, match=f"more than {MAX_RECORDS_BYTES} bytes"):
        decompress(codec, compression.compress(codec, data + b"\0"))


@pytest.mark.parametrize("codec", CODECS.values(), ids=CODECS.keys())
def test_a_small_limit_applies_to_small_input(codec: int) -> None:
    """The one-call paths (lz4 under its ratio bound, zstd with a declared size) keep the limit too."""
    data = bytes(5000)
    packed = compression.compress(codec, data)
    assert decompress(codec, packed, limit=5000) == data
    with pytest.raises(TooLarge):
        decompress(codec, packed, limit=4999)


def test_several_gzip_members_lz4_and_zstd_frames_are_one_output() -> None:
    a, b = os.urandom(3000), bytes(200_000)
    z = zstandard.ZstdCompressor()
    assert decompress(1, gzip.compress(a) + gzip.compress(b) + b"\0\0") == a + b
    assert decompress(3, lz4.frame.compress(a) + lz4.frame.compress(b)) == a + b
    streamed = z.compressobj()
    no_size = streamed.compress(a + b) + streamed.flush()
    assert zstandard.frame_content_size(no_size) == -1
    assert decompress(4, no_size) == a + b
    assert decompress(4, z.compress(a) + z.compress(b)) == a + b
    with pytest.raises(TooLarge):
        decompress(4, z.compress(a) + z.compress(b), limit=len(a) + len(b) - 1)


def test_a_snappy_block_is_refused_on_its_declared_length_alone() -> None:
    """Nothing is decompressed: a raw block that declares 1 GiB is TooLarge before any byte of output."""
    lying = bytes([0x80, 0x80, 0x80, 0x80, 0x04]) + b"\0" * 10  # uvarint 2**30, then nothing like it
    with pytest.raises(TooLarge):
        decompress(2, lying)


@pytest.mark.parametrize("codec", CODECS.values(), ids=CODECS.keys())
def test_truncated_input_is_an_error_or_short(codec: int) -> None:
    data = os.urandom(50_000)
    packed = compression.compress(codec, data)
    try:
        out = decompress(codec, packed[:-30])
    except Exception as e:  # noqa: BLE001 - each codec's own error; records_region makes it one line
        assert not isinstance(e, TooLarge)
    else:  # zstd ends a cut frame early: the records then do not add up to the batch's count
        assert codec == 4 and out != data
