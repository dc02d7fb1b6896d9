"""Decompression bombs on the real CLI: a KRaft record batch (gzip, snappy raw and xerial-framed, lz4, zstd)
and an archive's deflate block that inflate to 1 GiB (snappy, whose format cannot get there in a few MB:
64 MiB) are refused with one line naming the file and the batch or block, exit 2 (bad input) or 1 (an
archive that is not what it claims), nothing written, and the command's peak memory (its own rusage,
os.wait4) at most 256 MB above the same command's on good input. The bombs are made streaming, so the test
itself holds only their compressed bytes."""
from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import lz4.frame
import pytest

from services.kraft.wire import write_varint
import zstandard

from services.kraft import compression
from services.kraft.batch import ATTR_COMPRESSION, encode_record
from services.kraft.crc import crc32c
from services.simulator import SimConfig, simulate_to_archive
from schemas.archive.container import MAX_BLOCK_BYTES, read_events, write_events
from tests.archive_files import reseal, seal
from tests.ctrlaudit.test_bad_inputs import digest
from tests.ctrlaudit.test_import import metadata_dir
from tests.services.kraft.helpers import metadata_value

ROOT = Path(__file__).resolve().parents[2]
GIB = 1 << 30
MIB = 1 << 20
HEADROOM_KB = 256 * 1000  # 256 MB above the good input's peak


def zeros(total: int, chunk: int = MIB) -> Iterator[bytes]:
    block = bytes(chunk)
    for _ in range(total // chunk):
        yield block


def deflate_raw(total: int) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return b"".join(c.compress(z) for z in zeros(total)) + c.flush()


def gzip_bomb(total: int) -> bytes:
    crc = 0
    for z in zeros(total):
        crc = zlib.crc32(z, crc)
    return (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + deflate_raw(total)
            + struct.pack("<II", crc, total & 0xFFFFFFFF))


def zstd_bomb(total: int) -> bytes:
    c = zstandard.ZstdCompressor(level=3).compressobj()  # streaming: no content size in the frame
    return b"".join(c.compress(z) for z in zeros(total)) + c.flush()


def lz4_bomb(total: int) -> bytes:
    c = lz4.frame.LZ4FrameCompressor()
    return c.begin() + b"".join(c.compress(z) for z in zeros(total)) + c.flush()


def snappy_raw_bomb(total: int) -> bytes:
    return compression._snappy_raw_compress(bytes(total))


def snappy_xerial_bomb(total: int) -> bytes:
    out = bytearray(compression.XERIAL_MAGIC + struct.pack(">ii", 1, 1))
    block = compression._snappy_raw_compress(bytes(32 * 1024))
    for _ in range(total // (32 * 1024)):
        out += struct.pack(">i", len(block)) + block
    return bytes(out)


# codec id, the bomb, what it inflates to
KRAFT_BOMBS: dict[str, tuple[int, Callable[[int], bytes], int]] = {
    "gzip": (1, gzip_bomb, GIB),
    "snappy-raw": (2, snappy_raw_bomb, 64 * MIB),
    "snappy-xerial": (2, snappy_xerial_bomb, 64 * MIB),
    "lz4": (3, lz4_bomb, GIB),
    "zstd": (4, zstd_bomb, GIB),
}


def raw_batch(body: bytes, codec: int, base_offset: int, count: int = 1, timestamp: int = 1_700_000_001_000) -> bytes:
    """A v2 batch around an already compressed records region (build_batch would compress it again)."""
    after_crc = struct.pack(">hiqqqhii", codec & ATTR_COMPRESSION, count - 1, timestamp, timestamp, -1, -1, -1,
                            count) + body
    return struct.pack(">qiibI", base_offset, 4 + 1 + 4 + len(after_crc), 1, 2, crc32c(after_crc)) + after_crc


def measured(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str, int]:
    """(exit code, stdout, stderr, peak RSS in kB) of the CLI in a child process."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen([sys.executable, "-m", "ctrlaudit", *args], stdout=out, stderr=err, cwd=ROOT,
                             env={**os.environ, **(env or {})})
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return p.returncode, out.read().decode(), err.read().decode(), usage.ru_maxrss


def refused(result: tuple[int, str, str, int], code: int, *names: str) -> None:
    rc, out, err, _ = result
    assert rc == code, err
    assert "Traceback" not in out + err
    assert len(err.splitlines()) == 1 and err.startswith("ctrlaudit: error: "), err
    assert all(n in err for n in names), (names, err)


@pytest.fixture(scope="module")
def kraft_good(tmp_path_factory) -> Path:
    return metadata_dir(tmp_path_factory.mktemp("good"))


@pytest.mark.parametrize("native", ["1", "0"], ids=["native", "python"])
@pytest.mark.parametrize("bomb", list(KRAFT_BOMBS))
@pytest.mark.slow
def test_a_kraft_batch_that_is_a_bomb(tmp_path: Path, kraft_good: Path, bomb: str, native: str) -> None:
    codec, make, size = KRAFT_BOMBS[bomb]
    d = metadata_dir(tmp_path)
    seg = d / "00000000000000000000.log"
    seg.write_bytes(seg.read_bytes() + raw_batch(make(size), codec, base_offset=7))
    before = digest(tmp_path)
    env = {"CTRLAUDIT_NATIVE": native}
    good = measured("import", "kraft", str(kraft_good), "--out", str(tmp_path / "good-archive"), env=env)
    assert good[0] == 0, good[2]
    shutil.rmtree(tmp_path / "good-archive")
    done = measured("import", "kraft", str(d), "--out", str(tmp_path / "archive"), env=env)
    refused(done, 2, "00000000000000000000.log", "batch at offset 7",
            f"inflate to more than {compression.MAX_RECORDS_BYTES} bytes")
    assert done[3] - good[3] < HEADROOM_KB, f"peak RSS {done[3]} kB, {good[3]} kB on good input"
    assert digest(tmp_path) == before  # no file written (the writer's empty directory aside)


@pytest.mark.parametrize("native", ["1", "0"], ids=["native", "python"])
@pytest.mark.slow
def test_a_batch_of_the_most_records_the_limit_lets_through(tmp_path: Path, kraft_good: Path, native: str) -> None:
    """Within the limit a bomb can still be records: 8 MiB of NoOpRecords (the smallest there is, ~650k)
    compressed into one batch is read, and costs less than 256 MB."""
    value = metadata_value("NoOpRecord", 0, {})
    one = len(encode_record(0, None, value))
    count = compression.MAX_RECORDS_BYTES // (one + 2)  # offset deltas past 63 and 8191 take more bytes
    body = b"".join(encode_record(i, None, value) for i in range(count))
    assert compression.MAX_RECORDS_BYTES - 3 * count < len(body) <= compression.MAX_RECORDS_BYTES
    d = metadata_dir(tmp_path)
    seg = d / "00000000000000000000.log"
    seg.write_bytes(seg.read_bytes() + raw_batch(compression.compress(1, body), 1, base_offset=7, count=count))
    env = {"CTRLAUDIT_NATIVE": native}
    good = measured("import", "kraft", str(kraft_good), "--out", str(tmp_path / "good-archive"), env=env)
    done = measured("import", "kraft", str(d), "--out", str(tmp_path / "archive"), env=env)
    assert good[0] == 0 and done[0] == 0, done[2]
    assert f"{7 + count:,} records from 1 file(s) -> 7 events" in done[1], done[1]
    assert done[3] - good[3] < HEADROOM_KB, f"peak RSS {done[3]} kB, {good[3]} kB on good input"


# --- the archive ----------------------------------------------------------------------------------

def bomb_archives(root: Path) -> dict[str, Path]:
    """A good deflate archive, and the same with its first block's bytes replaced by a deflate bomb (1 GiB
    of zeros) and its manifest made to match (a hostile copy alters both); "bomb-block" the bomb's bytes."""
    simulate_to_archive(root / "sim", SimConfig(seed=7, events=3000, topics=2, partitions=3), fsync=False)
    (src,) = sorted((root / "sim").rglob("*.avro"))
    events = list(read_events(src))
    out = {}
    for name in ("good", "bomb"):
        target = root / name / src.parent.name / src.name
        target.parent.mkdir(parents=True)
        write_events(target, events, codec="deflate")
        seal(target)
        out[name] = root / name
    bombed = out["bomb"] / src.parent.name / src.name
    data = bombed.read_bytes()
    sync = data[-16:]  # every block ends with the file's sync marker, as the header does
    header_end = data.index(sync) + 16
    bomb = deflate_raw(GIB)
    first_end = data.index(sync, header_end) + 16
    bombed.write_bytes(data[:header_end] + _long(1) + _long(len(bomb)) + bomb + sync + data[first_end:])
    reseal(bombed)
    out["bomb-block"] = root / "bomb-block"
    out["bomb-block"].write_bytes(bomb)
    return out


@pytest.fixture(scope="module")
def archives(tmp_path_factory) -> dict[str, Path]:
    return bomb_archives(tmp_path_factory.mktemp("archives"))


def _long(n: int) -> bytes:
    """An Avro long: zigzag then LEB128, as Kafka's varints."""
    return write_varint(n)


@pytest.mark.parametrize("native", ["1", "0"], ids=["native", "python"])
@pytest.mark.parametrize("command", ["verify", "load"])
@pytest.mark.slow
def test_an_archive_block_that_is_a_bomb(tmp_path: Path, archives: dict[str, Path], command: str, native: str) -> None:
    env = {"CTRLAUDIT_NATIVE": native}
    extra = ("--store", str(tmp_path / "s.duckdb")) if command == "load" else ()
    good = measured(command, str(archives["good"]), *extra, env=env)
    assert good[0] == 0, good[2]
    (tmp_path / "s.duckdb").unlink(missing_ok=True)
    before = digest(archives["bomb"])
    done = measured(command, str(archives["bomb"]), *extra, env=env)
    (name,) = [p.name for p in archives["bomb"].rglob("*.avro")]
    says = (name, "unreadable", "the deflate block at byte", f"inflates to more than {MAX_BLOCK_BYTES} bytes")
    if command == "load":
        refused(done, 1, *says)
    else:  # verify's verdict is its output: the broken file's line, then BROKEN
        rc, out, err, _ = done
        assert rc == 1 and err == "" and "Traceback" not in out, out + err
        assert [line for line in out.splitlines() if all(n in line for n in says)], out
        assert out.rstrip().endswith("BROKEN: unreadable"), out
    assert done[3] - good[3] < HEADROOM_KB, f"peak RSS {done[3]} kB, {good[3]} kB on good input"
    assert digest(archives["bomb"]) == before
    if command == "load":
        assert measured("state", "--store", str(tmp_path / "s.duckdb"))[0] == 2  # nothing was loaded


@pytest.mark.slow
def test_the_archive_bomb_is_one(archives: dict[str, Path]) -> None:
    """The block the archive test plants inflates to 1 GiB (counted a chunk at a time, not kept)."""
    d = zlib.decompressobj(-15)
    rest, total = archives["bomb-block"].read_bytes(), 0
    while rest and not d.eof:
        total += len(d.decompress(rest, 64 * MIB))
        rest = d.unconsumed_tail
    assert total == GIB and d.eof


# --- broker logs ------------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_rotated_broker_log_that_is_a_bomb(tmp_path: Path) -> None:
    """A rotated state-change.log's .gz that inflates to 1 GiB with no line end: read a line at a time, the
    line stops at its limit."""
    from services.brokerlogs.lines import MAX_LINE_CHARS
    from tests.ctrlaudit.test_import_logs import brokers

    good = brokers(tmp_path / "good")
    ok = measured("import", "logs", *map(str, good), "--out", str(tmp_path / "good-archive"))
    assert ok[0] == 0, ok[2]
    nodes = brokers(tmp_path / "bad")
    bomb = nodes[0] / "logs" / "state-change.log.2026-11-20-02.gz"
    bomb.write_bytes(gzip_bomb(GIB))
    before = digest(tmp_path / "bad")
    done = measured("import", "logs", *map(str, nodes), "--out", str(tmp_path / "archive"))
    refused(done, 2, f"{bomb}:1:", f"a line of more than {MAX_LINE_CHARS} characters")
    assert done[3] - ok[3] < HEADROOM_KB, f"peak RSS {done[3]} kB, {ok[3]} kB on good input"
    assert digest(tmp_path / "bad") == before and digest(tmp_path / "archive") == {}
