"""Record batch compression codecs (attribute bits 0-2): none, gzip, snappy, lz4, zstd.

Only gzip is in the standard library. The others use optional packages; a batch whose codec's
package is missing raises ``CompressionError`` naming the package, rather than a bare ImportError.
The compressors exist for tests and synthetic files; Kafka's KRaft writes uncompressed batches.

Every decompression stops at ``limit`` bytes of output (``TooLarge``), so a batch copied from a
hostile cluster cannot inflate without bound: gzip and zstd are read incrementally up to the limit,
lz4 with the decompressor's max_length, snappy's declared uncompressed length (raw, and each
xerial block's) is checked before anything is decompressed. The limit is the most KRaft ever puts
in one batch: KafkaRaftClient.MAX_BATCH_SIZE_BYTES, 8 MiB, which its BatchAccumulator checks
against the records' uncompressed size (KRaft writes its batches uncompressed, Compression.NONE,
so a compressed batch is not the controller's own). Not twice that: the records decoded from a
batch cost memory too (a batch of 8 MiB of the smallest records is ~650k of them, ~150 MB), and a
bomb must stay within 256 MB.
"""

from __future__ import annotations

import gzip
import importlib
import struct
import zlib
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from .wire import Buf as Buffer  # what the readers hand over: bytes, bytearray, memoryview, mmap

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
# snappy-java's SnappyOutputStream (what Kafka uses) frames raw snappy blocks like this
XERIAL_MAGIC = b"\x82SNAPPY\x00"
_PACKAGES = {2: "python-snappy (or cramjam)", 3: "lz4 (or cramjam)", 4: "zstandard (or cramjam)"}
KRAFT_MAX_BATCH_BYTES = 8 << 20  # KafkaRaftClient.MAX_BATCH_SIZE_BYTES
MAX_RECORDS_BYTES = KRAFT_MAX_BATCH_BYTES  # what a batch's records may inflate to
_CHUNK = 1 << 20  # gzip/zstd output is produced this much at a time
_ZSTD_MAX_WINDOW = 1 << 23  # no batch needs a window larger than the most it may hold


class TooLarge(ValueError):
    """A batch's records would inflate past the limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"its records inflate to more than {limit} bytes (more than KRaft puts in a batch: "
                         "a decompression bomb, or not Kafka's)")


class MissingCodec(RuntimeError):
    pass


def _optional(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


# looked up once: an import statement per batch costs as much as inflating a small one
_snappy = _optional("snappy")
_lz4_frame = _optional("lz4.frame")
_zstandard = _optional("zstandard")
_cramjam = _optional("cramjam")  # the fallback for each of the three


def _fallback(codec: int) -> ModuleType:
    """cramjam, for a codec whose own package is missing; MissingCodec, naming the packages, without it."""
    if _cramjam is None:
        raise MissingCodec(_PACKAGES[codec])
    return _cramjam


def _snappy_declared_length(data: bytes) -> int:
    """The uncompressed length a raw snappy block starts with (a uvarint of at most 5 bytes)."""
    n = shift = 0
    for i in range(min(5, len(data))):
        n |= (data[i] & 0x7F) << shift
        if data[i] < 0x80:
            return n
        shift += 7
    raise ValueError("snappy block does not start with its uncompressed length")


def _snappy_raw_decompress(data: bytes, limit: int) -> bytes:
    if _snappy_declared_length(data) > limit:
        raise TooLarge(limit)
    return _snappy_raw(data)


def _snappy_raw(data: bytes) -> bytes:
    """A raw snappy block, whose declared length the caller has checked (the decoder then writes exactly
    that many bytes, or fails)."""
    if _snappy is not None:
        return cast(bytes, _snappy.decompress(data))  # python-snappy: no type information
    cj = _fallback(2)
    return bytes(cj.snappy.decompress_raw(data))


def _snappy_raw_compress(data: bytes) -> bytes:
    if _snappy is not None:
        return cast(bytes, _snappy.compress(data))  # python-snappy: no type information
    cj = _fallback(2)
    return bytes(cj.snappy.compress_raw(data))


def snappy_decompress(data: bytes, limit: int = MAX_RECORDS_BYTES) -> bytes:
    """Xerial-framed (magic, version, compatible-version, then int32-length blocks) or raw."""
    if data[:8] != XERIAL_MAGIC:
        return _snappy_raw_decompress(data, limit)
    out = bytearray()
    pos = 16
    while pos < len(data):
        (n,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if n < 0 or pos + n > len(data):
            raise ValueError("xerial snappy block runs past the end")
        block = data[pos:pos + n]
        if len(out) + _snappy_declared_length(block) > limit:
            raise TooLarge(limit)
        out += _snappy_raw(block)
        pos += n
    return bytes(out)


def snappy_compress_xerial(data: bytes, block: int = 32 * 1024) -> bytes:
    out = bytearray(XERIAL_MAGIC + struct.pack(">ii", 1, 1))
    for i in range(0, len(data), block):
        c = _snappy_raw_compress(data[i:i + block])
        out += struct.pack(">i", len(c)) + c
    return bytes(out)


def lz4_decompress(data: bytes, limit: int = MAX_RECORDS_BYTES) -> bytes:
    """LZ4 frames (Kafka's KafkaLZ4BlockOutputStream writes one), at most `limit` bytes of output."""
    if _lz4_frame is None:
        return _cramjam_bounded(3, "lz4", data, limit)
    out = b""
    rest = data
    while rest:
        d = _lz4_frame.LZ4FrameDecompressor()
        frame = d.decompress(rest, max_length=limit + 1 - len(out))
        out = frame if not out else out + frame  # one frame, as Kafka writes: no copy
        if len(out) > limit:
            raise TooLarge(limit)
        if not d.eof:
            raise ValueError("lz4 frame is truncated")
        rest = d.unused_data
    return out


def lz4_compress(data: bytes) -> bytes:
    if _lz4_frame is not None:
        return cast(bytes, _lz4_frame.compress(data))  # lz4: no type information
    cj = _fallback(3)
    return bytes(cj.lz4.compress(data))


def zstd_decompress(data: bytes, limit: int = MAX_RECORDS_BYTES) -> bytes:
    """zstd frames, read incrementally (zstd-jni's streaming writer may omit the content size), at
    most `limit` bytes of output and a window of at most 8 MiB (a frame may ask for 2 GiB)."""
    zstandard = _zstandard
    if zstandard is None:
        return _cramjam_bounded(4, "zstd", data, limit)
    # a truncated frame ends the output early without an error, as zstandard's decompressobj did: the
    # records then do not add up to the batch's count, which decode_data_batch reports
    dctx = zstandard.ZstdDecompressor(max_window_size=_ZSTD_MAX_WINDOW)
    try:
        declared = zstandard.frame_content_size(data)
    except zstandard.ZstdError:
        declared = -1  # not a frame header: the incremental read says what is wrong
    if 0 <= declared <= limit:
        # one frame that declares its size (zstd's one-shot compressor writes it): decoded into a buffer of
        # that size, which the decoder cannot overrun (it fails instead)
        try:
            return cast(bytes, dctx.decompress(data, allow_extra_data=False))  # _optional gives a ModuleType: untyped
        except zstandard.ZstdError:
            pass  # more frames, or a size that lies: the incremental read decides
    out = bytearray()
    with dctx.stream_reader(data, read_across_frames=True) as reader:
        while chunk := reader.read(min(_CHUNK, limit + 1 - len(out))):
            out += chunk
            if len(out) > limit:
                raise TooLarge(limit)
    return bytes(out)


def zstd_compress(data: bytes) -> bytes:
    if _zstandard is not None:
        return cast(bytes, _zstandard.ZstdCompressor().compress(data))
    cj = _fallback(4)
    return bytes(cj.zstd.compress(data))


def gzip_decompress(data: bytes, limit: int = MAX_RECORDS_BYTES) -> bytes:
    """gzip members (Kafka writes one; gzip.decompress reads several), at most `limit` bytes."""
    out = bytearray()
    rest = data
    while rest:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        while not d.eof:
            chunk = d.decompress(rest, min(_CHUNK, limit + 1 - len(out)))
            out += chunk
            if len(out) > limit:
                raise TooLarge(limit)
            rest = d.unconsumed_tail
            if not chunk and not rest:
                break
        if not d.eof:
            raise ValueError("gzip stream is truncated")
        rest = d.unused_data.lstrip(b"\0")  # zero padding after the last member, as gzip allows
    return bytes(out)


def _cramjam_bounded(codec: int, name: str, data: bytes, limit: int) -> bytes:
    """cramjam's decompression into a buffer of limit + 1 bytes: one that fills it is too large."""
    cj = _fallback(codec)
    buf = bytearray(limit + 1)
    try:
        n = getattr(cj, name).decompress_into(data, buf)
    except Exception as e:
        if "whole buffer" in str(e):
            raise TooLarge(limit) from None
        raise
    if n > limit:
        raise TooLarge(limit)
    return bytes(buf[:n])


def decompress(codec: int, data: Buffer, limit: int = MAX_RECORDS_BYTES) -> bytes:
    inflate = _DECOMPRESSORS.get(codec)
    if inflate is None:
        raise ValueError(f"unknown compression codec {codec}")
    return inflate(bytes(data), limit)


def compress(codec: int, data: bytes) -> bytes:
    deflate = _COMPRESSORS.get(codec)
    if deflate is None:
        raise ValueError(f"unknown compression codec {codec}")
    return deflate(data)


# by the codec's attribute bits (CODECS); none (0) is not decompressed: its batch holds the records as they are
_DECOMPRESSORS: dict[int, Callable[[bytes, int], bytes]] = {
    1: gzip_decompress, 2: snappy_decompress, 3: lz4_decompress, 4: zstd_decompress}
_COMPRESSORS: dict[int, Callable[[bytes], bytes]] = {
    0: lambda data: data, 1: gzip.compress, 2: snappy_compress_xerial, 3: lz4_compress, 4: zstd_compress}


def available(codec: int) -> bool:
    try:
        compress(codec, b"probe")
        return True
    except MissingCodec:
        return False
