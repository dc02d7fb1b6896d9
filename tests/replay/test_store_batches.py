"""Store.load in bounded batches: the same store as one batch, one transaction, forks refused
wherever they are, re-loads idempotent, and batches stored before the next one is decoded."""
from __future__ import annotations

from dataclasses import replace

import pyarrow as pa
import pytest

from tests.archive_files import write_archive_file as write_events
from schemas.events import TopicChange
from replay import store as store_module
from replay.errors import StoreError
from schemas.archive.verified import ArchiveProblem
from replay.store import Store

N, SEED, FILES = 2000, 23, 10  # the history and archive fixtures (conftest.py): 200 events a file


def _contents(store):
    """Every table a load writes, except the load times, as sorted reprs."""
    out = {}
    for t in ("events", "partition_intervals", "topic_intervals", "broker_intervals", "controller_intervals",
              "config_intervals", "feature_intervals"):
        out[t] = sorted(map(repr, store.con.execute(f"SELECT * FROM {t}").fetchall()))
    out["loaded_files"] = sorted(store.con.execute(
        "SELECT path, size, events, first_seq, last_seq FROM loaded_files").fetchall())
    return out


@pytest.fixture(scope="module")
def one_batch(tmp_path_factory, archive):
    with Store(tmp_path_factory.mktemp("one") / "s.duckdb") as store:
        report = store.load([archive], workers=1, batch_bytes=1 << 40)
        assert (report.events_read, report.events_added) == (N, N)
        yield _contents(store)


def test_the_history_deletes_topics(history):
    # Otherwise the interval comparisons below would not cover deletions across batches.
    deletes = [e.seq for e in history if isinstance(e.payload, TopicChange) and e.payload.kind.name == "DELETED"]
    assert deletes and min(deletes) < N - N // FILES  # a deletion before the last file


@pytest.mark.parametrize("batch_bytes", [1, 3 * 1024])
def test_small_batches_give_the_same_store_as_one(tmp_path, archive, one_batch, batch_bytes):
    files = sorted(archive.glob("*.avro"))
    sizes = [f.stat().st_size for f in files]
    assert sum(sizes) > 2 * batch_bytes and min(sizes) > batch_bytes // 3  # really several batches
    with Store(tmp_path / "s.duckdb") as store:
        report = store.load([archive], workers=1, batch_bytes=batch_bytes)
        assert (report.events_read, report.events_added) == (N, N)
        assert _contents(store) == one_batch


def test_files_given_out_of_order_in_one_batch(tmp_path, archive, one_batch):
    files = list(reversed(sorted(archive.glob("*.avro"))))
    with Store(tmp_path / "s.duckdb") as store:
        store.load(files, workers=1, batch_bytes=1 << 40)
        assert _contents(store) == one_batch


def test_reload_adds_nothing(tmp_path, archive, one_batch):
    with Store(tmp_path / "s.duckdb") as store:
        store.load([archive], workers=1, batch_bytes=1)
        first = _contents(store)
        for batch_bytes in (1, 1 << 40):
            report = store.load([archive / "events-03.avro", archive], workers=1, batch_bytes=batch_bytes)
            # a file named twice is read once: the same events given twice count once
            assert (report.events_read, report.events_added) == (N, 0)
        again = _contents(store)
        # loaded_files records every load of a file: compare it as a set of distinct rows.
        assert {k: (set(v) if k == "loaded_files" else v) for k, v in again.items()} == \
               {k: (set(v) if k == "loaded_files" else v) for k, v in first.items()}
        assert {k: v for k, v in first.items() if k != "loaded_files"} == \
               {k: v for k, v in one_batch.items() if k != "loaded_files"}


def test_overlapping_file_adds_only_the_new_events(tmp_path, archive, history, one_batch):
    """A file straddling stored and new seqs (the range check must find the stored part)."""
    write_events(tmp_path / "straddle.avro", history[900:1500])
    with Store(tmp_path / "s.duckdb") as store:
        store.load([archive / f"events-{i:02d}.avro" for i in range(5)], workers=1)  # seq 0..999
        report = store.load([tmp_path / "straddle.avro"], workers=1)
        assert (report.events_read, report.events_added) == (600, 500)
        report = store.load([archive], workers=1, batch_bytes=1)
        assert report.events_added == N - 1500
        got = _contents(store)
        assert {k: v for k, v in got.items() if k != "loaded_files"} == \
               {k: v for k, v in one_batch.items() if k != "loaded_files"}


def _fork_at(history, seq, tmp_path, name="fork.avro"):
    # Nine events around `seq`, the one at `seq` with another hash.
    forked = [replace(e, hash="f" * 64, capture_time_ms=e.capture_time_ms + 1) if e.seq == seq else e
              for e in history[seq - 4:seq + 5]]
    write_events(tmp_path / name, forked)
    return tmp_path / name


@pytest.mark.parametrize("batch_bytes", [1, 1 << 40])
def test_fork_in_a_later_file_rolls_back_everything(tmp_path, archive, history, batch_bytes):
    """The fork is against events this very load inserted (file 02); with batch_bytes=1 the first
    ten files are already inserted when it is found, and the whole load must still vanish."""
    fork = _fork_at(history, 450, tmp_path, "zz-fork.avro")
    with Store(tmp_path / "s.duckdb") as store:
        with pytest.raises((StoreError, ArchiveProblem), match="chain fork.*seq 450"):
            store.load([archive, fork], workers=1, batch_bytes=batch_bytes)
        for t in ("events", "partition_intervals", "broker_intervals", "loaded_files"):
            assert store.con.execute(f"SELECT count(*) FROM {t}").fetchall() == [(0,)], t
        # and the store still loads afterwards (no temp table or transaction left behind)
        assert store.load([archive], workers=1, batch_bytes=batch_bytes).events_added == N


def test_fork_against_a_previous_load_rolls_back_the_new_files(tmp_path, archive, history):
    fork = _fork_at(history, 1210, tmp_path)
    with Store(tmp_path / "s.duckdb") as store:
        store.load([archive / f"events-{i:02d}.avro" for i in range(7)], workers=1)  # seq 0..1399
        before = _contents(store)
        with pytest.raises(StoreError, match="chain fork.*seq 1210"):
            store.load([archive / "events-07.avro", archive / "events-08.avro", fork], workers=1, batch_bytes=1)
        assert _contents(store) == before


def test_identical_duplicate_rows_in_one_batch_are_one_event(tmp_path, archive, one_batch):
    with Store(tmp_path / "s.duckdb") as store:
        report = store.load([archive / "events-04.avro", archive], workers=1, batch_bytes=1 << 40)
        assert (report.events_read, report.events_added) == (N, N)
        got = _contents(store)
        assert {k: v for k, v in got.items() if k != "loaded_files"} == \
               {k: v for k, v in one_batch.items() if k != "loaded_files"}


def test_decoded_batches_are_released_within_the_transaction(tmp_path, history, monkeypatch):
    """Arrow memory alive during a load stays at a few batches, however many come before: a batch handed
    to DuckDB through a view registered inside the transaction stayed alive until COMMIT (RSS grew with
    the history, 16 GB at 10M events); decoding everything first, or a stream DuckDB read far ahead of what
    it stores, would grow too. The 40 batches go in through one streaming INSERT. The Python decode path
    allocates from Arrow's pool, so the pool's live bytes measure what is held."""
    monkeypatch.setenv("CTRLAUDIT_NATIVE", "0")
    d = tmp_path / "archive"
    d.mkdir()
    step = N // 40
    for i in range(40):
        write_events(d / f"events-{i:02d}.avro", history[i * step:(i + 1) * step])
    real = store_module.verified_batches
    live: list[int] = []
    sizes: list[int] = []

    def watched(read, batch_bytes=0):
        for batch in real(read, batch_bytes):
            live.append(pa.total_allocated_bytes())
            sizes.append(sum(t.nbytes for _, t in batch))
            yield batch

    monkeypatch.setattr(store_module, "verified_batches", watched)
    with Store(tmp_path / "s.duckdb") as store:
        report = store.load([d], workers=1, batch_bytes=1)
        assert (report.events_read, report.events_added) == (N, N)
        assert store.con.execute("SELECT count(*), count(DISTINCT seq) FROM events").fetchall() == [(N, N)]
    assert len(live) == 40
    # Alive at a hand-over: the batch handed over, the file read ahead, and the few record batches
    # DuckDB's scan threads hold while they insert; holding every batch would reach 40x.
    assert max(live) < 10 * max(sizes), (live, sizes)
