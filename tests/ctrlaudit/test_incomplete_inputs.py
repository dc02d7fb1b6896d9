"""Inputs that are not whole are never taken for whole, on the real CLI: a KRaft snapshot without its
SnapshotFooter or SnapshotHeader is not used as an image (another snapshot that covers the stretch is, or the
import is refused naming the file); a binary file given as a broker log is refused naming the first offending
byte or line; a `simulate` interrupted by Ctrl-C leaves nothing that verifies or loads as a whole history.
Each refusal: its exit code, one line on stderr, no traceback, nothing written and the inputs' bytes unchanged."""
from __future__ import annotations

from pathlib import Path

import pytest

from services.kraft import LogReader
from tests.ctrlaudit.test_bad_inputs import ctrlaudit, digest
from tests.services.kraft.helpers import metadata_value
from tests.ctrlaudit.test_exit_codes import one_line
from tests.services.normalize.logs import T1, LogBuilder, change
from tests.services.kraft.test_offline import snapshot


one_line_refusal = one_line


# --- KRaft snapshots --------------------------------------------------------------------------------

def _snapshot_records(leader: int) -> list[bytes]:
    return [metadata_value("TopicRecord", 0, {"name": "orders", "topicId": T1}),
            metadata_value("PartitionRecord", 1, {
                "partitionId": 0, "topicId": T1, "replicas": [1, 2, 3], "isr": [1, 2, 3], "removingReplicas": [],
                "addingReplicas": [], "leader": leader, "leaderEpoch": 4, "partitionEpoch": 9,
                "directories": ["AAAAAAAAAAAAAAAAAAAAAA"] * 3})]


def _metadata_dir(tmp_path: Path) -> Path:
    """Segments from offset 100 on (older ones deleted by retention) and the whole snapshot at 100."""
    d = tmp_path / "copy" / "__cluster_metadata-0"
    d.mkdir(parents=True)
    (d.parent / "meta.properties").write_text("version=1\ncluster.id=q1w2e3r4t5y6u7i8o9p0aA\nnode.id=1\n")
    snapshot(d, 100, _snapshot_records(leader=1))
    b = LogBuilder()
    b.offset = 100
    change(b, T1, 0, isr=[1, 2])
    b.write(d / f"{100:020d}.log")
    return d


def _cut(path: Path, end: bool) -> None:
    """Drop the snapshot's last batch (its footer: cut at a batch boundary) or its first (its header)."""
    batches = [b for b, _ in LogReader(path).batches()]
    data = path.read_bytes()
    path.write_bytes(data[:batches[-1].position] if end else data[batches[1].position:])


@pytest.mark.parametrize("end, says", [(True, "without its SnapshotFooter"),
                                       (False, "does not begin with a SnapshotHeader")])
def test_a_cut_snapshot_is_never_an_image(tmp_path, end, says):
    d = _metadata_dir(tmp_path)
    snap = d / f"{100:020d}-{1:010d}.checkpoint"
    _cut(snap, end)
    before = digest(d)
    done = ctrlaudit("import", "kraft", str(d), "--out", str(tmp_path / "archive"))
    one_line_refusal(done, 2, snap.name, says, "not a complete image")
    assert not (tmp_path / "archive").exists() and digest(d) == before
    # skipping corrupt batches does not make a cut snapshot whole
    done = ctrlaudit("import", "kraft", str(d), "--out", str(tmp_path / "archive"), "--on-error", "skip")
    one_line_refusal(done, 2, snap.name, says)
    # given alone, by name
    one_line_refusal(ctrlaudit("import", "kraft", str(snap), "--out", str(tmp_path / "archive")), 2, snap.name)
    assert not (tmp_path / "archive").exists()


def test_a_whole_snapshot_that_covers_the_stretch_is_used_instead(tmp_path):
    d = _metadata_dir(tmp_path)
    cut = d / f"{100:020d}-{1:010d}.checkpoint"
    _cut(cut, end=True)
    snapshot(d, 101, _snapshot_records(leader=3))  # newer, whole, and it reaches the first segment
    done = ctrlaudit("import", "kraft", str(d), "--out", str(tmp_path / "archive"))
    assert done.returncode == 0, done.stderr
    assert f"not used as an image: {cut}: the snapshot ends at byte" in done.stdout
    assert ctrlaudit("load", str(tmp_path / "archive"), "--store", str(tmp_path / "s.duckdb")).returncode == 0
    state = ctrlaudit("state", "--store", str(tmp_path / "s.duckdb"))
    assert "\tPartition: 0\tLeader: 3\t" in state.stdout, state.stdout


def test_an_older_snapshot_that_does_not_reach_the_segments_is_no_fallback(tmp_path):
    d = _metadata_dir(tmp_path)
    _cut(d / f"{100:020d}-{1:010d}.checkpoint", end=True)
    snapshot(d, 50, _snapshot_records(leader=2))  # whole, but offsets 50..99 are in no file
    done = ctrlaudit("import", "kraft", str(d), "--out", str(tmp_path / "archive"))
    one_line_refusal(done, 2, f"{100:020d}-{1:010d}.checkpoint", "before offset 100")
    assert not (tmp_path / "archive").exists()


# --- broker logs that are not text ------------------------------------------------------------------

def _good_logs(tmp_path: Path) -> list[Path]:
    from tests.ctrlaudit.test_import_logs import brokers

    return brokers(tmp_path)


def _binary_cases(log: Path) -> list[tuple[str, bytes, str]]:
    """(what, the bytes given as node1's state-change.log, what the one line says)."""
    import gzip

    good = log.read_bytes()
    first = len(good.splitlines(keepends=True)[0])
    return [
        ("gzip not named .gz", gzip.compress(good, mtime=0), "byte 3 (line 1): not a text log: a NUL byte"),
        ("NUL bytes after good lines", good + b"\0" * 64, f"byte {len(good)} (line 3): not a text log: a NUL byte"),
        ("another encoding", good[:first] + "größe überall: äöü ÄÖÜ ß".encode("latin-1") + b"\n" + good[first:],
         f"byte {first + 2} (line 2): not a text log: more than 8 bytes that are not UTF-8"),
        ("another layout", b"2026-11-20 03:11:00 INFO Changed partition orders-0\n" * 3,
         "line 1: not read: no line in the log4j layout Kafka ships"),
        ("random bytes", bytes(range(1, 256)) * 4, "not a text log"),
    ]


@pytest.mark.slow
def test_a_broker_log_that_is_not_text_is_refused_naming_the_place(tmp_path):
    nodes = _good_logs(tmp_path)
    log = nodes[0] / "logs" / "state-change.log"
    for what, data, says in _binary_cases(log):
        log.write_bytes(data)
        before = digest(tmp_path / "node1", tmp_path / "node2")
        done = ctrlaudit("import", "logs", *map(str, nodes), "--out", str(tmp_path / "a"))
        one_line_refusal(done, 2, str(log), says)
        assert not (tmp_path / "a").exists(), what
        assert digest(tmp_path / "node1", tmp_path / "node2") == before, what


def test_a_few_bytes_not_utf8_in_a_broker_log_are_read(tmp_path):
    nodes = _good_logs(tmp_path)
    log = nodes[0] / "logs" / "controller.log"
    log.write_bytes(log.read_bytes() + b"[2026-11-20 03:15:00,000] INFO caf\xe9 (kafka.controller.KafkaController)\n")
    done = ctrlaudit("import", "logs", *map(str, nodes), "--out", str(tmp_path / "a"))
    assert done.returncode == 0, done.stderr


# --- an interrupted simulate -----------------------------------------------------------------------

@pytest.mark.parametrize("out_exists", [False, True])
@pytest.mark.slow
def test_ctrl_c_during_simulate_leaves_nothing_that_reads_as_whole(tmp_path, out_exists):
    from tests.ctrlaudit.test_bad_inputs import _interrupt_after

    out = tmp_path / "archive"
    if out_exists:
        (out / "sim-0").mkdir(parents=True)
    done = _interrupt_after(["simulate", "--out", str(out), "--events", "3000000"], 4.0)
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "ctrlaudit: error: interrupted" and "Traceback" not in done.stderr
    # nothing was put in place, and nothing was left beside it
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == (
        [Path("archive"), Path("archive/sim-0")] if out_exists else [])
    if out_exists:
        for command in (["verify", str(out)], ["load", str(out), "--store", str(tmp_path / "s.duckdb")]):
            one_line_refusal(ctrlaudit(*command), 2, str(out))
    # and the same simulate, run again, writes the whole history
    again = ctrlaudit("simulate", "--out", str(out), "--events", "3000")
    assert again.returncode == 0, again.stderr
    verified = ctrlaudit("verify", str(out))
    assert verified.returncode == 0 and "3,000 events" in verified.stdout, verified.stdout


def test_a_snapshot_with_a_corrupt_batch_skipped_is_no_image(tmp_path):
    d = _metadata_dir(tmp_path)
    snap = d / f"{100:020d}-{1:010d}.checkpoint"
    batches = [b for b, _ in LogReader(snap).batches()]
    data = bytearray(snap.read_bytes())
    data[batches[1].position + 70] ^= 0x01  # a record batch between the header and the footer
    snap.write_bytes(bytes(data))
    done = ctrlaudit("import", "kraft", str(d), "--out", str(tmp_path / "archive"), "--on-error", "skip")
    one_line_refusal(done, 2, snap.name, "not a complete image")
    assert not any((tmp_path / "archive").rglob("*.avro"))


def test_a_fifo_named_like_a_snapshot_is_refused_not_waited_on(tmp_path):
    import os

    d = _metadata_dir(tmp_path)
    snap = d / f"{100:020d}-{1:010d}.checkpoint"
    snap.unlink()
    os.mkfifo(snap)
    done = ctrlaudit("import", "kraft", str(d), "--out", str(tmp_path / "archive"), timeout=60)
    one_line_refusal(done, 2, snap.name, "not a regular file")
