"""Record batch compression codecs (attribute bits 0-2): none, gzip, snappy, lz4, zstd.

Only gzip is in the standard library. The others use optional packages; a batch whose codec's
package is missing raises ``CompressionError`` naming the package, rather than a bare ImportError.
The compressors exist for tests and synthetic files; Kafka's KRaft writes uncompressed batches.
"""

from __future__ import annotations

import gzip
import struct

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
# snappy-java's SnappyOutputStream (what Kafka uses) frames raw snappy blocks like this
XERIAL_MAGIC = b"\x82SNAPPY\x00"
_PACKAGES = {2: "python-snappy (or cramjam)", 3: "lz4 (or cramjam)", 4: "zstandard (or cramjam)"}


class MissingCodec(RuntimeError):
    pass


def _cramjam():
    try:
        import cramjam  # type: ignore[import-not-found]
        return cramjam
    except ImportError:
        return None


def _snappy_raw_decompress(data: bytes) -> bytes:
    try:
        import snappy  # type: ignore[import-not-found]
        return snappy.decompress(data)
    except ImportError:
        cj = _cramjam()
        if cj is None:
            raise MissingCodec(_PACKAGES[2]) from None
        return bytes(cj.snappy.decompress_raw(data))


def _snappy_raw_compress(data: bytes) -> bytes:
    try:
        import snappy  # type: ignore[import-not-found]
        return snappy.compress(data)
    except ImportError:
        cj = _cramjam()
        if cj is None:
            raise MissingCodec(_PACKAGES[2]) from None
        return bytes(cj.snappy.compress_raw(data))


def snappy_decompress(data: bytes) -> bytes:
    """Xerial-framed (magic, version, compatible-version, then int32-length blocks) or raw."""
    if data[:8] != XERIAL_MAGIC:
        return _snappy_raw_decompress(data)
    out = bytearray()
    pos = 16
    while pos < len(data):
        (n,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if n < 0 or pos + n > len(data):
            raise ValueError("xerial snappy block runs past the end")
        out += _snappy_raw_decompress(data[pos:pos + n])
        pos += n
    return bytes(out)


def snappy_compress_xerial(data: bytes, block: int = 32 * 1024) -> bytes:
    out = bytearray(XERIAL_MAGIC + struct.pack(">ii", 1, 1))
    for i in range(0, len(data), block):
        c = _snappy_raw_compress(data[i:i + block])
        out += struct.pack(">i", len(c)) + c
    return bytes(out)


def lz4_decompress(data: bytes) -> bytes:
    try:
        import lz4.frame  # type: ignore[import-not-found]
        return lz4.frame.decompress(data)
    except ImportError:
        cj = _cramjam()
        if cj is None:
            raise MissingCodec(_PACKAGES[3]) from None
        return bytes(cj.lz4.decompress(data))


def lz4_compress(data: bytes) -> bytes:
    try:
        import lz4.frame  # type: ignore[import-not-found]
        return lz4.frame.compress(data)
    except ImportError:
        cj = _cramjam()
        if cj is None:
            raise MissingCodec(_PACKAGES[3]) from None
        return bytes(cj.lz4.compress(data))


def zstd_decompress(data: bytes) -> bytes:
    try:
        import zstandard  # type: ignore[import-not-found]
        # zstd-jni's streaming writer may omit the content size, so use a stream decoder
        dobj = zstandard.ZstdDecompressor().decompressobj()
        return dobj.decompress(data)
    except ImportError:
        cj = _cramjam()
        if cj is None:
            raise MissingCodec(_PACKAGES[4]) from None
        return bytes(cj.zstd.decompress(data))


def zstd_compress(data: bytes) -> bytes:
    try:
        import zstandard  # type: ignore[import-not-found]
        return zstandard.ZstdCompressor().compress(data)
    except ImportError:
        cj = _cramjam()
        if cj is None:
            raise MissingCodec(_PACKAGES[4]) from None
        return bytes(cj.zstd.compress(data))


def decompress(codec: int, data) -> bytes:
    data = bytes(data)
    if codec == 1:
        return gzip.decompress(data)
    if codec == 2:
        return snappy_decompress(data)
    if codec == 3:
        return lz4_decompress(data)
    if codec == 4:
        return zstd_decompress(data)
    raise ValueError(f"unknown compression codec {codec}")


def compress(codec: int, data: bytes) -> bytes:
    if codec == 0:
        return data
    if codec == 1:
        return gzip.compress(data)
    if codec == 2:
        return snappy_compress_xerial(data)
    if codec == 3:
        return lz4_compress(data)
    if codec == 4:
        return zstd_compress(data)
    raise ValueError(f"unknown compression codec {codec}")


def available(codec: int) -> bool:
    try:
        compress(codec, b"probe")
        return True
    except MissingCodec:
        return False
